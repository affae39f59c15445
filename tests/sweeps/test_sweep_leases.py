"""A sweep's lock dies with its holder. A worker killed mid-run leaves its TaskRun "running"; the next run
must neither wait out the hard time limit nor leave that record claiming to run. Real processes are
killed here: the holder's liveness is read from the operating system, and on PostgreSQL the killed
process holds the real advisory lock on its own connection."""

import datetime
import signal
import socket
import subprocess
import sys
import time

import pytest
from django.db import connection
from django.utils import timezone

from curation.rules import config
from curation.models import Entry, Status, TaskRun
from curation.sweeps import conflicts as conflict_sweep, run_sweep, runs
from tests.factories import AS_OF, days_before, make_entry

pytestmark = pytest.mark.django_db


def holder_of(process: subprocess.Popen) -> str:
    with open(f"/proc/{process.pid}/stat") as stat:
        start = stat.read().rsplit(")", 1)[1].split()[19]
    return f"{socket.gethostname()}:{process.pid}:{start}"


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(10)  # reaped, as a worker's parent (Celery's pool, the shell) reaps it


def a_run_held_by(holder: str, *, task="archive", heartbeat_at=None) -> TaskRun:
    """The record a worker leaves when it dies mid-run: still "running", naming its process."""
    now = timezone.now()
    return TaskRun.objects.create(
        task=task, as_of=AS_OF, started_at=now, heartbeat_at=heartbeat_at or now, holder=holder
    )


@pytest.fixture
def doomed():
    return make_entry(base_confidence=0.3, last_verified_at=days_before(90))


@pytest.fixture
def worker():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    if process.poll() is None:
        kill(process)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the holder's start time from /proc")
def test_a_killed_worker_stops_holding_the_lock_at_once(doomed, worker):
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL's lock is its advisory lock: the next test kills its holder")
    held = a_run_held_by(holder_of(worker))
    run, _ = run_sweep("archive", as_of=AS_OF)
    assert run.state == TaskRun.State.SKIPPED  # a live worker holds it, however old its heartbeat
    assert Entry.objects.get(pk=doomed.pk).status == Status.ACTIVE

    kill(worker)
    run, sweep = run_sweep("archive", as_of=AS_OF)
    assert (run.state, sweep.changed) == (TaskRun.State.SUCCEEDED, 1)
    held.refresh_from_db()
    assert held.state == TaskRun.State.FAILED and "worker was lost" in held.error and held.finished_at


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_killed_worker_takes_its_advisory_lock_with_it(on_postgres, doomed):
    """A real second process takes the advisory lock on its own connection, then is killed."""
    s = connection.settings_dict
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time, psycopg\n"
                f"c = psycopg.connect(dbname={s['NAME']!r}, user={s['USER']!r}, host={s['HOST'] or '127.0.0.1'!r},"
                f" port={str(s['PORT'] or 5432)!r}, autocommit=True)\n"
                f"assert c.execute('SELECT pg_try_advisory_lock(%s)', [{runs.lock_key('archive')}]).fetchone()[0]\n"
                "print('locked', flush=True)\n"
                "time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        held = a_run_held_by(holder_of(holder))
        run, _ = run_sweep("archive", as_of=AS_OF)
        assert run.state == TaskRun.State.SKIPPED
        held.refresh_from_db()
        assert held.state == TaskRun.State.RUNNING  # the skipped run does not hold the lock: it cannot tell
    finally:
        kill(holder)
    # The server lets the lock go once it notices the closed connection, which a loaded machine may take a
    # moment to do: wait for that (never more than 10 s), not for a lease.
    waited_until = time.monotonic() + 10
    with connection.cursor() as cursor:
        while time.monotonic() < waited_until:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            if not cursor.fetchone()[0]:
                break
            time.sleep(0.05)
    run, sweep = run_sweep("archive", as_of=AS_OF)
    assert (run.state, sweep.changed) == (TaskRun.State.SUCCEEDED, 1)
    held.refresh_from_db()
    assert held.state == TaskRun.State.FAILED and "worker was lost" in held.error


def test_a_worker_on_another_host_holds_the_lock_while_its_lease_runs(settings, doomed):
    if connection.vendor == "postgresql":
        pytest.skip("on PostgreSQL the advisory lock, not the lease, decides")
    lease = datetime.timedelta(seconds=config.SWEEP_LEASE_SECONDS.value)
    elsewhere = a_run_held_by("worker-7.example:4242:99", heartbeat_at=timezone.now() - lease / 2)
    run, _ = run_sweep("archive", as_of=AS_OF)
    assert run.state == TaskRun.State.SKIPPED

    TaskRun.objects.filter(pk=elsewhere.pk).update(heartbeat_at=timezone.now() - lease - datetime.timedelta(seconds=1))
    run, sweep = run_sweep("archive", as_of=AS_OF)
    assert (run.state, sweep.changed) == (TaskRun.State.SUCCEEDED, 1)
    elsewhere.refresh_from_db()
    assert elsewhere.state == TaskRun.State.FAILED


def test_a_lost_dry_run_is_closed_on_every_database(worker):
    """Dry runs take no lock, so only the holder's liveness can close their record."""
    dry = TaskRun.objects.create(task="decay", as_of=AS_OF, dry_run=True, holder=holder_of(worker))
    kill(worker)
    run_sweep("decay", as_of=AS_OF)
    dry.refresh_from_db()
    assert dry.state == TaskRun.State.FAILED and "worker was lost" in dry.error


def test_a_run_records_its_holder_and_renews_its_lease_each_batch():
    for _ in range(3):
        make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    beats = []

    def note_heartbeat(sweep):
        beats.append(TaskRun.objects.get(pk=sweep.run.pk).heartbeat_at)

    run, _ = run_sweep("archive", as_of=AS_OF, batch_size=1, after_batch=note_heartbeat)
    assert run.holder == runs.this_holder()
    assert len(beats) == 3 and beats == sorted(beats) and beats[0] >= run.started_at


def test_conflict_detection_beats_after_each_batch():
    for n in range(5):
        make_entry(trigger=f"Deploying service {n}", content="Always run the smoke tests first.")
    beats = []
    conflict_sweep.sweep_conflicts(at=AS_OF, batch_size=2, heartbeat=lambda: beats.append(1))
    assert len(beats) == 3
    beats.clear()
    conflict_sweep.sweep_conflicts(
        at=AS_OF, batch_size=2, changed_since=days_before(365), heartbeat=lambda: beats.append(1)
    )
    assert len(beats) == 3
