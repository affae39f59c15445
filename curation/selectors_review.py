"""Reads for the review queues beside the candidates queue (conflicts) and for the dashboard.

Kept apart from selectors.py, which the candidates queue and the entry page own. Each function runs a
fixed number of queries, whatever the size of the page or of the table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Prefetch, Q, prefetch_related_objects
from django.utils import timezone

from curation import access
from curation.lifecycle import SIGNAL_STRENGTH
from curation.models import Conflict, Evidence, RetrievedEntry
from curation.selectors import BadCursor

CONFLICT_PAGE_SIZE = 20
CONFLICT_COUNT_CAP = 10000
RECENT_OUTCOMES = 5


@dataclass(frozen=True)
class ConflictFilters:
    scope: str = ""
    kind: str = ""
    detected_by: str = ""

    def as_q(self) -> Q:
        q = Q()
        if self.scope:
            prefix = self.scope.rstrip("/")
            under = lambda side: Q(**{f"{side}__scope": prefix}) | Q(**{f"{side}__scope__startswith": prefix + "/"})  # noqa: E731
            q &= under("entry_a") | under("entry_b")
        if self.kind:
            q &= Q(entry_a__kind=self.kind) | Q(entry_b__kind=self.kind)
        if self.detected_by:
            q &= Q(detected_by=self.detected_by)
        return q

    @property
    def active(self) -> bool:
        return bool(self.scope or self.kind or self.detected_by)


@dataclass
class ConflictPage:
    conflicts: list[Conflict]
    next_cursor: str = ""
    count: int = 0
    count_is_capped: bool = False
    filters: ConflictFilters = field(default_factory=ConflictFilters)

    @property
    def count_label(self) -> str:
        return f"{self.count:,}+" if self.count_is_capped else f"{self.count:,}"


def visible_conflicts(user):
    """Conflicts whose two entries both lie in the user's scopes: one outside means the whole pair is."""
    prefixes = access.user_scope_prefixes(user)
    return Conflict.objects.filter(access.scope_q(prefixes, "entry_a__scope"), access.scope_q(prefixes, "entry_b__scope"))


def _open_conflicts(user, filters: ConflictFilters):
    return visible_conflicts(user).filter(state=Conflict.State.OPEN).filter(filters.as_q())


def conflict_count(user, filters: ConflictFilters = ConflictFilters()) -> tuple[int, bool]:
    n = _open_conflicts(user, filters).order_by().values("pk")[: CONFLICT_COUNT_CAP + 1].count()
    return min(n, CONFLICT_COUNT_CAP), n > CONFLICT_COUNT_CAP


def _encode(conflict: Conflict) -> str:
    stamp = conflict.created_at.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp}~{conflict.pk}"


def _decode(cursor: str) -> tuple[datetime.datetime, int]:
    try:
        stamp, _, pk = cursor.rpartition("~")
        moment = datetime.datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            raise ValueError
        return moment, int(pk)
    except ValueError as exc:
        raise BadCursor("This page link is broken; start again from the first page.") from exc


def _with_sides(conflicts: list[Conflict]) -> list[Conflict]:
    """Both entries' evidence and their recent task outcomes, in two queries for the whole page."""
    entries = [c.entry_a for c in conflicts] + [c.entry_b for c in conflicts]
    uses = (
        RetrievedEntry.objects.filter(retrieval__feedback__isnull=False)
        .select_related("retrieval__feedback")
        .order_by("-created_at", "-id")
    )
    prefetch_related_objects(
        entries,
        Prefetch("evidence", queryset=Evidence.objects.order_by("observed_at", "id")),
        Prefetch("retrievals", queryset=uses[:RECENT_OUTCOMES], to_attr="recent_uses"),
    )
    for conflict in conflicts:
        conflict.merge_form = merge_defaults(conflict.entry_a, conflict.entry_b)
    for entry in entries:
        supporting = [e.signal for e in entry.evidence.all() if e.polarity == Evidence.Polarity.SUPPORTS]
        entry.evidence_strength = max(supporting, key=SIGNAL_STRENGTH.__getitem__) if supporting else "none"
        entry.contradicting_evidence = sum(1 for e in entry.evidence.all() if e.polarity == Evidence.Polarity.CONTRADICTS)
    return conflicts


def conflict_queue(user, filters: ConflictFilters = ConflictFilters(), *, cursor: str = "",
                   page_size: int = CONFLICT_PAGE_SIZE) -> ConflictPage:
    """One page of open conflicts, oldest first, keyset on (created_at, id): 4 queries (conflicts with
    both entries, their evidence, their recent outcomes, the capped count) whatever the page size."""
    qs = _open_conflicts(user, filters)
    if cursor:
        moment, pk = _decode(cursor)
        qs = qs.filter(Q(created_at__gte=moment), Q(created_at__gt=moment) | Q(pk__gt=pk))
    rows = list(qs.select_related("entry_a", "entry_b").order_by("created_at", "id")[: page_size + 1])
    next_cursor = _encode(rows[page_size - 1]) if len(rows) > page_size else ""
    count, capped = conflict_count(user, filters)
    return ConflictPage(_with_sides(rows[:page_size]), next_cursor, count, capped, filters)


def conflict_card(user, conflict_id) -> Conflict:
    """One conflict (in any state) with what its card shows; Conflict.DoesNotExist outside the user's scopes."""
    conflict = visible_conflicts(user).select_related("entry_a", "entry_b", "resolved_by").get(pk=conflict_id)
    return _with_sides([conflict])[0]


def merge_defaults(a, b) -> dict:
    """What the merge form starts from: the broader scope (or the deepest common one), both texts."""
    if access.scope_covers(a.scope, b.scope):
        scope = a.scope
    elif access.scope_covers(b.scope, a.scope):
        scope = b.scope
    else:
        common = []
        for x, y in zip(a.scope.split("/"), b.scope.split("/")):
            if x != y:
                break
            common.append(x)
        scope = "/".join(common) or a.scope
    return {
        "kind": a.kind,
        "scope": scope,
        "trigger": a.trigger,
        "content": f"{a.content}\n{b.content}",
        "boundary": "\n".join(x for x in (a.boundary, b.boundary) if x),
        "conditions": ", ".join(dict.fromkeys([*a.conditions, *b.conditions])),
    }
