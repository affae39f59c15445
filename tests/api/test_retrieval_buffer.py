"""An agent's read records what it was given in Redis, and the worker's flush writes the records in batches
(services.retrieval_buffer): the read answers as before, with a retrieval id its feedback can use at once;
after a flush the Retrieval, its items and the counters are stored, once however often the flush runs; a
process killed after its reads loses none of them. On SQLite (no worker to flush) each read writes its own
record, and the same assertions hold with the flush a no-op."""

import json
import os
import signal
import subprocess
import uuid
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from curation.infra import redis
from curation.rules import config
from curation.models import Entry, Feedback, Retrieval, RetrievedEntry
from curation.services import retrieval_buffer
from curation.tasks import flush_retrievals

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent.parent
SCOPE = "acme/billing-api"


@pytest.fixture
def buffered():
    with config.overriding(BUFFER_RETRIEVALS=True):
        yield retrieval_buffer.buffering()


def _stored(retrieval_id: str) -> bool:
    return Retrieval.objects.filter(pk=retrieval_id).exists()


def _counts(entries) -> dict[int, int]:
    return dict(Entry.objects.filter(pk__in=[e.pk for e in entries]).values_list("pk", "retrieval_count"))


def test_a_buffered_read_answers_as_a_direct_one_and_is_stored_by_the_flush(agent, approved):
    entries = [
        approved(scope=SCOPE, trigger=f"When the queue {i} backs up", content=f"Drain queue {i}.") for i in range(3)
    ]
    direct = agent.retrieve(scope=SCOPE, q="queue").json()
    assert _stored(direct["retrieval_id"])
    with config.overriding(BUFFER_RETRIEVALS=True):
        buffered = retrieval_buffer.buffering()
        later = agent.retrieve(scope=SCOPE, q="queue").json()
        # Only the record's id differs: the same entries, scores and context.
        assert {**later, "retrieval_id": None} == {**direct, "retrieval_id": None}
        assert _stored(later["retrieval_id"]) is not buffered  # on PostgreSQL with Redis: not yet
        assert retrieval_buffer.pending() == int(buffered)
        assert flush_retrievals() == {"stored": int(buffered)}  # the worker's task
        assert retrieval_buffer.pending() == 0
    stored = Retrieval.objects.get(pk=later["retrieval_id"])
    given = [e["id"] for e in later["entries"]]
    assert stored.entry_ids == given and stored.scope == SCOPE and stored.query == "queue"
    assert list(stored.items.order_by("rank").values_list("entry_id", flat=True)) == given
    assert _counts(entries) == {e.pk: 2 for e in entries}


def test_a_flush_delivered_twice_writes_nothing_twice(agent, approved, buffered):
    entry = approved(scope=SCOPE, trigger="When the cache is cold", content="Warm it first.")
    body = agent.retrieve(scope=SCOPE, q="cache").json()
    if buffered:
        client, key = retrieval_buffer._client()
        records = client.lrange(key, 0, -1)
        assert [json.loads(r)["id"] for r in records] == [body["retrieval_id"]]
    assert retrieval_buffer.flush() == int(buffered)
    if buffered:  # a flush killed after its commit, before it took its records off: they are there again
        client.rpush(key, *records)
        assert retrieval_buffer.pending() == 1
    assert retrieval_buffer.flush() == 0
    assert retrieval_buffer.pending() == 0
    assert Retrieval.objects.filter(pk=body["retrieval_id"]).count() == 1
    assert RetrievedEntry.objects.filter(retrieval_id=body["retrieval_id"]).count() == 1
    assert Entry.objects.get(pk=entry.pk).retrieval_count == 1


def test_feedback_on_a_read_not_yet_flushed_is_recorded(agent, approved, buffered):
    entry = approved(scope=SCOPE, trigger="When a deploy hangs", content="Check the readiness probe.")
    body = agent.retrieve(scope=SCOPE, q="deploy").json()
    assert [e["id"] for e in body["entries"]] == [entry.pk]
    assert _stored(body["retrieval_id"]) is not buffered
    answer = agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "success"})
    assert answer.status_code == 200 and answer.json()["recorded"] is True
    assert Feedback.objects.get(retrieval_id=body["retrieval_id"]).outcome == "success"
    stored = Entry.objects.get(pk=entry.pk)
    assert stored.retrieval_count == 1 and stored.hit_count == 1
    # An id no read gave is still unknown after the flush it causes.
    missing = agent.post("feedback", {"retrieval_id": "00000000-0000-4000-8000-000000000000", "outcome": "success"})
    assert missing.status_code == 404


