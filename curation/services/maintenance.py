"""Background curation (DESIGN.md §4): decay, archive, revive, periodic and history-based deletion,
review-due rechecks, the capacity budget and skill nomination (services/skills.py); and the detecting
sweeps of the review queues (conflicts, consolidation proposals), which only open queue items and change
no entry.

Each sweep walks its rows in keyset batches of id (`id > last AND id <= batch_end`, on the (status, id)
index) and does the work of a batch with a few set-based statements in one short transaction, so no
statement holds locks for long and a run that dies between batches leaves every finished batch whole.
A sweep computes everything from the stored base values and the run's `as_of` time, so running it twice
gives the result of running it once, and a second run finds nothing left to change: no duplicate events.

Decay changes only the derived `confidence` and writes no Event; every state change bumps the entry's
version and writes one Event in the same transaction. `run_sweep` wraps a sweep in a TaskRun record and
a lock, so two workers that start the same sweep at once do the work once: the second exits and says so.
"""

from __future__ import annotations

import datetime
import logging
import zlib
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import (
    Case, Count, DateTimeField, Exists, F, FloatField, Func, IntegerField, Max, OuterRef, Q, QuerySet, Subquery,
    Value, When,
)
from django.db.models.functions import Coalesce, Greatest, Least, NullIf, Power
from django.utils import timezone

from curation import lifecycle
from curation.middleware import current_request_id
from curation.models import Entry, Event, Evidence, QueueReason, RetrievedEntry, Signal, Status, TaskRun
from curation.selectors import withheld_by_skill

from . import conflicts, consolidation

logger = logging.getLogger(__name__)

SAMPLE_LIMIT = 20  # rows a dry run describes; it counts them all

TASK_DESCRIPTIONS = {
    "decay": "Recompute every active entry's confidence from its base and the days since it was last verified.",
    "archive": "Archive active entries whose decayed confidence is below the archive threshold.",
    "revive": "Bring back archived entries that received supporting external or independent evidence since.",
    "unused": "Archive active entries older than the window that were retrieved at most alpha times in it.",
    "low_utility": "Archive entries retrieved at least n times whose average utility is below beta; queue a recheck.",
    "review_due": "Send active entries whose review date has passed back to the candidates queue.",
    "capacity": "Archive the weakest active entries of a scope that is over its capacity budget.",
    "conflicts": "Open a conflict for each pair of active entries that overlap and give opposite advice "
                 "(ingest compares a candidate with a few partners only; this reads them all).",
    "consolidation": "Propose merging clusters of near-duplicate active entries of a scope, and superseding "
                     "entries made outdated by a newer one; only an accepted proposal changes an entry.",
    "skill_nomination": "Nominate procedures and success patterns that pass the promotion gates (seed 001 §5.3) "
                        "for the skill promotions queue.",
}
TASK_NAMES = tuple(TASK_DESCRIPTIONS)


class ConcurrentChange(Exception):
    """A batch's rows changed between reading and writing them; the batch is rolled back."""


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
    r: lifecycle.Rules = field(default_factory=lifecycle.rules)
    p: lifecycle.Policies = field(default_factory=lifecycle.policies)

    def __post_init__(self):
        self.batch_size = self.batch_size or self.p.batch_size

    @property
    def actor_label(self) -> str:
        return f"lifecycle:{self.task}"

    @property
    def request_id(self) -> str:
        return f"taskrun-{self.run.pk}" if self.run else (current_request_id.get() or "")

    def sample(self, line: str) -> None:
        if len(self.samples) < SAMPLE_LIMIT:
            self.samples.append(line)

    def batch_done(self) -> None:
        if self.run is not None:
            TaskRun.objects.filter(pk=self.run.pk).update(rows_examined=self.examined, rows_changed=self.changed)
        if self.after_batch:
            self.after_batch(self)


# --- SQL building blocks ---------------------------------------------------------------------------------

