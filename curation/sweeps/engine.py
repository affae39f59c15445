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

from curation.rules import clock, config, lifecycle
from curation.models import Entry, EventAction, TaskRun
from curation.services.entry_writes import ROW_COLUMNS, write_entries

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

    def batch_done(self, examined: int = 0, changed: int = 0, *, last: bool = False) -> None:
        """Count a finished batch and record the progress on the run, so the Maintenance page shows it;
        the same write renews the run's lease. After the `last` batch the run's end follows at once and
        records the same counts (runs.run_sweep), so the progress is not written twice."""
        self.examined += examined
        self.changed += changed
        if self.run is not None and not last:
            TaskRun.objects.filter(pk=self.run.pk).update(
                rows_examined=self.examined, rows_changed=self.changed, heartbeat_at=clock.wall()
            )
        if self.after_batch:
            self.after_batch(self)

    def heartbeat(self, cursor: dict | None = None) -> None:
        """Renew the run's lease between the batches of a long step (a detecting sweep's walk), and
        record where its pass stands (`cursor`), in the transaction of the work it covers."""
        if self.run is not None:
            values = {"heartbeat_at": clock.wall()}
            if cursor is not None:
                values["cursor"] = cursor
            TaskRun.objects.filter(pk=self.run.pk).update(**values)


def keyset_batches(status: str, size: int):
    """(Q for the batch, rows in it) for consecutive id ranges of entries in `status`, `size` rows each.
    Each range is found on the (status, id) index; rows that change status mid-run are simply not seen again."""
    last = 0
    while True:
        # The next `size` ids in one statement: their last id and how many there are.
        batch = (
            Entry.objects.filter(status=status, id__gt=last)
            .order_by("id")
            .values("id")[:size]
            .aggregate(end=Max("id"), count=Count("id"))
        )
        if not batch["count"]:
            return
        yield Q(status=status, id__gt=last, id__lte=batch["end"]), batch["count"]
        if batch["count"] < size:  # the tail: rows inserted above it meanwhile are the next run's
            return
        last = batch["end"]


# The columns a sweep reads of the rows it changes, as plain rows (write_entries' shape): what the write
# checks (entry_writes.ROW_COLUMNS), so it need not read the rows again, and what the sweeps' reasons and
# rules read; with the annotations of the sweep's query. The Events are built in SQL.
ROW_FIELDS = (*ROW_COLUMNS, "archived_at", "review_by", "utility_sum", "utility_n")


def rows_of(qs: QuerySet, limit: int | None = None, fields=ROW_FIELDS) -> list[dict]:
    """The first `limit` rows of `qs` in id order (all by default), each a dict of `fields` and the query's
    annotations: a batch of thousands builds no model."""
    rows = qs.order_by("id").values(*fields, *qs.query.annotation_select)
    return list(rows if limit is None else rows[:limit])


def locked(qs: QuerySet, limit: int | None = None, fields=ROW_FIELDS) -> list[dict]:
    """rows_of `qs`, locked until the batch commits (PostgreSQL; SQLite has one writer), in the statement that
    reads them. FOR NO KEY UPDATE: the lock the batch's UPDATE takes, which an Event or a piece of evidence
    inserted for the entry meanwhile (a key share) does not wait for."""
    return rows_of(qs.select_for_update(no_key=True), limit, fields)


def write_batch(
    sweep: Sweep,
    rows: list[dict],
    *,
    expected_status: str,
    action: EventAction,
    reason_of: Callable[[dict], str],
    **changes,
) -> int:
    """The sweep's batch through the one bulk write: its Events carry the sweep's label and its as-of time
    (and, as every Event of a run, its run's request id: runs.run_sweep sets it). `changes` are
    write_entries' values / row_values / then. The batch's transaction is its own (state_sweep,
    chosen_sweep) and nothing catches a ConcurrentChange in it, so the write makes no savepoint."""
    return write_entries(
        rows,
        expected_status=expected_status,
        action=action,
        reason_of=reason_of,
        actor_label=sweep.actor_label,
        at=sweep.as_of,
        savepoint=False,
        **changes,
    )


def state_sweep(
    sweep: Sweep,
    *,
    status: str,
    matching: Callable[[Q], QuerySet],
    describe: Callable[[dict], str],
    apply: Callable[[list[dict]], int],
    chosen: Q | None = None,
    fields=ROW_FIELDS,
) -> None:
    """The shape of every state-changing sweep: per batch of entries in `status`, the matching rows are
    described (dry run) or locked and changed, with their Events, in one transaction by `apply`. A sweep that
    changes few rows names them by an index range (`chosen`: what may cross a threshold); see chosen_sweep.
    `fields`: the columns its rows carry (with the query's annotations); a sweep whose reasons and rules read
    none of the others names fewer than ROW_FIELDS."""
    if chosen is not None:
        return chosen_sweep(
            sweep, status=status, matching=matching, describe=describe, apply=apply, chosen=chosen, fields=fields
        )
    for batch, count in keyset_batches(status, sweep.batch_size):
        qs = matching(batch)
        if sweep.dry_run:
            for row in rows_of(qs, sweep.samples_left, fields):
                sweep.sample(describe(row))
            changed = qs.count()
        else:
            with transaction.atomic():
                changed = apply(locked(qs, fields=fields))
        sweep.batch_done(count, changed, last=count < sweep.batch_size)


