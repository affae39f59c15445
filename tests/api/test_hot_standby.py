"""Retrieval against a real hot standby: a second PostgreSQL cluster on this host streaming from the
primary, made by scripts/replica.sh (as `make replica-up` makes it) once per test session. Agents' reads go
there; a read right after a publish sees the new version even while the standby is behind; a stopped
standby sends reads to the primary and they come back when it returns; nothing is ever written there."""

import os
import shutil
import subprocess
import time
from pathlib import Path

import dj_database_url
import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext, override_settings

from curation.infra import db_router
from curation.services.releases import publish_version

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "replica.sh"
TOOLS = ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters", "pg_basebackup", "psql", "runuser")
CATCH_UP_SECONDS = 120  # the standby replays every database of this host: other work's WAL too

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica"])


def _script(*args) -> str:
    env = {**os.environ, "DATABASE_URL": os.environ.get("DATABASE_URL", "")}
    done = subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def hot_standby(django_db_setup, django_db_blocker):
    """The standby, started for this module and dropped after it; its URL. Not kept for the session: its
    feedback to the primary (hot_standby_feedback) holds back what VACUUM may remove, which later tests measure."""
    if connection.vendor != "postgresql":
        pytest.skip("a hot standby needs PostgreSQL (runs in the PostgreSQL pass of `make test`)")
    if missing := [tool for tool in TOOLS if not shutil.which(tool)]:
        pytest.skip(f"PostgreSQL's cluster tools are not installed here (missing: {', '.join(missing)})")
    if os.geteuid() != 0:
        pytest.skip("Debian's cluster tools make a cluster as root (scripts/replica.sh)")
    url = _script("up")
    yield url
    _script("down")


@pytest.fixture(scope="module", autouse=True)
def replica_alias(hot_standby):
    """The `replica` connection name on the standby, reading the primary's test database, as
    DATABASE_REPLICA_URL makes it; whatever the name meant before comes back afterwards."""
    standby = dj_database_url.parse(hot_standby)
    saved = connections.settings.get("replica")
    if "replica" in connections:
        connections["replica"].close()
        del connections["replica"]
    default = connections["default"].settings_dict
    connections.settings["replica"] = {
        **default,
        "HOST": standby["HOST"],
        "PORT": standby["PORT"],
        "TEST": {**default["TEST"], "MIRROR": "default"},  # nothing flushes or creates a database there
    }
    replica_on = override_settings(RETRIEVAL_ON_REPLICA=True)
    replica_on.enable()
    yield
    replica_on.disable()
    connections["replica"].close()
    del connections["replica"]
    if saved is None:
        del connections.settings["replica"]
    else:
        connections.settings["replica"] = saved


@pytest.fixture(autouse=True)
def uncached(settings):
    settings.CURATION = {**settings.CURATION, "RETRIEVAL_CACHE_SECONDS": 0}
    db_router.reset_replica_state()
    yield
    db_router.reset_replica_state()


def _lsn(alias: str, function: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT ({function}() - '0/0'::pg_lsn)::bigint")
        return cursor.fetchone()[0]


def caught_up() -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    target = _lsn("default", "pg_current_wal_lsn")
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while _lsn("replica", "pg_last_wal_replay_lsn") < target:
        if time.monotonic() > deadline:
            pytest.fail(f"the standby did not replay the primary's WAL within {CATCH_UP_SECONDS} s")
        time.sleep(0.05)


def _answer(response) -> tuple[str, list[int]]:
    assert response.status_code == 200, response.content
    return response["Memory-Read-From"], [e["id"] for e in response.json()["entries"]]


def test_the_standby_is_a_streaming_read_only_copy():
    with connections["replica"].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
        assert cursor.fetchone() == (True, "on")
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT state FROM pg_stat_replication WHERE state = 'streaming'")
        assert cursor.fetchall()


def test_agents_reads_go_to_the_standby(agent, approved, lead):
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="billing")
    caught_up()
    with CaptureQueriesContext(connections["replica"]) as on_replica:
        answer = agent.retrieve(q="restarting worker")
    assert _answer(answer) == ("replica", [entry.pk])
    assert any("curation_releasedentry" in q["sql"] for q in on_replica.captured_queries)


def test_a_read_right_after_a_publish_sees_the_new_version_while_the_standby_is_behind(agent, approved, lead):
    agent.publish_first = False
    first = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="first")
    caught_up()
    with connections["replica"].cursor() as cursor:
        cursor.execute("SELECT pg_wal_replay_pause()")  # the standby stops replaying: it falls behind
    try:
        second = approved(
            scope="acme/billing-api", trigger="Restarting the billing cron", content="Pause the cron worker first."
        )
        version = publish_version(actor=lead, summary="second")
        answer = agent.retrieve(q="restarting worker")
        assert _answer(answer)[0] == "primary"
        assert answer.json()["memory_version"] == version.number
        assert set(_answer(answer)[1]) == {first.pk, second.pk}
    finally:
        with connections["replica"].cursor() as cursor:
            cursor.execute("SELECT pg_wal_replay_resume()")
    caught_up()
    answer = agent.retrieve(q="restarting worker")
    assert _answer(answer)[0] == "replica"
    assert (answer.json()["memory_version"], set(_answer(answer)[1])) == (version.number, {first.pk, second.pk})


def test_a_stopped_standby_sends_reads_to_the_primary_and_they_come_back(agent, approved, lead, monkeypatch):
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="billing")
    caught_up()
    assert _answer(agent.retrieve(q="restarting worker")) == ("replica", [entry.pk])  # a connection kept open
    _script("stop")
    try:
        assert _answer(agent.retrieve(q="restarting worker")) == ("primary", [entry.pk])
        assert _answer(agent.retrieve(q="restarting worker")) == ("primary", [entry.pk])  # not asked again yet
    finally:
        _script("start")
    monkeypatch.setattr(db_router, "RETRY_SECONDS", 0.0)
    db_router.reset_replica_state()  # as RETRY_SECONDS passing would
    caught_up()
    assert _answer(agent.retrieve(q="restarting worker")) == ("replica", [entry.pk])


def test_no_write_ever_reaches_the_standby(agent, make_agent, approved, lead, reviewer):
    """Submitting, deciding, publishing, retrieving and reporting outcomes: the standby only reads."""
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    with CaptureQueriesContext(connections["replica"]) as on_replica:
        submitted = agent.submit(scope="acme/billing-api", trigger="When the ledger lags", content="Wait for it.")
        assert submitted.status_code in (200, 201), submitted.content
        publish_version(actor=lead, summary="billing")
        caught_up()
        answer = agent.retrieve(q="restarting worker")
        read_from, ids = _answer(answer)
        outcome = agent.post("feedback", {"retrieval_id": answer.json()["retrieval_id"], "outcome": "success"})
        assert outcome.status_code in (200, 201), outcome.content
    assert (read_from, ids) == ("replica", [entry.pk])
    statements = [" ".join(q["sql"].split()).upper() for q in on_replica.captured_queries]
    assert statements and all(sql.startswith(("SELECT", "WITH")) for sql in statements), statements
    assert not any(word in sql for sql in statements for word in ("INSERT ", "UPDATE ", "DELETE ")), statements