class DaysSince(Func):
    """(as_of − a timestamp column) in days, as a float, on PostgreSQL and SQLite."""

    output_field = FloatField()

    def __init__(self, column, as_of: datetime.datetime):
        super().__init__(Value(as_of, output_field=DateTimeField()), column)

    def as_postgresql(self, compiler, conn, **extra):
        return super().as_sql(
            compiler, conn, template="(EXTRACT(EPOCH FROM (%(expressions)s))::double precision / 86400.0)",
            arg_joiner=" - ", **extra,
        )

    def as_sqlite(self, compiler, conn, **extra):
        return super().as_sql(
            compiler, conn, template="(julianday(%(expressions)s))", arg_joiner=") - julianday(", **extra
        )


def decayed_confidence_sql(as_of: datetime.datetime, r: lifecycle.Rules):
    """lifecycle.decayed() as one SQL expression:
    GREATEST(floor, LEAST(ceiling, base × factor ^ (max(0, days unverified) / period)))."""
    days = Greatest(Value(0.0), DaysSince(Coalesce("last_verified_at", "created_at"), as_of))
    return Greatest(
        Value(r.floor),
        Least(Value(r.ceiling), F("base_confidence") * Power(Value(r.decay_factor), days / Value(float(r.decay_period_days)))),
        output_field=FloatField(),
    )


def _signal_rank(column: str):
    return Case(
        *[When(**{column: signal}, then=Value(rank)) for signal, rank in lifecycle.SIGNAL_STRENGTH.items()],
        default=Value(0), output_field=IntegerField(),
    )


def strength_sql():
    """lifecycle.evidence_strength(): the strongest of the entry's signal and its supporting evidence."""
    strongest = (
        Evidence.objects.filter(entry=OuterRef("pk"), polarity=Evidence.Polarity.SUPPORTS)
        .annotate(rank=_signal_rank("signal")).order_by("-rank").values("rank")[:1]
    )
    return Greatest(_signal_rank("signal"), Coalesce(Subquery(strongest), Value(0)), output_field=IntegerField())


def merit_sql():
    """confidence × average utility (UNKNOWN_UTILITY when no outcome was reported), as in displacement_key()."""
    average = Coalesce(F("utility_sum") / NullIf(F("utility_n"), Value(0)), Value(lifecycle.UNKNOWN_UTILITY),
                       output_field=FloatField())
    return F("confidence") * average


