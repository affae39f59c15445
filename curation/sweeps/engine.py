"""The sweep engine: what every background sweep shares.

A sweep walks its rows in keyset batches of id (`id > last AND id <= batch_end`, on the (status, id) index)
and does the work of a batch with a few set-based statements in one short transaction, so no statement
holds locks for long and a run that dies between batches leaves every finished batch whole. A sweep
computes everything from the stored base values and the run's `as_of` time, so running it twice gives the
result of running it once, and a second run finds nothing left to change: no duplicate Events.

A dry run describes up to SAMPLE_LIMIT rows, counts them all, and writes nothing. The run record, the
lock and the registry of tasks live in `runs.py` and `registry.py`; each sweep is a module of its own.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q, QuerySet

from curation import clock, lifecycle
from curation.models import Entry, EventAction, TaskRun
from curation.services.entry_writes import write_entries

SAMPLE_LIMIT = 20  # rows a dry run describes; it counts them all


@dataclass
class Sweep:
    """The state of one run of one sweep."""

    task: str
    as_of: datetime.datetime
    dry_run: bool = False
    run: TaskRun | None = None
    batch_size: int = 0
    after_batch: Callable[["Sweep"], None] | None = None  # progress hook; tests use it to kill a run
    full: bool = False  # the detecting sweeps: read every active entry, not only what changed
    examined: int = 0
    changed: int = 0
    samples: list[str] = field(default_factory=list)
    rules: lifecycle.Rules = field(default_factory=lifecycle.rules)
    policies: lifecycle.Policies = field(default_factory=lifecycle.policies)

    def __post_init__(self):
        self.batch_size = self.batch_size or self.policies.batch_size

    @property
    def actor_label(self) -> str:
        return f"lifecycle:{self.task}"

    @property
    def samples_left(self) -> int:
        return max(0, SAMPLE_LIMIT - len(self.samples))

    def sample(self, line: str) -> None:
        if len(self.samples) < SAMPLE_LIMIT:
            self.samples.append(line)

    def batch_done(self, examined: int = 0, changed: int = 0) -> None:
        """Count a finished batch and record the progress on the run, so the Maintenance page shows it;
        the same write renews the run's lease."""
        self.examined += examined
        self.changed += changed
        if self.run is not None:
            TaskRun.objects.filter(pk=self.run.pk).update(rows_examined=self.examined, rows_changed=self.changed,
                                                          heartbeat_at=clock.wall())
        if self.after_batch:
            self.after_batch(self)

    def heartbeat(self) -> None:
        """Renew the run's lease between the batches of a long step (a detecting sweep's walk)."""
        if self.run is not None:
            TaskRun.objects.filter(pk=self.run.pk).update(heartbeat_at=clock.wall())


def keyset_batches(status: str, size: int):
    """(Q for the batch, rows in it) for consecutive id ranges of entries in `status`, `size` rows each.
    Each range is found on the (status, id) index; rows that change status mid-run are simply not seen again."""
    last = 0
    while True:
        in_status = Entry.objects.filter(status=status, id__gt=last).order_by("id")
        end = in_status.values_list("id", flat=True)[size - 1:size].first()
        if end is not None:
            count = size
        else:
            tail = in_status.order_by().aggregate(top=Max("id"), n=Count("id"))
            if not tail["n"]:
                return
            end, count = tail["top"], tail["n"]
        yield Q(status=status, id__gt=last, id__lte=end), count
        last = end


# The columns a sweep reads of the rows it changes: what its reasons and rules need (the write path reads
# the snapshots for the Events itself).
ROW_FIELDS = ("id", "scope", "trigger", "status", "base_confidence", "confidence", "last_verified_at", "queued_at",
              "queue_reason", "archive_reason", "archived_at", "version", "created_at", "review_by", "utility_sum",
              "utility_n")


def locked(qs: QuerySet) -> list[Entry]:
    """The batch's matching rows, locked until the batch commits (PostgreSQL; SQLite has one writer)."""
    return list(qs.select_for_update().only(*ROW_FIELDS).order_by("id"))


def write_batch(sweep: Sweep, rows: list[Entry], *, expected_status: str, action: EventAction,
                reason_of: Callable[[Entry], str], **changes) -> int:
    """The sweep's batch through the one bulk write: its Events carry the sweep's label and its as-of time
    (and, as every Event of a run, its run's request id: runs.run_sweep sets it). `changes` are
    write_entries' values / row_values / then."""
    return write_entries(rows, expected_status=expected_status, action=action, reason_of=reason_of,
                         actor_label=sweep.actor_label, at=sweep.as_of, **changes)


def state_sweep(sweep: Sweep, *, status: str, matching: Callable[[Q], QuerySet], describe: Callable[[Entry], str],
                apply: Callable[[list[Entry]], int]) -> None:
    """The shape of every state-changing sweep: per batch of entries in `status`, the matching rows are
    described (dry run) or locked and changed, with their Events, in one transaction by `apply`."""
    for batch, count in keyset_batches(status, sweep.batch_size):
        qs = matching(batch)
        if sweep.dry_run:
            for entry in qs.order_by("id")[:sweep.samples_left]:
                sweep.sample(describe(entry))
            changed = qs.count()
        else:
            with transaction.atomic():
                changed = apply(locked(qs))
        sweep.batch_done(count, changed)


class _DryRun(Exception):
    """Rolls back what a dry run of a detecting sweep wrote."""


def detecting_sweep(sweep: Sweep, detect: Callable, describe: Callable[[object], str]) -> None:
    """Run a detecting sweep: `detect(at=, batch_size=, changed_since=, heartbeat=)` answers what it examined and the
    queue items it opened (`.examined`, `.found`). Conflict and consolidation detection write what they find as they go (each pair or proposal is its
    own savepoint, so a concurrent duplicate is skipped); a dry run does the same work in one
    transaction and rolls it back, so its counts and samples say what a real run would open."""
    since = changed_since_last_run(sweep)

    def body():
        result = detect(at=sweep.as_of, batch_size=sweep.batch_size, changed_since=since, heartbeat=sweep.heartbeat)
        for item in result.found:
            sweep.sample(describe(item))
        return result.examined, len(result.found)

    if sweep.dry_run:
        try:
            with transaction.atomic():
                examined, changed = body()
                raise _DryRun
        except _DryRun:
            pass
    else:
        examined, changed = body()
    sweep.batch_done(examined, changed)


# A run sees what was committed when it started; a change stamped earlier but committed later is caught
# by the next run through this overlap: no task's transaction outlives the hard time limit, and a web
# request's is far shorter.
DETECTION_OVERLAP = datetime.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


def changed_since_last_run(sweep: Sweep) -> datetime.datetime | None:
    """Where a detecting sweep may start: the start of its last successful run (less the overlap), so an
    hourly run reads the hour's changes only. None (walk everything) before the first one succeeds, or
    when asked (`run_lifecycle conflicts --full`, which runs without the Celery time limit)."""
    if sweep.full:
        return None
    last = (TaskRun.objects.filter(task=sweep.task, state=TaskRun.State.SUCCEEDED, dry_run=False)
            .order_by("-started_at").first())  # this run is still "running"
    return last.started_at - DETECTION_OVERLAP if last else None
