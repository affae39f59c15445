"""The reviewers' page: each reviewer's decisions, agreement rate and median time per decision, in a fixed
number of queries. How many approvals a scope needs is a scope policy (selectors/scope_policies.py)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Q
from django.db.models.functions import Coalesce
from django.db.models.fields.json import KeyTextTransform

from curation.rules import access, clock
from curation.models import Event, EventAction

# A longer pause between two decisions is a break, not the time one decision took.
SESSION_GAP_SECONDS = 15 * 60
WINDOWS_DAYS = (7, 30)


# --- the reviewers' page ---------------------------------------------------------------------------------


@dataclass
class ReviewerWindow:
    decisions: int = 0
    by_action: dict = field(default_factory=dict)  # action label -> count
    agreed: int = 0
    disagreed: int = 0
    median_seconds: float | None = None

    @property
    def paired(self) -> int:
        return self.agreed + self.disagreed

    @property
    def agreement_rate(self) -> float | None:
        return self.agreed / self.paired if self.paired else None


@dataclass
class ReviewerStats:
    user_id: int
    name: str
    windows: dict = field(default_factory=dict)  # days -> ReviewerWindow


def _median_gaps_sql(n_actions: int, in_scope_sql: str = "") -> str:
    """Per actor, the median of the gaps between their consecutive decisions, pauses left out: window
    functions (LAG, ROW_NUMBER, COUNT) that PostgreSQL and SQLite both have; the gap in seconds per vendor.
    Parameters: the actions, the start, the end, those of `in_scope_sql` (a subquery of the Event ids the
    reader may see), the longest gap that is not a pause."""
    if connection.vendor == "postgresql":
        gap = "EXTRACT(EPOCH FROM (created_at - prev_at))"
    else:
        gap = "(julianday(created_at) - julianday(prev_at)) * 86400.0"
    actions = ", ".join(["%s"] * n_actions)
    return f"""
        WITH decisions AS (
            SELECT actor_id, created_at,
                   LAG(created_at) OVER (PARTITION BY actor_id ORDER BY created_at, id) AS prev_at
            FROM {Event._meta.db_table}
            WHERE actor_id IS NOT NULL AND action IN ({actions}) AND created_at >= %s AND created_at <= %s
                  {f"AND id IN ({in_scope_sql})" if in_scope_sql else ""}
        ), gaps AS (
            SELECT actor_id, {gap} AS seconds FROM decisions WHERE prev_at IS NOT NULL
        ), ranked AS (
            SELECT actor_id, seconds,
                   ROW_NUMBER() OVER (PARTITION BY actor_id ORDER BY seconds) AS n,
                   COUNT(*) OVER (PARTITION BY actor_id) AS total
            FROM gaps WHERE seconds <= %s
        )
        SELECT actor_id, AVG(seconds) FROM ranked
        WHERE n IN ((total + 1) / 2, (total + 2) / 2)
        GROUP BY actor_id
    """


def _median_gaps(since: datetime.datetime, until: datetime.datetime, events) -> dict[int, float]:
    actions = sorted(EventAction.reviewer_decisions())
    in_scope_sql, in_scope_params = "", ()
    if events.query.where:  # a reader limited to scopes: only the Events about entries they may see
        in_scope_sql, in_scope_params = events.values("id").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            _median_gaps_sql(len(actions), in_scope_sql),
            [*actions, since, until, *in_scope_params, SESSION_GAP_SECONDS],
        )
        return {actor_id: float(median) for actor_id, median in cursor.fetchall() if median is not None}


def reviewer_stats(user, now=None) -> list[ReviewerStats]:
    """Each reviewer who decided anything in the last 30 days, with, for the last 7 and 30 days: their
    decisions by kind; their agreement rate (of the candidates they and another reviewer both decided in a
    two-reviewer scope, the share where the second decision agreed with the first); and the median time
    per decision (the gap between their consecutive decisions, pauses over 15 minutes left out). A reader
    limited to scopes counts only the decisions on entries in them. 3 queries a window, 1 for the names and
    1 for the reader's scopes, however many reviewers or Events."""
    now = now or clock.now()
    visible = Event.objects.filter(access.scope_q(access.user_scope_prefixes(user), "entry__scope"))
    stats: dict[int, ReviewerStats] = {}
    labels = {choice.value: choice.label for choice in EventAction}

    def row(user_id) -> ReviewerStats:
        return stats.setdefault(user_id, ReviewerStats(user_id, "", {days: ReviewerWindow() for days in WINDOWS_DAYS}))

    for days in WINDOWS_DAYS:
        since = now - datetime.timedelta(days=days)
        recent = visible.filter(created_at__gte=since, created_at__lte=now, actor__isnull=False)
        for actor_id, action, n in (
            recent.filter(action__in=EventAction.reviewer_decisions())
            .values_list("actor_id", "action")
            .annotate(n=Count("id"))
            .order_by()
        ):
            window = row(actor_id).windows[days]
            window.decisions += n
            window.by_action[labels[action]] = window.by_action.get(labels[action], 0) + n
        # A second decision on a first approval: the second reviewer is the actor, the first is the old
        # value in the Event's `before` of a second approval (which clears it), or named by a disagreement
        # (which keeps it; an older Event's whole snapshot has it in `before`). Each pair counts for both.
        pairs = (
            recent.filter(action__in=[EventAction.SECOND_APPROVAL, EventAction.DISAGREEMENT])
            .annotate(
                first=Coalesce(
                    KeyTextTransform("first_approval_by", "before"), KeyTextTransform("disagreed_with", "after")
                )
            )
            .values_list("actor_id", "first")
            .annotate(
                agreed=Count("id", filter=Q(action=EventAction.SECOND_APPROVAL)),
                disagreed=Count("id", filter=Q(action=EventAction.DISAGREEMENT)),
            )
            .order_by()
        )
        for second_id, first_id, agreed, disagreed in pairs:
            for user_id in {second_id, int(first_id)} if first_id else {second_id}:
                window = row(user_id).windows[days]
                window.agreed += agreed
                window.disagreed += disagreed
        for actor_id, median in _median_gaps(since, now, visible).items():
            row(actor_id).windows[days].median_seconds = median
    names = dict(get_user_model().objects.filter(pk__in=stats).values_list("pk", "username"))
    for reviewer in stats.values():
        reviewer.name = names.get(reviewer.user_id, f"user #{reviewer.user_id}")
    return sorted(stats.values(), key=lambda r: (-r.windows[30].decisions, r.name))
