"""Reads for the review queues beside the candidates queue (conflicts) and for the dashboard.

Kept apart from selectors.py, which the candidates queue and the entry page own. Each function runs a
fixed number of queries, whatever the size of the page or of the table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Count, F, Max, Prefetch, Q, prefetch_related_objects
from django.db.models.functions import Floor
from django.utils import timezone

from curation import access
from curation.lifecycle import SIGNAL_STRENGTH
from curation.models import (
    Conflict, ConsolidationProposal, Entry, Evidence, RetrievedEntry, SkillProposal, Status, TaskRun,
)
from curation.selectors import decode_cursor, encode_keyset, visible_entries

CONFLICT_PAGE_SIZE = 20
CONFLICT_COUNT_CAP = 10000
RECENT_OUTCOMES = 5


@dataclass(frozen=True)
class ConflictFilters:
    """Each filter on an entry matches when either entry of the pair matches it."""

    scope: str = ""
    kind: str = ""
    signal: str = ""
    detected_by: str = ""
    max_confidence: float | None = None   # either entry at most this confident
    older_than_days: int | None = None    # opened at least this many days ago

    def as_q(self, now=None) -> Q:
        q = Q()
        if self.scope:
            prefix = self.scope.rstrip("/")
            under = lambda side: Q(**{f"{side}__scope": prefix}) | Q(**{f"{side}__scope__startswith": prefix + "/"})  # noqa: E731
            q &= under("entry_a") | under("entry_b")
        if self.kind:
            q &= Q(entry_a__kind=self.kind) | Q(entry_b__kind=self.kind)
        if self.signal:
            q &= Q(entry_a__signal=self.signal) | Q(entry_b__signal=self.signal)
        if self.detected_by:
            q &= Q(detected_by=self.detected_by)
        if self.max_confidence is not None:
            q &= Q(entry_a__confidence__lte=self.max_confidence) | Q(entry_b__confidence__lte=self.max_confidence)
        if self.older_than_days:
            q &= Q(created_at__lte=(now or timezone.now()) - datetime.timedelta(days=self.older_than_days))
        return q

    @property
    def active(self) -> bool:
        return bool(self.scope or self.kind or self.signal or self.detected_by or self.max_confidence is not None
                    or self.older_than_days)


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
    _evidence_summary(entries)
    return conflicts


def _evidence_summary(entries) -> None:
    """From the prefetched evidence: the strongest supporting signal, and how much evidence is against."""
    for entry in entries:
        supporting = [e.signal for e in entry.evidence.all() if e.polarity == Evidence.Polarity.SUPPORTS]
        entry.evidence_strength = max(supporting, key=SIGNAL_STRENGTH.__getitem__) if supporting else "none"
        entry.contradicting_evidence = sum(1 for e in entry.evidence.all() if e.polarity == Evidence.Polarity.CONTRADICTS)


def conflict_queue(user, filters: ConflictFilters = ConflictFilters(), *, cursor: str = "",
                   page_size: int = CONFLICT_PAGE_SIZE) -> ConflictPage:
    """One page of open conflicts, oldest first, keyset on (created_at, id): 4 queries (conflicts with
    both entries, their evidence, their recent outcomes, the capped count) whatever the page size."""
    qs = _open_conflicts(user, filters)
    if cursor:
        moment, pk = decode_cursor(cursor)
        qs = qs.filter(Q(created_at__gte=moment), Q(created_at__gt=moment) | Q(pk__gt=pk))
    rows = list(qs.select_related("entry_a", "entry_b").order_by("created_at", "id")[: page_size + 1])
    next_cursor = encode_keyset(rows[page_size - 1].created_at, rows[page_size - 1].pk) if len(rows) > page_size else ""
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


# --- the consolidation queue -----------------------------------------------------------------------


@dataclass
class ProposalPage:
    proposals: list
    next_cursor: str = ""
    count: int = 0
    count_is_capped: bool = False
    kind: str = ""
    scope: str = ""

    @property
    def count_label(self) -> str:
        return f"{self.count:,}+" if self.count_is_capped else f"{self.count:,}"


def visible_proposals(user):
    return ConsolidationProposal.objects.filter(access.scope_q(access.user_scope_prefixes(user), "scope"))


def _open_proposals(user, *, kind: str = "", scope: str = ""):
    qs = visible_proposals(user).filter(state=ConsolidationProposal.State.OPEN)
    if kind:
        qs = qs.filter(kind=kind)
    if scope:
        prefix = scope.rstrip("/")
        qs = qs.filter(Q(scope=prefix) | Q(scope__startswith=prefix + "/"))
    return qs


def proposal_count(user, *, kind: str = "", scope: str = "") -> tuple[int, bool]:
    return _capped_count(_open_proposals(user, kind=kind, scope=scope))


def _with_members(proposals: list) -> list:
    """The proposals' entries (in id order) with their evidence: two queries for the whole page."""
    prefetch_related_objects(
        proposals,
        Prefetch("entries", queryset=Entry.objects.order_by("id")),
        Prefetch("entries__evidence", queryset=Evidence.objects.order_by("observed_at", "id")),
    )
    _evidence_summary([e for p in proposals for e in p.entries.all()])
    for p in proposals:
        p.proposed_conditions_text = ", ".join(p.proposed_conditions)
    return proposals


