"""The lead's dashboard: queue sizes and ages, entries by state, the confidence histogram, due rechecks,
open conflicts, flagged candidates and the last run of each background task."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Count, F, Max
from django.db.models.functions import Floor

from curation.rules import clock
from curation.models import SkillProposal, Status, TaskRun

from .candidates import QueueFilters, queue_base
from .confidence import with_current_confidence
from .conflicts import ConflictFilters, open_conflicts
from .consolidation import open_proposals
from .entries import visible_entries
from .forgets import open_forget_requests
from .paging import capped_count, capped_label
from .skills import visible_skills


@dataclass(frozen=True)
class QueueSummary:
    name: str
    url_name: str
    count: int
    capped: bool
    oldest: datetime.datetime | None

    @property
    def count_label(self) -> str:
        return capped_label(self.count, self.capped)


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


def histogram_bars(
    counts: dict[int, int], *, bins: int = HISTOGRAM_BINS, height: int = HISTOGRAM_HEIGHT, bar: int = HISTOGRAM_BAR
) -> tuple[list[Bar], int]:
    """Bars of an SVG histogram from {bin index: count}; bin i holds confidence in [i/bins, (i+1)/bins)."""
    top = max(counts.values(), default=0)
    bars = []
    for i in range(bins):
        n = counts.get(i, 0)
        h = round(height * n / top) if top else 0
        bars.append(Bar(i / bins, (i + 1) / bins, n, i * bar, height - h, h))
    return bars, top


def dashboard(user, *, now=None) -> Dashboard:
    """The lead's view at a glance, in 22 queries whatever the size of the tables (the user's scope grants
    and permissions, then 19): queue sizes (capped
    counts) with their oldest item, entries by state, the active entries' confidence histogram, due
    rechecks, open conflicts, flagged candidates and the last run of each background task."""
    now = now or clock.now()
    entries = visible_entries(user)
    waiting = entries.filter(queued_at__isnull=False, queued_at__lte=now)
    conflicts = open_conflicts(user, ConflictFilters())
    queues = []
    for name, url_name, qs, stamp in (
        # What the user's candidates queue shows: a reviewer's leaves out what waits for a lead.
        ("Candidates", "curation:candidates", queue_base(user, QueueFilters(), now), "queued_at"),
        ("Conflicts", "curation:conflicts", conflicts, "created_at"),
        ("Consolidation", "curation:consolidation", open_proposals(user), "created_at"),
        (
            "Skills",
            "curation:skills-queue",
            visible_skills(user).filter(status=SkillProposal.Status.NOMINATED),
            "created_at",
        ),
        ("Forget", "curation:forgets", open_forget_requests(user), "created_at"),
    ):
        count, capped = capped_count(qs)
        oldest = qs.order_by(stamp).values_list(stamp, flat=True).first()
        queues.append(QueueSummary(name, url_name, count, capped, oldest))

    by_state = dict(entries.order_by().values_list("status").annotate(n=Count("id")))
    state_rows = [(s, by_state.get(s, 0)) for s in Status.values]

    bins = (
        with_current_confidence(entries.filter(status=Status.ACTIVE), at=now)
        .order_by()
        .annotate(bin=Floor(F("current_confidence") * HISTOGRAM_BINS))
        .values_list("bin")
        .annotate(n=Count("id"))
    )
    counts: dict[int, int] = {}
    for b, n in bins:  # confidence 1.0 falls in the top bin
        key = min(int(b), HISTOGRAM_BINS - 1)
        counts[key] = counts.get(key, 0) + n
    bars, top = histogram_bars(counts)

    due = entries.filter(status=Status.ACTIVE, review_by__lte=now.date())
    due_list = list(due.order_by("review_by", "id")[:DASHBOARD_LIST])
    due_count, _ = capped_count(due)
    recheck_queued, _ = capped_count(waiting.filter(queue_reason__startswith="recheck"))

    open_list = list(conflicts.select_related("entry_a", "entry_b").order_by("created_at", "id")[:DASHBOARD_LIST])

    flagged = entries.filter(status=Status.PENDING).exclude(flags=[])
    flagged_list = list(flagged.order_by("queued_at", "id")[:DASHBOARD_LIST])
    flagged_count, _ = capped_count(flagged)

    latest = TaskRun.objects.values("task").annotate(last=Max("id")).values("last")
    runs = list(TaskRun.objects.filter(pk__in=latest).order_by("task"))
    return Dashboard(
        now=now,
        queues=queues,
        by_state=state_rows,
        histogram=bars,
        histogram_max=top,
        due_rechecks=due_list,
        due_count=due_count,
        recheck_queued=recheck_queued,
        open_conflicts=open_list,
        flagged=flagged_list,
        flagged_count=flagged_count,
        task_runs=runs,
    )