def recent_retrievals_sql(as_of: datetime.datetime, p: lifecycle.Policies):
    cutoff = as_of - datetime.timedelta(days=p.unused_window_days)
    counted = (
        RetrievedEntry.objects.filter(entry=OuterRef("pk"), created_at__gt=cutoff, created_at__lte=as_of)
        .order_by().values("entry").annotate(n=Count("*")).values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


# --- Walking a table in keyset batches ---------------------------------------------------------------------

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


def _lifecycle_fields(entry: Entry) -> dict:
    """What a background change can touch, as an Event's before/after (the text does not change)."""
    return {
        "status": entry.status,
        "base_confidence": round(entry.base_confidence, 4),
        "confidence": round(entry.confidence, 4),
        "last_verified_at": entry.last_verified_at.isoformat() if entry.last_verified_at else None,
        "queue_reason": entry.queue_reason,
        "queued_at": entry.queued_at.isoformat() if entry.queued_at else None,
        "archive_reason": entry.archive_reason,
        "version": entry.version,
    }


_ROW_FIELDS = ("id", "scope", "trigger", "status", "base_confidence", "confidence", "last_verified_at",
               "queued_at", "queue_reason", "archive_reason", "archived_at", "version", "created_at",
               "review_by", "utility_sum", "utility_n")


def _locked(qs: QuerySet) -> list[Entry]:
    """The batch's matching rows, locked until the batch commits (PostgreSQL; SQLite has one writer)."""
    return list(qs.select_for_update().only(*_ROW_FIELDS).order_by("id"))


def _write_events(sweep: Sweep, changes: list[tuple[Entry, str, str, dict, dict]]) -> None:
    """One Event per changed entry: (entry, action, reason, before, after). Inside the batch's transaction."""
    Event.objects.bulk_create(
        Event(
            entry_id=entry.pk,
            entry_label=entry.label,
            actor=None,
            actor_label=sweep.actor_label,
            action=action,
            reason=reason,
            before=before,
            after=after,
            request_id=sweep.request_id,
            entry_version=after["version"],
            created_at=sweep.as_of,
        )
        for entry, action, reason, before, after in changes
    )


def _set_state(sweep: Sweep, rows: list[Entry], *, expected_status: str, action: str, reason_of, **updates) -> int:
    """Apply the same update to every locked row in one statement, bump versions, write one Event each."""
    if not rows:
        return 0
    ids = [e.pk for e in rows]
    # updated_at is when the row was written (the wall clock, not the sweep's as-of moment): the
    # detecting sweeps read what changed since their last run by it, also after a replay of the past.
    written = Entry.objects.filter(pk__in=ids, status=expected_status).update(
        **updates, version=F("version") + 1, updated_at=timezone.now()
    )
    if written != len(ids):
        raise ConcurrentChange(f"{sweep.task}: {len(ids) - written} of {len(ids)} rows changed under the sweep")
    fresh = {e.pk: e for e in Entry.objects.filter(pk__in=ids).only(*_ROW_FIELDS)}
    _write_events(sweep, [
        (e, action, reason_of(e), _lifecycle_fields(e), _lifecycle_fields(fresh[e.pk])) for e in rows
    ])
    return written


# --- The sweeps --------------------------------------------------------------------------------------------

def sweep_decay(sweep: Sweep) -> None:
    """confidence = decayed(base, last verified, as_of) for every active entry whose value differs."""
    expression = decayed_confidence_sql(sweep.as_of, sweep.r)
    for batch, count in keyset_batches(Status.ACTIVE, sweep.batch_size):
        stale = Entry.objects.filter(batch).alias(new=expression).exclude(confidence=F("new"))
        if sweep.dry_run:
            for e in stale.annotate(new_confidence=expression).order_by("id")[:SAMPLE_LIMIT - len(sweep.samples)]:
                sweep.sample(f"#{e.pk} confidence {e.confidence:.3f} → {e.new_confidence:.3f}")
            changed = stale.count()
        else:
            with transaction.atomic():
                changed = stale.update(confidence=expression)
        sweep.examined += count
        sweep.changed += changed
        sweep.batch_done()


def _sweep_state(sweep: Sweep, *, status: str, matching: Callable[[Q], QuerySet], describe, apply) -> None:
    """The shape of every state-changing sweep: per batch, the matching rows are described (dry run) or
    locked and changed with their Events in one transaction."""
    for batch, count in keyset_batches(status, sweep.batch_size):
        qs = matching(batch)
        if sweep.dry_run:
            for e in qs.order_by("id")[:SAMPLE_LIMIT - len(sweep.samples)]:
                sweep.sample(describe(e))
            changed = qs.count()
        else:
            with transaction.atomic():
                changed = apply(_locked(qs))
        sweep.examined += count
        sweep.changed += changed
        sweep.batch_done()


def sweep_archive(sweep: Sweep) -> None:
    expression = decayed_confidence_sql(sweep.as_of, sweep.r)
    below = sweep.r.archive_below

    def matching(batch):
        return Entry.objects.filter(batch).annotate(new_confidence=expression).filter(new_confidence__lt=below)

    _sweep_state(
        sweep, status=Status.ACTIVE, matching=matching,
        describe=lambda e: f"#{e.pk} archive: decayed to {e.new_confidence:.3f} (below {below})",
        apply=lambda rows: _set_state(
            sweep, rows, expected_status=Status.ACTIVE, action="archive",
            reason_of=lambda e: f"decayed: confidence {e.new_confidence:.3f} is below {below}",
            status=Status.ARCHIVED, confidence=expression, archived_at=sweep.as_of, archive_reason="decayed",
        ),
    )


def sweep_unused(sweep: Sweep) -> None:
    p = sweep.p
    cutoff = sweep.as_of - datetime.timedelta(days=p.unused_window_days)

    def matching(batch):
        return (
            Entry.objects.filter(batch, created_at__lte=cutoff)
            .filter(Q(last_verified_at__isnull=True) | Q(last_verified_at__lte=cutoff))
            .exclude(Exists(withheld_by_skill()))  # not retrieved because a skill replaces it: not unused
            .annotate(recent=recent_retrievals_sql(sweep.as_of, p))
            .filter(recent__lte=p.unused_max_retrievals)
        )

    def reason(e):
        return (f"unused: retrieved {e.recent}× in the {p.unused_window_days:g} days before "
                f"{sweep.as_of:%Y-%m-%d} (at most {p.unused_max_retrievals} allowed)")

    _sweep_state(
        sweep, status=Status.ACTIVE, matching=matching,
        describe=lambda e: f"#{e.pk} archive: {reason(e)}",
        apply=lambda rows: _set_state(
            sweep, rows, expected_status=Status.ACTIVE, action="archive", reason_of=reason,
            status=Status.ARCHIVED, archived_at=sweep.as_of, archive_reason="unused",
        ),
    )


def sweep_low_utility(sweep: Sweep) -> None:
    p = sweep.p

    def matching(batch):
        return Entry.objects.filter(
            batch, retrieval_count__gte=p.low_utility_min_retrievals, utility_n__gt=0,
            utility_sum__lt=Value(p.low_utility_below - lifecycle.EPSILON) * F("utility_n"),
        )

    def reason(e):
        return (f"low utility: average {e.utility_sum / e.utility_n:.2f} over {e.utility_n} outcomes "
                f"is below {p.low_utility_below}")

    _sweep_state(
        sweep, status=Status.ACTIVE, matching=matching,
        describe=lambda e: f"#{e.pk} archive and recheck: {reason(e)}",
        apply=lambda rows: _set_state(
            sweep, rows, expected_status=Status.ACTIVE, action="archive", reason_of=reason,
            status=Status.ARCHIVED, archived_at=sweep.as_of, archive_reason="low utility",
            queued_at=Coalesce(F("queued_at"), Value(sweep.as_of, output_field=DateTimeField())),
            queue_reason=QueueReason.RECHECK_LOW_UTILITY,
        ),
    )


def sweep_review_due(sweep: Sweep) -> None:
    today = sweep.as_of.date()

    def matching(batch):
        return Entry.objects.filter(batch, review_by__lt=today, queued_at__isnull=True).filter(
            Q(last_verified_at__isnull=True) | Q(last_verified_at__date__lt=F("review_by"))
        )

    def reason(e):
        return f"review date {e.review_by:%Y-%m-%d} has passed"

    _sweep_state(
        sweep, status=Status.ACTIVE, matching=matching,
        describe=lambda e: f"#{e.pk} recheck: {reason(e)}",
        apply=lambda rows: _set_state(
            sweep, rows, expected_status=Status.ACTIVE, action="queue_recheck", reason_of=reason,
            queued_at=sweep.as_of, queue_reason=QueueReason.RECHECK_REVIEW_DUE,
        ),
    )


def sweep_revive(sweep: Sweep) -> None:
    """Archived entries with fresh supporting external/independent evidence: the rule is lifecycle.revival();
    SQL finds the (few) candidates, the rule decides each, one UPDATE writes the batch."""
    fresh = Evidence.objects.filter(
        entry=OuterRef("pk"), polarity=Evidence.Polarity.SUPPORTS,
        signal__in=[Signal.INDEPENDENT, Signal.EXTERNAL],
        created_at__gt=OuterRef("archived_at"), created_at__lte=sweep.as_of,
    )

    def matching(batch):
        return Entry.objects.filter(batch, archived_at__isnull=False).filter(Exists(fresh))

    def decide(entries) -> dict[int, lifecycle.Revival]:
        evidence = defaultdict(list)
        rows = Evidence.objects.filter(entry_id__in=[e.pk for e in entries]).values_list(
            "entry_id", "signal", "polarity", "observed_at", "created_at")
        for entry_id, *item in rows:
            evidence[entry_id].append(tuple(item))
        decisions = {}
        for e in entries:
            decision = lifecycle.revival(evidence[e.pk], archived_at=e.archived_at, now=sweep.as_of, r=sweep.r)
            if decision:
                decisions[e.pk] = decision
        return decisions

    def reason(d: lifecycle.Revival) -> str:
        return f"revived by {d.signal} evidence observed {d.verified_at:%Y-%m-%d %H:%M}"

    def describe_batch(batch):
        for e in matching(batch).order_by("id")[:SAMPLE_LIMIT - len(sweep.samples)]:
            d = decide([e]).get(e.pk)
            if d:
                sweep.sample(f"#{e.pk} {reason(d)}: base {d.base_confidence:.2f}, confidence {d.confidence:.3f}")

    for batch, count in keyset_batches(Status.ARCHIVED, sweep.batch_size):
        if sweep.dry_run:
            describe_batch(batch)
            changed = len(decide(list(matching(batch).only(*_ROW_FIELDS))))
        else:
            with transaction.atomic():
                rows = _locked(matching(batch))
                decisions = decide(rows)
                changed_rows = [e for e in rows if e.pk in decisions]
                before = {e.pk: _lifecycle_fields(e) for e in changed_rows}
                for e in changed_rows:
                    d = decisions[e.pk]
                    e.status, e.base_confidence, e.confidence = Status.ACTIVE, d.base_confidence, d.confidence
                    e.last_verified_at, e.archived_at, e.archive_reason = d.verified_at, None, ""
                    e.version += 1
                    e.updated_at = timezone.now()  # when it was written, as in _set_state
                Entry.objects.bulk_update(
                    changed_rows, ["status", "base_confidence", "last_verified_at", "archived_at", "archive_reason",
                                   "version", "updated_at"])
                # The effective value from the same SQL as decay, so a decay run right after changes nothing.
                Entry.objects.filter(pk__in=[e.pk for e in changed_rows]).update(
                    confidence=decayed_confidence_sql(sweep.as_of, sweep.r))
                fresh_rows = {e.pk: e for e in Entry.objects.filter(pk__in=[e.pk for e in changed_rows]).only(*_ROW_FIELDS)}
                _write_events(sweep, [
                    (e, "revive", reason(decisions[e.pk]), before[e.pk], _lifecycle_fields(fresh_rows[e.pk]))
                    for e in changed_rows
                ])
                changed = len(changed_rows)
        sweep.examined += count
        sweep.changed += changed
        sweep.batch_done()


def _in_scope(prefix: str) -> Q:
    return Q(scope=prefix) | Q(scope__startswith=prefix + "/")


# The decisions that add an entry to the active set of its scope.
ACTIVATING_ACTIONS = ("approve", "edit_approve", "revive")


def _newcomer(active: QuerySet) -> int:
    """The entry whose arrival put the scope over budget: the one most recently approved or revived
    (by its Event), else the newest row."""
    latest = (
        Event.objects.filter(entry__in=active, action__in=ACTIVATING_ACTIONS)
        .order_by("-created_at", "-id").values_list("entry_id", flat=True).first()
    )
    return latest or active.order_by("-id").values_list("id", flat=True).first()


def sweep_capacity(sweep: Sweep) -> None:
    """For each capped scope (the scope and everything below it) over its budget, archive the weakest
    entries until it fits. Each is "displaced by" the scope's newcomer, which is never a victim itself."""
    for prefix, cap in sorted(sweep.p.scope_capacity.items()):
        first = True
        while True:
            with transaction.atomic():
                active = Entry.objects.filter(_in_scope(prefix), status=Status.ACTIVE)
                count = active.count()
                if first:
                    sweep.examined += count
                    first = False
                excess = count - int(cap)
                if excess <= 0:
                    break
                newest = _newcomer(active)
                victims = (
                    active.exclude(pk=newest).annotate(strength=strength_sql(), merit=merit_sql())
                    .order_by("strength", "merit", "id")
                )
                if sweep.dry_run:
                    for e in victims[:max(0, min(excess, SAMPLE_LIMIT - len(sweep.samples)))]:
                        sweep.sample(f"#{e.pk} archive: displaced by #{newest} ({prefix} holds {count}, cap {cap})")
                    sweep.changed += min(excess, count - 1)
                    break
                ids = list(victims.values_list("id", flat=True)[:min(excess, sweep.batch_size)])
                if not ids:  # only the newest entry is left, and the budget is 0: nothing may displace it
                    break
                rows = _locked(Entry.objects.filter(pk__in=ids))
                sweep.changed += _set_state(
                    sweep, rows, expected_status=Status.ACTIVE, action="archive",
                    reason_of=lambda e: f"capacity: {prefix} holds {count} active entries, its budget is {cap}",
                    status=Status.ARCHIVED, archived_at=sweep.as_of, archive_reason=f"displaced by #{newest}",
                )
            sweep.batch_done()
    sweep.batch_done()


class _DryRun(Exception):
    """Rolls back what a dry run of a detecting sweep wrote."""


def _detecting(sweep: Sweep, detect: Callable[[datetime.datetime | None], tuple[int, list]],
               describe: Callable[[object], str]) -> None:
    """Run a detecting sweep: `detect(changed_since)` answers (entries examined, queue items opened).
    Conflict and consolidation detection write what they find as they go (each pair or proposal is its
    own savepoint, so a concurrent duplicate is skipped); a dry run does the same work in one
    transaction and rolls it back, so its counts and samples say what a real run would open."""
    since = changed_since_last_run(sweep)

    def body():
        sweep.examined, found = detect(since)
        sweep.changed = len(found)
        for item in found:
            sweep.sample(describe(item))

    if sweep.dry_run:
        try:
            with transaction.atomic():
                body()
                raise _DryRun
        except _DryRun:
            pass
    else:
        body()
    sweep.batch_done()


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


def sweep_conflict_detection(sweep: Sweep) -> None:
    def detect(since):
        result = conflicts.sweep_conflicts(at=sweep.as_of, batch_size=sweep.batch_size, changed_since=since)
        return result.examined, result.opened

    _detecting(sweep, detect, lambda c: f"#{c.entry_a_id} and #{c.entry_b_id}: {c.reason}")


def sweep_consolidation_proposals(sweep: Sweep) -> None:
    def detect(since):
        result = consolidation.sweep_consolidation(at=sweep.as_of, batch_size=sweep.batch_size, changed_since=since)
        return result.examined, result.proposed

    _detecting(sweep, detect, lambda p: f"{p.kind} in {p.scope}: {p.reason}")


def sweep_skill_nomination(sweep: Sweep) -> None:
    from .skills import sweep_skill_nominations  # skills.py builds on this module's batches

    sweep_skill_nominations(sweep)


SWEEPS: dict[str, Callable[[Sweep], None]] = {
    "decay": sweep_decay,
    "archive": sweep_archive,
    "revive": sweep_revive,
    "unused": sweep_unused,
    "low_utility": sweep_low_utility,
    "review_due": sweep_review_due,
    "capacity": sweep_capacity,
    "conflicts": sweep_conflict_detection,
    "consolidation": sweep_consolidation_proposals,
    "skill_nomination": sweep_skill_nomination,
}
assert tuple(SWEEPS) == TASK_NAMES


# --- Runs: a record and a lock ----------------------------------------------------------------------------

def _lock_key(task: str) -> int:
    return zlib.crc32(f"memoryadmin.lifecycle.{task}".encode())


@contextmanager
def sweep_lock(task: str, run: TaskRun):
    """Yields whether this run may work. On PostgreSQL a session advisory lock (released if the worker
    dies with its connection). Elsewhere the oldest TaskRun still "running" within the hard time limit
    holds the lock: this run's row is committed first, so of two runs that start together exactly one
    sees the other as older."""
    if connection.vendor == "postgresql":
        key = _lock_key(task)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            acquired = cursor.fetchone()[0]
        try:
            yield acquired
        finally:
            if acquired:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        return
    horizon = timezone.now() - datetime.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    older = TaskRun.objects.filter(
        task=task, state=TaskRun.State.RUNNING, dry_run=False, started_at__gte=horizon, pk__lt=run.pk
    )
    yield not older.exists()


def run_sweep(
    task: str,
    *,
    as_of: datetime.datetime | None = None,
    dry_run: bool = False,
    triggered_by: str = "command",
    batch_size: int | None = None,
    after_batch: Callable[[Sweep], None] | None = None,
    full: bool = False,
) -> tuple[TaskRun, Sweep]:
    """Run one sweep as of a moment, with its TaskRun record. A dry run changes no entry and takes no lock.
    A failure is recorded on the TaskRun (finished batches stay done) and raised again."""
    if task not in SWEEPS:
        raise ValueError(f"Unknown lifecycle task {task!r}; choose one of {', '.join(TASK_NAMES)}.")
    as_of = as_of or timezone.now()
    if timezone.is_naive(as_of):
        raise ValueError("as_of must carry a time zone")
    _close_abandoned_runs(task)
    run = TaskRun.objects.create(
        task=task, as_of=as_of, dry_run=dry_run, triggered_by=triggered_by[:150], started_at=timezone.now()
    )
    sweep = Sweep(task=task, as_of=as_of, dry_run=dry_run, run=run, batch_size=batch_size or 0,
                  after_batch=after_batch, full=full)

    def finish(state: str, error: str = "") -> None:
        run.state, run.error, run.finished_at = state, error, timezone.now()
        run.rows_examined, run.rows_changed = sweep.examined, sweep.changed
        try:
            run.save(update_fields=["state", "error", "finished_at", "rows_examined", "rows_changed"])
        except Exception:  # the database itself went away: the run stays "running" and its lock expires
            if state != TaskRun.State.FAILED:
                raise
            logger.exception("could not record the failure of TaskRun %s", run.pk)

    if dry_run:
        lock = _no_lock()
    else:
        lock = sweep_lock(task, run)
    with lock as acquired:
        if not acquired:
            finish(TaskRun.State.SKIPPED, f"another {task} run held the lock; this one did nothing")
            logger.info("lifecycle %s skipped: another run holds the lock", task)
            return run, sweep
        try:
            SWEEPS[task](sweep)
        except BaseException as exc:  # SoftTimeLimitExceeded is not an Exception subclass in every version
            finish(TaskRun.State.FAILED, f"{type(exc).__name__}: {exc}"[:2000])
            raise
        finish(TaskRun.State.SUCCEEDED)
    logger.info("lifecycle %s as of %s: examined %s, changed %s", task, as_of.isoformat(), sweep.examined, sweep.changed)
    return run, sweep


def _close_abandoned_runs(task: str) -> None:
    """A worker killed by the hard time limit (or the OOM killer) leaves its run "running": once the limit
    has passed it cannot still be working, so the record says what happened."""
    now = timezone.now()
    TaskRun.objects.filter(
        task=task, state=TaskRun.State.RUNNING,
        started_at__lt=now - datetime.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT),
    ).update(state=TaskRun.State.FAILED, finished_at=now,
             error="the worker was lost: no end was recorded within the hard time limit")


@contextmanager
def _no_lock():
    yield True


def recent_runs(limit: int = 5) -> dict[str, list[TaskRun]]:
    """The latest runs of each task, newest first (one indexed query per task)."""
    return {task: list(TaskRun.objects.filter(task=task).order_by("-started_at", "-id")[:limit]) for task in TASK_NAMES}