def consolidation_queue(user, *, kind: str = "", scope: str = "", cursor: str = "",
                        page_size: int = CONFLICT_PAGE_SIZE) -> ProposalPage:
    """One page of open proposals, oldest first, keyset on (created_at, id): 4 queries whatever the page size."""
    qs = _open_proposals(user, kind=kind, scope=scope)
    if cursor:
        moment, pk = decode_cursor(cursor)
        qs = qs.filter(Q(created_at__gte=moment), Q(created_at__gt=moment) | Q(pk__gt=pk))
    rows = list(qs.order_by("created_at", "id")[: page_size + 1])
    next_cursor = encode_keyset(rows[page_size - 1].created_at, rows[page_size - 1].pk) if len(rows) > page_size else ""
    count, capped = proposal_count(user, kind=kind, scope=scope)
    return ProposalPage(_with_members(rows[:page_size]), next_cursor, count, capped, kind, scope)


def proposal_card(user, proposal_id):
    proposal = visible_proposals(user).select_related("decided_by").get(pk=proposal_id)
    return _with_members([proposal])[0]


# --- the dashboard ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueSummary:
    name: str
    url_name: str
    count: int
    capped: bool
    oldest: datetime.datetime | None

    @property
    def count_label(self) -> str:
        return f"{self.count:,}+" if self.capped else f"{self.count:,}"


@dataclass(frozen=True)
class Bar:
    low: float
    high: float
    n: int
    x: int
    y: int
    height: int


@dataclass
class Dashboard:
    now: datetime.datetime
    queues: list[QueueSummary]
    by_state: list[tuple[str, int]]
    histogram: list[Bar]
    histogram_max: int
    due_rechecks: list
    due_count: int
    recheck_queued: int
    open_conflicts: list
    flagged: list
    flagged_count: int
    task_runs: list


DASHBOARD_LIST = 5
HISTOGRAM_BINS = 10
HISTOGRAM_HEIGHT = 120
HISTOGRAM_BAR = 36


def _capped_count(qs, cap: int = CONFLICT_COUNT_CAP) -> tuple[int, bool]:
    n = qs.order_by().values("pk")[: cap + 1].count()
    return min(n, cap), n > cap


def histogram_bars(counts: dict[int, int], *, bins: int = HISTOGRAM_BINS, height: int = HISTOGRAM_HEIGHT,
                   bar: int = HISTOGRAM_BAR) -> tuple[list[Bar], int]:
    """Bars of an SVG histogram from {bin index: count}; bin i holds confidence in [i/bins, (i+1)/bins)."""
    top = max(counts.values(), default=0)
    bars = []
    for i in range(bins):
        n = counts.get(i, 0)
        h = round(height * n / top) if top else 0
        bars.append(Bar(i / bins, (i + 1) / bins, n, i * bar, height - h, h))
    return bars, top


def _nominated_skills(user):
    return SkillProposal.objects.filter(access.scope_q(access.user_scope_prefixes(user), "scope"),
                                        status=SkillProposal.Status.NOMINATED)


def dashboard(user, *, now=None) -> Dashboard:
    """The lead's view at a glance, in 18 queries whatever the size of the tables (the user's scope grants,
    then 17): queue sizes (capped
    counts) with their oldest item, entries by state, the active entries' confidence histogram, due
    rechecks, open conflicts, flagged candidates and the last run of each background task."""
    now = now or timezone.now()
    entries = visible_entries(user)
    waiting = entries.filter(queued_at__isnull=False, queued_at__lte=now)
    conflicts = _open_conflicts(user, ConflictFilters())
    queues = []
    for name, url_name, qs, stamp in (
        ("Candidates", "curation:candidates", waiting, "queued_at"),
        ("Conflicts", "curation:conflicts", conflicts, "created_at"),
        ("Consolidation", "curation:consolidation", _open_proposals(user), "created_at"),
        ("Skills", "curation:skills-queue", _nominated_skills(user), "created_at"),
    ):
        count, capped = _capped_count(qs)
        oldest = qs.order_by(stamp).values_list(stamp, flat=True).first()
        queues.append(QueueSummary(name, url_name, count, capped, oldest))

    by_state = dict(entries.order_by().values_list("status").annotate(n=Count("id")))
    state_rows = [(s, by_state.get(s, 0)) for s in Status.values]

    bins = (
        entries.filter(status=Status.ACTIVE).order_by()
        .annotate(bin=Floor(F("confidence") * HISTOGRAM_BINS))
        .values_list("bin").annotate(n=Count("id"))
    )
    counts: dict[int, int] = {}
    for b, n in bins:  # confidence 1.0 falls in the top bin
        key = min(int(b), HISTOGRAM_BINS - 1)
        counts[key] = counts.get(key, 0) + n
    bars, top = histogram_bars(counts)

    due = entries.filter(status=Status.ACTIVE, review_by__lte=now.date())
    due_list = list(due.order_by("review_by", "id")[:DASHBOARD_LIST])
    due_count, _ = _capped_count(due)
    recheck_queued, _ = _capped_count(waiting.filter(queue_reason__startswith="recheck"))

    open_list = list(conflicts.select_related("entry_a", "entry_b").order_by("created_at", "id")[:DASHBOARD_LIST])

    flagged = entries.filter(status=Status.PENDING).exclude(flags=[])
    flagged_list = list(flagged.order_by("queued_at", "id")[:DASHBOARD_LIST])
    flagged_count, _ = _capped_count(flagged)

    latest = TaskRun.objects.values("task").annotate(last=Max("id")).values("last")
    runs = list(TaskRun.objects.filter(pk__in=latest).order_by("task"))
    return Dashboard(
        now=now, queues=queues, by_state=state_rows, histogram=bars, histogram_max=top,
        due_rechecks=due_list, due_count=due_count, recheck_queued=recheck_queued, open_conflicts=open_list,
        flagged=flagged_list, flagged_count=flagged_count, task_runs=runs,
    )