def chosen_sweep(sweep: Sweep, *, status: str, matching, describe, apply, chosen: Q, fields=ROW_FIELDS) -> None:
    """state_sweep over only the entries in `status` that `chosen` finds (an index range) and `matching`
    keeps: each batch is the next `batch_size` of them above the last id written, found, judged and locked
    in the one statement that reads them, so the rows are read once. A row another writer holds is waited
    for and judged again as it is then; one changed between the read and the write writes nothing (the
    write's ConcurrentChange, in the batch's transaction). What it examines is what the rule kept."""
    if sweep.dry_run:
        qs = matching(Q(status=status) & chosen)
        for row in rows_of(qs, sweep.samples_left, fields):
            sweep.sample(describe(row))
        found = qs.count()
        sweep.batch_done(found, found, last=True)
        return
    last = 0
    while True:
        with transaction.atomic():
            rows = locked(matching(Q(status=status, id__gt=last) & chosen), sweep.batch_size, fields)
            if not rows:  # the previous batch was the last, and full: nothing more to count
                return
            changed = apply(rows)
        done = len(rows) < sweep.batch_size
        sweep.batch_done(len(rows), changed, last=done)
        if done:
            return
        last = rows[-1]["id"]


class _DryRun(Exception):
    """Rolls back what a dry run of a detecting sweep wrote."""


@dataclass(frozen=True)
class PassPosition:
    """Where a detecting sweep's pass stands: the walk resumes above `after`, reads the entries changed
    since `since` (None: every active entry), and the pass began at `started`."""

    after: int
    since: datetime.datetime | None
    started: datetime.datetime

    def as_cursor(self, after: int | None) -> dict:
        return {
            "after": after,
            "since": self.since.isoformat() if self.since else None,
            "started": self.started.isoformat(),
        }


def detecting_sweep(sweep: Sweep, detect: Callable, describe: Callable[[object], str]) -> None:
    """Run one slice of a detecting sweep's pass: `detect(at=, batch_size=, changed_since=, heartbeat=,
    after=, progress=)` walks the active entries above `after` and answers what it examined, the queue
    items it opened (`.examined`, `.found`) and where it stopped (`.resume_after`, None at the end).
    It calls `progress(last id)` when everything up to that id is written; progress records the cursor
    on the run (in the same transaction as that work) and answers True once the slice has run for
    DETECTION_SLICE_SECONDS, so each run ends well inside the worker's time limit and the next run of
    the schedule resumes there, until the pass is complete. `run_lifecycle --full` walks everything in
    one run. A dry run does the same slice in one transaction and rolls it back (its counts and
    samples say what a real run would open) and moves no cursor."""
    position = pass_position(sweep)
    slice_seconds = None if sweep.full else config.DETECTION_SLICE_SECONDS.value
    deadline = clock.wall() + datetime.timedelta(seconds=slice_seconds) if slice_seconds is not None else None

    def progress(after: int) -> bool:
        sweep.heartbeat(cursor=None if sweep.dry_run else position.as_cursor(after))
        return deadline is not None and clock.wall() >= deadline

    def body():
        result = detect(
            at=sweep.as_of,
            batch_size=sweep.batch_size,
            changed_since=position.since,
            heartbeat=sweep.heartbeat,
            after=position.after,
            progress=progress,
        )
        for item in result.found:
            sweep.sample(describe(item))
        if not sweep.dry_run:
            sweep.heartbeat(cursor=position.as_cursor(result.resume_after))
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
# by the next pass through this overlap: no task's transaction outlives the hard time limit, and a web
# request's is far shorter.
DETECTION_OVERLAP = datetime.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


def pass_position(sweep: Sweep) -> PassPosition:
    """Where this run starts. The newest real run's cursor says it: a pass left unfinished (by a run that
    ran out of its slice, or whose worker died: the cursor is written with the work) resumes above its
    last id, reading what that pass reads; after a complete pass a new one reads the entries changed since
    that pass began (less the overlap). Before any pass, or when asked (`run_lifecycle conflicts --full`,
    which runs without the Celery time limit), a pass walks every active entry."""
    started = sweep.run.started_at if sweep.run is not None else clock.wall()
    if sweep.full:
        return PassPosition(after=0, since=None, started=started)
    runs = TaskRun.objects.filter(task=sweep.task, dry_run=False)
    if sweep.run is not None:
        runs = runs.exclude(pk=sweep.run.pk)
    last = runs.filter(cursor__isnull=False).order_by("-started_at", "-pk").first()
    if last is not None:
        cursor = last.cursor
        since = datetime.datetime.fromisoformat(cursor["since"]) if cursor.get("since") else None
        if cursor.get("after") is not None:
            return PassPosition(
                after=cursor["after"], since=since, started=datetime.datetime.fromisoformat(cursor["started"])
            )
        return PassPosition(
            after=0, since=datetime.datetime.fromisoformat(cursor["started"]) - DETECTION_OVERLAP, started=started
        )
    # A run recorded before cursors: its start is where it read from.
    legacy = runs.filter(state=TaskRun.State.SUCCEEDED).order_by("-started_at").first()
    return PassPosition(after=0, since=legacy.started_at - DETECTION_OVERLAP if legacy else None, started=started)
