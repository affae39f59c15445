"""A run of a sweep: its TaskRun record (what it examined and changed, shown on Maintenance) and its lock,
so two workers that start the same sweep at once do the work once: the second exits and says so."""

from __future__ import annotations

import datetime
import logging
import os
import socket
import zlib
from typing import Callable

from django.conf import settings
from django.db import connection
from django.db.models.sql import InsertQuery, UpdateQuery

from curation.rules import clock, config
from curation.infra.round_trip import one_round_trip
from curation.infra.middleware import current_request_id
from curation.models import TaskRun
from curation.services import retrieval_buffer

from .engine import Sweep
from .registry import SWEEPS, TASK_NAMES

logger = logging.getLogger(__name__)


def lock_key(task: str) -> int:
    return zlib.crc32(f"memoryadmin.lifecycle.{task}".encode())


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a live process (clock ticks since boot; "" where there is no /proc),
    or None if there is no such process or it has exited and awaits reaping. Part of a holder's identity,
    so a reused pid is not mistaken for the run's worker."""
    if not os.path.isdir("/proc/self"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def this_holder() -> str:
    """The identity a run records for its worker process: host, pid and the process's start time."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start(pid) or ''}"[:200]


def holder_alive(run: TaskRun, now: datetime.datetime) -> bool:
    """Whether the process that holds a run may still be working on it. On this host the process itself
    answers; from another host only the lease does: a heartbeat within SWEEP_LEASE_SECONDS. A record from
    before leases (no holder) lives until the hard time limit."""
    if not run.holder:
        return run.started_at >= now - datetime.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    host, _, rest = run.holder.partition(":")
    pid, _, start = rest.partition(":")
    if host == socket.gethostname() and pid.isdigit():
        found = _process_start(int(pid))
        return found is not None and (not start or not found or found == start)
    lease = datetime.timedelta(seconds=config.SWEEP_LEASE_SECONDS.value)
    return (run.heartbeat_at or run.started_at) >= now - lease


def running_others(task: str, run: TaskRun) -> list[TaskRun]:
    """The task's other runs still "running" on their record: read once per run outside PostgreSQL, for
    the lock (may_hold) and for the lost runs (close_lost_runs) alike."""
    return list(TaskRun.objects.filter(task=task, state=TaskRun.State.RUNNING).exclude(pk=run.pk))


def may_hold(task: str, run: TaskRun, others: list[TaskRun]) -> bool:
    """Whether this run holds its task's lock outside PostgreSQL (where an advisory lock, taken with the run's
    start and given back with its end, dies with its holder's connection): the oldest TaskRun still
    "running" whose holder is alive holds it. This run's row is committed first, so of two runs that start
    together exactly one sees the other as older, and a run whose worker was killed stops holding it at once
    (on its host) or when its lease runs out (from another)."""
    now = clock.wall()
    return not any(holder_alive(other, now) for other in others if not other.dry_run and other.pk < run.pk)


def _insert_sql(run: TaskRun) -> tuple[str, list]:
    """The INSERT of a new run record as save() would write it, answering its id."""
    query = InsertQuery(TaskRun)
    query.insert_values([f for f in TaskRun._meta.local_concrete_fields if not f.primary_key], [run])
    compiler = query.get_compiler(connection=connection)
    compiler.returning_fields = [TaskRun._meta.pk]
    ((sql, params),) = compiler.as_sql()
    return sql, list(params)


def _update_sql(run: TaskRun, fields: list[str]) -> tuple[str, list]:
    """The UPDATE of these fields of a run record as save(update_fields=...) would write them."""
    query = TaskRun.objects.filter(pk=run.pk).query.chain(UpdateQuery)
    query.add_update_values({name: getattr(run, name) for name in fields})
    sql, params = query.get_compiler(connection=connection).as_sql()
    return sql, list(params)


_LOST_RUN_FIELDS = ("id", "dry_run", "holder", "started_at", "heartbeat_at")  # what close_lost_runs reads


def _running_sql(task: str):
    """The task's runs still "running" on their record (running_others, read with the run's own start, whose id
    is not known before it: the caller leaves it out)."""
    compiler = (
        TaskRun.objects.filter(task=task, state=TaskRun.State.RUNNING)
        .only(*_LOST_RUN_FIELDS)
        .query.get_compiler(connection=connection)
    )
    sql, params = compiler.as_sql()
    return (sql, list(params)), [column.target.attname for column, _, _ in compiler.select]


def _start_on_postgres(run: TaskRun, *, lock: bool) -> tuple[bool, list[TaskRun]]:
    """The run's record (committed unflushed: one_round_trip), its lock (unless `lock` is False: a dry run takes
    none) and the task's other running records, read once the lock is held: one round trip. Answers (lock
    held, the others)."""
    running, names = _running_sql(run.task)
    statements = [_insert_sql(run), *([("SELECT pg_try_advisory_lock(%s)", [lock_key(run.task)])] if lock else [])]
    inserted, *locked, rows = one_round_trip([*statements, running], unflushed_first=1)
    run.pk = inserted[0][0]
    run._state.adding, run._state.db = False, connection.alias
    others = [TaskRun.from_db(connection.alias, names, row) for row in rows]
    return (locked[0][0][0] if lock else True), [other for other in others if other.pk != run.pk]


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
    as_of = as_of or clock.now()
    if as_of.tzinfo is None:
        raise ValueError("as_of must carry a time zone")
    # The counters and usage history a sweep judges by include every read made so far.
    retrieval_buffer.flush()
    started = clock.wall()
    run = TaskRun(
        task=task,
        as_of=as_of,
        dry_run=dry_run,
        triggered_by=triggered_by[:150],
        started_at=started,
        heartbeat_at=started,
        holder=this_holder(),
    )
    # On PostgreSQL the advisory lock decides; the record, the lock and the lost runs' read are one round trip,
    # and so are the end and the unlock. Elsewhere one read of the running records serves the lock and the
    # lost runs.
    on_postgres = connection.vendor == "postgresql"
    if on_postgres:
        acquired, others = _start_on_postgres(run, lock=not dry_run)
    else:
        run.save(force_insert=True)
        others = running_others(task, run)
        acquired = dry_run or may_hold(task, run, others)
    held = on_postgres and acquired and not dry_run  # the advisory lock this run gives back
    sweep = Sweep(
        task=task, as_of=as_of, dry_run=dry_run, run=run, batch_size=batch_size or 0, after_batch=after_batch, full=full
    )

    def finish(state: str, error: str = "") -> None:
        nonlocal held
        run.state, run.error, run.finished_at = state, error, clock.wall()
        run.rows_examined, run.rows_changed = sweep.examined, sweep.changed
        fields = ["state", "error", "finished_at", "rows_examined", "rows_changed"]
        try:
            if on_postgres:
                unlock = [("SELECT pg_advisory_unlock(%s)", [lock_key(task)])] if held else []
                one_round_trip([_update_sql(run, fields), *unlock], unflushed_first=1)
                held = False
            else:
                run.save(update_fields=fields)
        except Exception:  # the database itself went away: the run stays "running" and its lock expires
            if state != TaskRun.State.FAILED:
                raise
            logger.exception("could not record the failure of TaskRun %s", run.pk)

    try:
        close_lost_runs(task, run, lock_held=acquired and not dry_run, others=others)
        if not acquired:
            finish(TaskRun.State.SKIPPED, f"another {task} run held the lock; this one did nothing")
            logger.info("lifecycle %s skipped: another run holds the lock", task)
            return run, sweep
        # Every Event the run writes, through the sweep or through a service it calls, names the run.
        request = current_request_id.set(f"taskrun-{run.pk}")
        try:
            with clock.running_at(as_of):  # whatever the sweep calls acts at its as-of time
                SWEEPS[task].run(sweep)
        except BaseException as exc:  # SoftTimeLimitExceeded is not an Exception subclass in every version
            finish(TaskRun.State.FAILED, f"{type(exc).__name__}: {exc}"[:2000])
            raise
        finally:
            current_request_id.reset(request)
        finish(TaskRun.State.SUCCEEDED)
    finally:
        if held:  # the end was not written with the unlock (it failed): give the lock back on its own
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_key(task)])
    logger.info(
        "lifecycle %s as of %s: examined %s, changed %s", task, as_of.isoformat(), sweep.examined, sweep.changed
    )
    return run, sweep


def close_lost_runs(task: str, run: TaskRun, *, lock_held: bool, others: list[TaskRun] | None = None) -> None:
    """Runs of this task whose worker is gone (killed, or lost with its machine) stay "running" on their
    record; say what happened instead. On PostgreSQL a real run's advisory lock died with its worker, so
    the run that holds the lock knows every older real run is over; dry runs, and every run elsewhere, are
    over when their holder is not alive."""
    now = clock.wall()
    lost = []
    for other in running_others(task, run) if others is None else others:
        if connection.vendor == "postgresql" and not other.dry_run:
            if lock_held and other.pk < run.pk:
                lost.append(other.pk)
        elif not holder_alive(other, now):
            lost.append(other.pk)
    if lost:
        TaskRun.objects.filter(pk__in=lost, state=TaskRun.State.RUNNING).update(
            state=TaskRun.State.FAILED,
            finished_at=now,
            error="the worker was lost: it stopped without recording an end",
        )
        logger.warning("lifecycle %s: %s run(s) whose worker was lost marked failed", task, len(lost))