def test_the_counters_of_many_reads_in_one_batch_are_each_reads(agent, approved, buffered):
    entries = [
        approved(scope=SCOPE, trigger=f"When ledger {i} drifts", content=f"Rebuild ledger {i}.") for i in range(2)
    ]
    answers = [agent.retrieve(scope=SCOPE, q="ledger").json() for _ in range(3)]
    answers.append(agent.retrieve(scope=SCOPE, q="ledger", k=1).json())
    assert retrieval_buffer.pending() == (4 if buffered else 0)
    assert retrieval_buffer.flush(batch=3) == (4 if buffered else 0)  # two batches
    given = [e["id"] for a in answers for e in a["entries"]]
    assert _counts(entries) == {e.pk: given.count(e.pk) for e in entries}
    assert sorted(given) == sorted(RetrievedEntry.objects.values_list("entry_id", flat=True))
    latest = max(r.created_at for r in Retrieval.objects.all() if entries[0].pk in r.entry_ids)
    assert Entry.objects.get(pk=entries[0].pk).last_retrieved_at == latest


def test_a_sweep_run_and_a_forget_see_every_read_made_before_them(agent, approved, buffered, lead):
    from curation.services.forgets import approve_forget_request, file_forget_request
    from curation.sweeps import run_sweep

    entry = approved(scope=SCOPE, trigger="When the signing key rotates", content="Restart the webhook workers.")
    body = agent.retrieve(scope=SCOPE, q="signing key").json()
    run_sweep("unused")
    assert _stored(body["retrieval_id"]) and retrieval_buffer.pending() == 0
    agent.retrieve(scope=SCOPE, q="signing key rotates").json()
    request = file_forget_request(entry_id=entry.pk, reason="a customer's key", actor=lead)
    approve_forget_request(request.pk, actor=lead)
    assert retrieval_buffer.pending() == 0
    assert not Retrieval.objects.filter(query__contains="signing").exists()  # every query that returned it purged


