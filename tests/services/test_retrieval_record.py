"""An agent's read is recorded in one round trip: the Retrieval, one row per entry given and the entries'
counters. On its own (an API request, not inside a transaction) it commits on PostgreSQL without waiting for
the write-ahead log's flush, for that transaction only; a failure leaves the connection usable and nothing
written."""

import uuid

import pytest
from django.db import DatabaseError, connection

from curation.models import Entry, Retrieval, RetrievedEntry
from curation.services.entry_writes import insert_counted_retrieval
from curation.services.usage import record_retrieval
from tests.factories import agent_token, make_entry

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the one-statement record is PostgreSQL's"),
]


def _setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return cursor.fetchone()[0]


def test_a_read_on_its_own_is_stored_with_its_items_and_counters_and_leaves_the_session_as_it_was():
    token = agent_token(scopes=("acme",))
    entries = [make_entry(scope="acme", trigger=f"Lesson {i}") for i in range(3)]
    assert not connection.in_atomic_block  # as in a request: autocommit
    retrieval = record_retrieval(
        token=token, scope="acme", query="drain the queue", task_ref="task-1", entries=entries, memory_version=1
    )
    stored = Retrieval.objects.get(pk=retrieval.pk)
    assert stored.entry_ids == [e.pk for e in entries] and stored.query == "drain the queue"
    assert list(
        RetrievedEntry.objects.filter(retrieval=stored).order_by("rank").values_list("entry_id", flat=True)
    ) == [e.pk for e in entries]
    assert set(Entry.objects.filter(pk__in=[e.pk for e in entries]).values_list("retrieval_count", flat=True)) == {1}
    # The setting was for that transaction only: the next write on this connection waits for the disk again.
    assert _setting("synchronous_commit") == "on"
    assert connection.connection.info.transaction_status.name == "IDLE"


def test_a_read_that_fails_writes_nothing_and_the_connection_goes_on():
    token = agent_token(scopes=("acme",))
    entry = make_entry(scope="acme")
    broken = Retrieval(
        id=uuid.uuid4(),
        token_id=token.pk + 1000,
        scope="acme",
        query="",
        task_ref="",
        entry_ids=[entry.pk],
        memory_version=1,
        arm="memory",
        created_at=entry.created_at,
    )
    with pytest.raises(DatabaseError):  # no such token: refused when the transaction commits
        insert_counted_retrieval(broken)
    assert connection.connection.info.transaction_status.name == "IDLE"
    assert not Retrieval.objects.exists() and not RetrievedEntry.objects.exists()
    assert Entry.objects.get(pk=entry.pk).retrieval_count == 0
    assert _setting("synchronous_commit") == "on"


def test_a_read_refused_mid_statement_rolls_its_transaction_back():
    """A refusal before the COMMIT leaves the transaction the statement opened aborted: it is rolled back."""
    token = agent_token(scopes=("acme",))
    entry = make_entry(scope="acme")
    first = record_retrieval(token=token, scope="acme", query="", task_ref="", entries=[entry], memory_version=1)
    again = Retrieval(
        id=first.pk,
        token_id=token.pk,
        scope="acme",
        query="",
        task_ref="",
        entry_ids=[entry.pk],
        memory_version=1,
        arm="memory",
        created_at=entry.created_at,
    )
    with pytest.raises(DatabaseError):  # the same id twice
        insert_counted_retrieval(again)
    assert connection.connection.info.transaction_status.name == "IDLE"
    assert Retrieval.objects.count() == 1 and RetrievedEntry.objects.count() == 1
    assert Entry.objects.get(pk=entry.pk).retrieval_count == 1
