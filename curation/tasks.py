"""Celery tasks: thin wrappers around curation.sweeps, one per lifecycle sweep.

Every sweep is idempotent (it computes from stored base values and its as-of time, and a second run finds
nothing left to change), so the tasks acknowledge late and are re-queued when a worker dies mid-run: the
next delivery finishes the job. Time limits stay below the broker's visibility timeout (settings), so a
long run is stopped before Redis would hand the same message to a second worker.
"""

from __future__ import annotations

import datetime

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

from curation import sweeps
from curation.services import retrieval_buffer
from curation.selectors.forgets import ForgetInProgress
from curation.services.import_jobs import run_job

try:  # the Redis client is there whenever the broker is Redis
    from redis.exceptions import ConnectionError as RedisConnectionError
except ImportError:  # pragma: no cover
    RedisConnectionError = ConnectionError

# Retry only what a later attempt can fix: a lost database or broker connection, a forget's approval being
# written while a batch looked at the tombstones.
RETRY_ON = (
    OperationalError,
    InterfaceError,
    BrokerOperationalError,
    RedisConnectionError,
    ConnectionError,
    ForgetInProgress,
)


def _run(task_name: str, as_of: str | None, triggered_by: str) -> dict:
    moment = datetime.datetime.fromisoformat(as_of) if as_of else None
    run, sweep = sweeps.run_sweep(task_name, as_of=moment, triggered_by=triggered_by)
    return {"task_run": run.pk, "state": run.state, "examined": sweep.examined, "changed": sweep.changed}


def _lifecycle_task(task_name: str):
    def body(self, as_of: str | None = None, triggered_by: str = "beat") -> dict:
        return _run(task_name, as_of, triggered_by)

    body.__name__ = body.__qualname__ = task_name
    body.__doc__ = sweeps.TASK_DESCRIPTIONS[task_name]
    return shared_task(
        bind=True,
        name=f"curation.rules.lifecycle.{task_name}",
        acks_late=True,
        reject_on_worker_lost=True,
        autoretry_for=RETRY_ON,
        retry_backoff=True,
        retry_backoff_max=300,
        max_retries=5,
        soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
        time_limit=settings.CELERY_TASK_TIME_LIMIT,
    )(body)


# One task per sweep of the registry, named curation.rules.lifecycle.<sweep> (the beat schedule's names).
TASKS = {name: _lifecycle_task(name) for name in sweeps.TASK_NAMES}


@shared_task(
    name="curation.imports.run_import_job",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=RETRY_ON,
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
)
def run_import_job(job_id: int) -> dict:
    """A lead's uploaded import (or its dry run); run again, it skips what landed (services.import_jobs)."""
    job = run_job(job_id)
    return {"job": job.pk, "state": job.state, "done": job.done}


@shared_task(
    name="curation.retrievals.flush",
    acks_late=True,
    autoretry_for=RETRY_ON,
    retry_backoff=True,
    max_retries=3,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
)
def flush_retrievals() -> dict:
    """Write the agents' reads buffered in Redis (services.retrieval_buffer), set-based; delivered twice, the
    second finds them written and writes nothing."""
    return {"stored": retrieval_buffer.flush()}