KILLED = """
import os, sys, time, django
django.setup()
from curation.models import AgentToken, Entry
from curation.infra import redis
from curation.rules import config
from curation.services.usage import record_retrieval
with config.overriding(BUFFER_RETRIEVALS=True):
    token = AgentToken.objects.get(pk=int(sys.argv[1]))
    entries = list(Entry.objects.filter(pk__in=[int(i) for i in sys.argv[2].split(",")]))
    ids = [str(record_retrieval(token=token, scope=sys.argv[3], query="killed", task_ref="", entries=entries).pk)
           for _ in range(3)]
print(",".join(ids), flush=True)
time.sleep(600)
"""


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="buffered on PostgreSQL with Redis")
def test_reads_buffered_by_a_process_killed_before_any_flush_are_written_by_the_next_flush(agent, approved, buffered):
    if not buffered:
        pytest.skip("the cache is not Redis: nothing is buffered")
    entries = [approved(scope=SCOPE, trigger=f"When shard {i} lags", content=f"Rebalance shard {i}.") for i in range(2)]
    db = connection.settings_dict
    cache = django_settings.CACHES["default"]
    prefix_then_setup = (
        f"from django.conf import settings; settings.CACHES['default']['KEY_PREFIX'] = {cache['KEY_PREFIX']!r}; "
        "django.setup()"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": cache["LOCATION"],
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILLED.replace("django.setup()", prefix_then_setup, 1),
            str(agent.token.pk),
            ",".join(str(e.pk) for e in entries),
            SCOPE,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ids = proc.stdout.readline().strip().split(",")
        assert len(ids) == 3, "the other process did not buffer its reads"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    assert not Retrieval.objects.filter(pk__in=ids).exists() and retrieval_buffer.pending() == 3
    assert retrieval_buffer.flush() == 3
    assert Retrieval.objects.filter(pk__in=ids, query="killed").count() == 3
    assert _counts(entries) == {e.pk: 3 for e in entries}


def test_a_record_the_database_refuses_holds_up_no_other(agent, approved, buffered):
    if not buffered:
        pytest.skip("nothing is buffered without PostgreSQL and Redis")
    entry = approved(scope=SCOPE, trigger="When the index bloats", content="Reindex concurrently.")
    first = agent.retrieve(scope=SCOPE, q="index").json()
    client, key = retrieval_buffer._client()
    broken = {**json.loads(client.lrange(key, 0, 0)[0]), "id": str(uuid.uuid4()), "token_id": agent.token.pk + 1000}
    client.rpush(key, json.dumps(broken))
    last = agent.retrieve(scope=SCOPE, q="index").json()
    assert retrieval_buffer.flush() == 2
    assert retrieval_buffer.pending() == 0
    assert set(Retrieval.objects.values_list("pk", flat=True)) == {
        uuid.UUID(first["retrieval_id"]),
        uuid.UUID(last["retrieval_id"]),
    }
    assert Entry.objects.get(pk=entry.pk).retrieval_count == 2


def test_reads_wait_in_the_durable_redis_whatever_the_cache_is(agent, approved, buffered, settings):
    """The list is the broker's Redis's (settings.DURABLE_REDIS_URL), not the cache's: a cache run apart
    (here the in-memory one) changes nothing about where reads wait."""
    if not buffered:
        pytest.skip("nothing is buffered without PostgreSQL and Redis")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    approved(scope=SCOPE, trigger="When the replica lags", content="Read the primary.")
    body = agent.retrieve(scope=SCOPE, q="replica").json()
    assert not _stored(body["retrieval_id"])
    waiting = redis.client(settings.DURABLE_REDIS_URL).lrange(redis.cache_key(retrieval_buffer.BUFFER_KEY), 0, -1)
    assert [json.loads(r)["id"] for r in waiting] == [body["retrieval_id"]]
    assert retrieval_buffer.flush() == 1 and _stored(body["retrieval_id"])


def test_a_durable_redis_that_may_evict_takes_no_read(agent, approved, buffered, monkeypatch, caplog):
    """Under an allkeys-* policy Redis may drop the list before the flush: each read is written at once, and
    the log says why and what to set."""
    if not buffered:
        pytest.skip("nothing is buffered without PostgreSQL and Redis")
    approved(scope=SCOPE, trigger="When memory runs out", content="Raise maxmemory.")
    durable = redis.client(redis.durable_url())
    monkeypatch.setattr(durable, "config_get", lambda name: {"maxmemory-policy": "allkeys-lru"})
    redis.forget_policies()
    try:
        body = agent.retrieve(scope=SCOPE, q="memory").json()
    finally:
        redis.forget_policies()
    assert _stored(body["retrieval_id"])  # in PostgreSQL already, nothing left for Redis to lose
    assert retrieval_buffer.pending() == 0
    assert "maxmemory-policy allkeys-lru" in caplog.text and "noeviction" in caplog.text


@pytest.mark.parametrize(
    ("policy", "evicts"),
    [
        ("noeviction", False),
        ("volatile-lru", False),
        ("volatile-ttl", False),
        ("allkeys-lru", True),
        ("allkeys-lfu", True),
        ("allkeys-random", True),
    ],
)
def test_which_policies_may_drop_a_key_kept_without_expiry(policy, evicts):
    assert redis.evicts(policy) is evicts


def test_a_read_whose_record_redis_does_not_take_is_written_at_once(agent, approved, buffered, monkeypatch):
    """The record's trip to Redis fails (the connection drops mid-send): the read answers as ever and its
    record is stored at once, nothing left waiting for a flush."""
    if not buffered:
        pytest.skip("reads are written at once where nothing buffers them")
    approved(scope=SCOPE, trigger="When the ledger drifts", content="Reconcile before the close.")
    from redis.connection import Connection

    sent = Connection.send_packed_command

    def drops_rpush(self, command, *args, **kwargs):
        if b"RPUSH" in (b"".join(command) if isinstance(command, list) else command):
            raise ConnectionError("dropped")
        return sent(self, command, *args, **kwargs)

    monkeypatch.setattr(Connection, "send_packed_command", drops_rpush)
    response = agent.post("memory/search", {"scope": SCOPE, "q": "ledger drifts"})
    assert response.status_code == 200
    assert _stored(response.json()["retrieval_id"]) and retrieval_buffer.pending() == 0


def test_one_trip_answers_each_reply_and_raises_an_error_reply(buffered):
    """infra.redis.one_trip: the replies in order; a Redis error reply raised, and the next trip on the same
    client answers as ever (the connection that failed was dropped, not reused with a reply unread); a
    connection the server closed is replaced when it is next taken from the pool."""
    if not buffered:
        pytest.skip("no durable Redis")
    client, key = redis.durable_client(), redis.cache_key(f"one-trip-{uuid.uuid4().hex}")
    count = f"{key}-count"
    try:
        assert redis.one_trip(client, ("RPUSH", key, "a"), ("RPUSH", key, "b"), ("LLEN", key)) == [1, 2, 2]
        with pytest.raises(Exception, match="WRONGTYPE"):
            redis.one_trip(client, ("INCR", count), ("INCR", key))
        assert redis.one_trip(client, ("LRANGE", key, 0, -1)) == [[b"a", b"b"]]
        # A pooled connection the server closed (a Redis restarted, a client killed) is replaced, not failed on.
        import redis as redis_py

        [own] = redis.one_trip(client, ("CLIENT", "ID"))
        assert redis_py.Redis.from_url(redis.durable_url()).client_kill_filter(_id=own) == 1
        assert redis.one_trip(client, ("LLEN", key)) == [2]
    finally:
        client.delete(key, count)


def test_one_trip_uses_a_connection_of_its_own_thread_and_a_new_one_after_a_fork(buffered, monkeypatch):
    """infra.redis.one_trip sends on the calling thread's own connection (no thread waits for another's, and
    none is taken from the pool), and a forked child never reuses its parent's socket."""
    if not buffered:
        pytest.skip("no durable Redis")
    import threading

    client = redis.durable_client()
    ids = {}

    def own_id(name):
        ids[name] = redis.one_trip(client, ("CLIENT", "ID"))[0]

    own_id("main")
    assert redis.one_trip(client, ("CLIENT", "ID")) == [ids["main"]]  # kept for the thread's next trip
    other = threading.Thread(target=own_id, args=("other",))
    other.start()
    other.join()
    assert ids["other"] != ids["main"]
    assert client.connection_pool._in_use_connections == set()
    monkeypatch.setattr(redis.os, "getpid", lambda: -1)  # as in a child forked after the parent's trips
    own_id("child")
    assert ids["child"] not in (ids["main"], ids["other"])
