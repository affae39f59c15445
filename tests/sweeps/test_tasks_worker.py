"""The Celery side: task options that make redelivery and retries safe, the task body, and the beat
schedule executed by a real worker on the real Redis broker against PostgreSQL."""

import datetime
import time

import pytest
from celery.beat import Scheduler
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings
from django.db import OperationalError, connection

from curation import tasks
from curation.models import Entry, QueueReason, Status, TaskRun
from curation import sweeps
from memoryadmin.celery import app
from tests.factories import AS_OF, days_before, make_entry


def test_every_sweep_is_a_task_on_the_beat_schedule():
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled == {f"curation.rules.lifecycle.{name}" for name in sweeps.TASK_NAMES} | {
        "curation.retrievals.flush"
    }
    assert scheduled <= set(app.tasks)


@pytest.mark.parametrize("name", sweeps.TASK_NAMES)
def test_task_options(name):
    task = tasks.TASKS[name]
    # Idempotent sweeps: acknowledged after the work, redelivered if the worker dies.
    assert task.acks_late and task.reject_on_worker_lost
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    assert task.soft_time_limit < task.time_limit < visibility
    assert OperationalError in task.autoretry_for


@pytest.mark.django_db
def test_task_body_runs_the_sweep_as_of_the_given_time():
    entry = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    result = tasks.TASKS["archive"](as_of=AS_OF.isoformat(), triggered_by="lead:lena")
    run = TaskRun.objects.get(pk=result["task_run"])
    assert (result["state"], result["changed"]) == ("succeeded", 1)
    assert (run.as_of, run.triggered_by) == (AS_OF, "lead:lena")
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED


@pytest.mark.django_db
@pytest.mark.parametrize(
    "error, attempts", [(OperationalError("server closed the connection unexpectedly"), 6), (ValueError("a bug"), 1)]
)
def test_only_lost_connections_are_retried(monkeypatch, error, attempts):
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        raise error

    monkeypatch.setattr(sweeps, "run_sweep", failing)
    result = tasks.TASKS["decay"].apply(kwargs={"as_of": AS_OF.isoformat()})  # retries run inline here
    assert result.state == "FAILURE"
    assert (
        len(calls) == attempts == (tasks.TASKS["decay"].max_retries + 1 if isinstance(error, OperationalError) else 1)
    )


@pytest.mark.django_db(transaction=True)
def test_beat_schedule_runs_through_a_real_worker(on_postgres):
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs the Redis broker (CELERY_BROKER_URL=redis://...)")
    now = datetime.datetime.now(datetime.timezone.utc)
    faded = make_entry(base_confidence=0.3, last_verified_at=now - datetime.timedelta(days=90))
    due = make_entry(
        last_verified_at=now - datetime.timedelta(days=20), review_by=(now - datetime.timedelta(days=2)).date()
    )
    kept = make_entry(
        base_confidence=0.9,
        created_at=now - datetime.timedelta(days=1),
        last_verified_at=now - datetime.timedelta(days=1),
    )

    def close_worker_connection(**kwargs):  # the worker thread's connection, so the test database can be dropped
        connection.close()

    task_postrun.connect(close_worker_connection, weak=False)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30):
            beat = Scheduler(app=app, lazy=True)
            for name, options in settings.CELERY_BEAT_SCHEDULE.items():
                beat.apply_async(beat.Entry(name=name, app=app, **options), advance=False)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if TaskRun.objects.filter(triggered_by="beat", finished_at__isnull=False).count() == len(
                    sweeps.TASK_NAMES
                ):
                    break
                time.sleep(0.2)
    finally:
        task_postrun.disconnect(close_worker_connection)

    runs = dict(TaskRun.objects.filter(triggered_by="beat").values_list("task", "state"))
    assert runs == {name: TaskRun.State.SUCCEEDED for name in sweeps.TASK_NAMES}
    assert (Entry.objects.get(pk=faded.pk).status, Entry.objects.get(pk=faded.pk).archive_reason) == (
        Status.ARCHIVED,
        "decayed",
    )
    assert Entry.objects.get(pk=due.pk).queue_reason == QueueReason.RECHECK_REVIEW_DUE
    assert Entry.objects.get(pk=kept.pk).status == Status.ACTIVE
    assert Entry.objects.get(pk=kept.pk).confidence == pytest.approx(0.9 * 0.95 ** (1 / 30), abs=1e-4)
