"""Workers by queue, with real worker processes on the real Redis broker against PostgreSQL: a sweep that
runs long on the sweeps' worker does not hold up what a lead waits for on the interactive queue, and a worker
killed (SIGKILL) in the middle of a task has that task taken over by the other worker once its lease ends."""

import datetime
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from curation import tasks
from curation.models import Entry, Status, TaskRun
from curation.services.forget_receipt import queue_vacuum
from memoryadmin.celery import app
from tests.factories import make_entry

ROOT = Path(__file__).resolve().parents[2]
LEASE_SECONDS = 6  # the workers' lease here; 3600 in a deployment
WAIT_SECONDS = 120

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker(on_postgres):
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs the Redis broker (CELERY_BROKER_URL=redis://...)")
    app.control.purge()  # messages another test left on this broker database would be run against this one
    yield
    app.control.purge()


def _database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def workers():
    """Start workers as `make load` and the README run them; kill or stop them all at the end."""
    started: dict[str, subprocess.Popen] = {}
    logs = Path(tempfile.mkdtemp(prefix="memoryadmin-workers-"))
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),  # the test database
        "MEMORYADMIN_TASK_LEASE_SECONDS": str(LEASE_SECONDS),
        "MEMORYADMIN_DATA_DIR": str(logs),
    }

    def start(name: str, queues: str) -> subprocess.Popen:
        argv = [sys.executable, "-m", "celery", "-A", "memoryadmin", "worker", "-Q", queues, "--pool=solo"]
        argv += ["--loglevel=info", "--hostname", f"{name}-test@%h", "--without-gossip", "--without-mingle"]
        log = open(logs / f"{name}.log", "w")
        started[name] = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        return started[name]

    try:
        yield start
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in started.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        connection.close()  # the test database is flushed next: nothing of ours holds it


def wait_for(what: str, condition):
    deadline = time.monotonic() + WAIT_SECONDS
    while not (found := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT_SECONDS} s for {what}")
        time.sleep(0.1)
    return found


@contextmanager
def row_locked(entry: Entry):
    """Another session holds the entry's row: a sweep that writes it waits in the middle of its run."""
    with psycopg.connect(_database_url().replace("postgres://", "postgresql://")) as other:
        other.execute("SELECT id FROM curation_entry WHERE id = %s FOR UPDATE", [entry.pk])
        yield
        other.rollback()


def _faded() -> Entry:
    now = datetime.datetime.now(datetime.timezone.utc)
    return make_entry(base_confidence=0.3, last_verified_at=now - datetime.timedelta(days=90))


def _running(task: str):
    return TaskRun.objects.filter(task=task, state=TaskRun.State.RUNNING).first()


def test_sweeps_and_interactive_tasks_go_to_their_own_queues():
    route = app.amqp.router.route
    assert route({}, "curation.rules.lifecycle.archive")["queue"].name == settings.TASK_QUEUE_SWEEPS
    assert {q.name for q in app.amqp.queues.values()} == {settings.TASK_QUEUE_INTERACTIVE, settings.TASK_QUEUE_SWEEPS}
    # The beat schedule's runs are sweeps; what a lead sends names the interactive queue, and so does the
    # flush of the agents' reads, a short task that a long sweep must not hold up.
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        queue = settings.TASK_QUEUE_INTERACTIVE if name == "flush-retrievals" else settings.TASK_QUEUE_SWEEPS
        assert route(dict(entry.get("options", {})), entry["task"])["queue"].name == queue


def test_a_long_sweep_does_not_hold_up_a_leads_task(broker):
    entry = _faded()
    with workers() as start, row_locked(entry):
        start("sweeps", f"{settings.TASK_QUEUE_SWEEPS},{settings.TASK_QUEUE_INTERACTIVE}")
        start("interactive", settings.TASK_QUEUE_INTERACTIVE)
        tasks.TASKS["archive"].apply_async(kwargs={"triggered_by": "beat"})  # routed as beat's runs are
        wait_for("the archive sweep to start", lambda: _running("archive"))
        queue_vacuum()  # what a forget's purge sends once it commits
        vacuum = wait_for(
            "the purge's vacuum to run",
            lambda: TaskRun.objects.filter(task="vacuum_purged", finished_at__isnull=False).first(),
        )
        # The vacuum was done while the sweep still waited in the middle of its run.
        assert (vacuum.triggered_by, vacuum.state) == ("forget purge", TaskRun.State.SUCCEEDED)
        assert _running("archive") is not None
    archive = wait_for(
        "the archive sweep to finish", lambda: TaskRun.objects.filter(task="archive", finished_at__isnull=False).first()
    )
    assert archive.state == TaskRun.State.SUCCEEDED
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED


def test_a_worker_killed_mid_task_has_it_taken_over_by_the_other(broker):
    entry = _faded()
    with workers() as start:
        with row_locked(entry):
            interactive = start("interactive", settings.TASK_QUEUE_INTERACTIVE)
            tasks.TASKS["archive"].apply_async(  # a lead's "Run now"
                kwargs={"as_of": datetime.datetime.now(datetime.timezone.utc).isoformat(), "triggered_by": "lead:lena"},
                queue=settings.TASK_QUEUE_INTERACTIVE,
            )
            killed_run = wait_for("the interactive worker to start the run", lambda: _running("archive"))
            assert f":{interactive.pid}:" in killed_run.holder
            start("sweeps", f"{settings.TASK_QUEUE_SWEEPS},{settings.TASK_QUEUE_INTERACTIVE}")
            interactive.send_signal(signal.SIGKILL)  # mid-task: the message was never acknowledged
            interactive.wait()
        taken_over = wait_for(
            "another worker to run the task again",
            lambda: TaskRun.objects.filter(task="archive", state=TaskRun.State.SUCCEEDED).first(),
        )
    assert taken_over.triggered_by == "lead:lena"
    assert f":{interactive.pid}:" not in taken_over.holder
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED
    # The killed run's record does not stay "running".
    assert TaskRun.objects.get(pk=killed_run.pk).state != TaskRun.State.RUNNING
