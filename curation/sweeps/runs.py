"""A run of a sweep: its TaskRun record (what it examined and changed, shown on Maintenance) and its lock,
so two workers that start the same sweep at once do the work once: the second exits and says so."""

from __future__ import annotations

import datetime
import logging
import zlib
from contextlib import contextmanager
from typing import Callable

from django.conf import settings
from django.db import connection
from django.utils import timezone

from curation.middleware import current_request_id
from curation.models import TaskRun

from .engine import Sweep
from .registry import SWEEPS, TASK_NAMES

logger = logging.getLogger(__name__)


def lock_key(task: str) -> int:
    return zlib.crc32(f"memoryadmin.lifecycle.{task}".encode())


@contextmanager
def sweep_lock(task: str, run: TaskRun):
    """Yields whether this run may work. On PostgreSQL a session advisory lock (released if the worker
    dies with its connection). Elsewhere the oldest TaskRun still "running" within the hard time limit
    holds the lock: this run's row is committed first, so of two runs that start together exactly one
    sees the other as older."""
    if connection.vendor == "postgresql":
        key = lock_key(task)
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


@contextmanager
def _no_lock():
    yield True


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

    with (_no_lock() if dry_run else sweep_lock(task, run)) as acquired:
        if not acquired:
            finish(TaskRun.State.SKIPPED, f"another {task} run held the lock; this one did nothing")
            logger.info("lifecycle %s skipped: another run holds the lock", task)
            return run, sweep
        # Every Event the run writes, through the sweep or through a service it calls, names the run.
        request = current_request_id.set(f"taskrun-{run.pk}")
        try:
            SWEEPS[task].run(sweep)
        except BaseException as exc:  # SoftTimeLimitExceeded is not an Exception subclass in every version
            finish(TaskRun.State.FAILED, f"{type(exc).__name__}: {exc}"[:2000])
            raise
        finally:
            current_request_id.reset(request)
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

