"""The partitioned retrievals and feedback (PostgreSQL, migration 0054): a retrieval lives in the partition of
its id's month (its id is time-ordered), its feedback in the partition of its retrieval's; an id from before
time-ordered ids, or of a month not made, lives in DEFAULT. The id stays the key the buffered flush dedupes
on, feedback stays one per retrieval, and the keys that refer to a retrieval still hold, also when the
sweep moves a month's reads out of DEFAULT."""

import datetime
import uuid

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from curation.infra import partitions
from curation.models import Entry, Feedback, Retrieval, RetrievedEntry, TaskRun
from curation.rules import config
from curation.services import retrieval_buffer
from curation.services.usage import record_feedback, record_retrieval, time_ordered_id
from curation.sweeps import run_sweep
from tests.factories import agent_token, make_entry

pytestmark = pytest.mark.django_db

UTC = datetime.timezone.utc
SCOPE = "acme/billing-api"
# An id made before time-ordered ids (version 4, random): its first 48 bits say a time in the 88th century.
RANDOM_ID = uuid.UUID("f47ac10b-58cc-4372-a567-0e02b2c3d479")


def _month_bounds(month: datetime.date) -> tuple[uuid.UUID, uuid.UUID]:
    """The first id of `month` and the first of the next: the month's first millisecond, every other bit 0."""

    def first(day):
        start = datetime.datetime(day.year, day.month, 1, tzinfo=UTC)
        return uuid.UUID(int=int(start.timestamp() * 1000) << 80)

    following = partitions.months_from(month, 1)[1]
    return first(month), first(following)


def _where(table, pk):
    return partitions.partition_of_row(table, pk)


def _feedback_partition(retrieval_id):
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM curation_feedback WHERE retrieval_id = %s", [retrieval_id])
        return cursor.fetchone()[0]


def _item_partitions(retrieval_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM curation_retrievedentry WHERE retrieval_id = %s",
            [retrieval_id],
        )
        return {name for (name,) in cursor.fetchall()}


@pytest.fixture
def token():
    return agent_token("partitioned-reader", scopes=(SCOPE,))


@pytest.fixture
def entries():
    return [make_entry(scope=SCOPE, trigger=f"When queue {i} backs up", content=f"Drain queue {i}.") for i in range(2)]


def _read(token, entries, at, **kwargs):
    return record_retrieval(token=token, scope=SCOPE, query="queue", task_ref="t-1", entries=entries, at=at, **kwargs)


def test_the_retrievals_and_feedback_are_partitioned_by_the_month_of_their_ids(on_postgres):
    month = datetime.datetime.now(UTC).date().replace(day=1)
    lo, hi = _month_bounds(month)
    # The first and the last id a read of the month can have fall inside; the next month's first does not.
    first_read = time_ordered_id(datetime.datetime(month.year, month.month, 1, tzinfo=UTC))
    last_read = uuid.UUID(int=(hi.int - (1 << 80)) | ((1 << 80) - 1))
    assert lo <= first_read < hi and lo < last_read < hi
    with connection.cursor() as cursor:
        for table, key, primary in (
            ("curation_retrieval", "id", "PRIMARY KEY (id)"),
            ("curation_feedback", "retrieval_id", "PRIMARY KEY (id, retrieval_id)"),
        ):
            cursor.execute("SELECT pg_get_partkeydef(%s::regclass)", [table])
            assert cursor.fetchone()[0] == f"RANGE ({key})"
            cursor.execute(
                "SELECT contype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
                "AND contype IN ('p', 'u') ORDER BY contype",
                [table],
            )
            keys = cursor.fetchall()
            assert keys == [("p", primary)] + ([("u", "UNIQUE (retrieval_id)")] if table == "curation_feedback" else [])
            cursor.execute(
                "SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = %s",
                [partitions.partition_name(table, month)],
            )
            assert cursor.fetchone()[0] == f"FOR VALUES FROM ('{lo}') TO ('{hi}')"
            assert f"{table}_default" in partitions.partitions(table)
        # The keys that refer to a retrieval are all there, on the partitioned table.
        cursor.execute(
            "SELECT conrelid::regclass::text FROM pg_constraint WHERE confrelid = 'curation_retrieval'::regclass "
            "AND contype = 'f' AND conparentid = 0 ORDER BY 1"
        )
        assert [name for (name,) in cursor.fetchall()] == ["curation_feedback", "curation_retrievedentry"]


def test_a_read_made_now_and_its_feedback_land_in_this_months_partitions(on_postgres, token, entries):
    now = datetime.datetime.now(UTC)
    retrieval = _read(token, entries, now)
    month = partitions.partition_name("curation_retrieval", now.date())
    assert _where("curation_retrieval", retrieval.pk) == month
    assert _item_partitions(retrieval.pk) == {partitions.partition_name("curation_retrievedentry", now.date())}
    result = record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=now)
    assert result.recorded
    assert _feedback_partition(retrieval.pk) == partitions.partition_name("curation_feedback", now.date())
    assert Retrieval.objects.get(pk=retrieval.pk).feedback == result.feedback


def test_a_random_id_from_before_lands_in_default_and_the_flush_stores_it_once(on_postgres, token, entries):
    """The buffered flush writes with ON CONFLICT (id): a record delivered twice is stored once, whichever
    partition its id falls in."""
    now = datetime.datetime.now(UTC)
    with config.overriding(BUFFER_RETRIEVALS=True):
        assert retrieval_buffer.buffering()
        old = Retrieval(
            id=RANDOM_ID, token=token, scope=SCOPE, query="q", task_ref="t", entry_ids=[e.pk for e in entries],
            created_at=now,
        )  # fmt: skip
        recent = Retrieval(
            id=time_ordered_id(now), token=token, scope=SCOPE, query="q", task_ref="t", entry_ids=[entries[0].pk],
            created_at=now,
        )  # fmt: skip
        for retrieval in (old, recent):
            assert retrieval_buffer.buffer(retrieval)
        assert retrieval_buffer.flush() == 2
        # Inside this test's transaction the records stay on the list until it commits: as after a flush
        # killed before it took them off, the next flush meets them again.
        assert retrieval_buffer.pending() == 2
        assert retrieval_buffer.flush() == 0
    assert _where("curation_retrieval", RANDOM_ID) == "curation_retrieval_default"
    assert _where("curation_retrieval", recent.pk) == partitions.partition_name("curation_retrieval", now.date())
    assert Retrieval.objects.filter(pk__in=[RANDOM_ID, recent.pk]).count() == 2
    assert RetrievedEntry.objects.filter(retrieval_id=RANDOM_ID).count() == 2
    assert dict(Entry.objects.filter(pk__in=[e.pk for e in entries]).values_list("pk", "retrieval_count")) == {
        entries[0].pk: 2,
        entries[1].pk: 1,
    }
    assert record_feedback(token=token, retrieval_id=str(RANDOM_ID), outcome="failure", at=now).recorded
    assert _feedback_partition(RANDOM_ID) == "curation_feedback_default"


@pytest.mark.parametrize("where", ["month", "default"])
def test_feedback_is_once_per_retrieval_in_any_partition(on_postgres, token, entries, where):
    now = datetime.datetime.now(UTC)
    if where == "month":
        retrieval = _read(token, entries, now)
    else:
        retrieval = Retrieval.objects.create(
            id=RANDOM_ID, token=token, scope=SCOPE, query="q", task_ref="t", entry_ids=[], created_at=now
        )
    first = record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=now)
    again = record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="failure", at=now)
    assert first.recorded and not again.recorded and again.feedback.pk == first.feedback.pk
    assert list(Feedback.objects.filter(retrieval=retrieval).values_list("outcome", flat=True)) == ["success"]
    # The database itself holds it, not only the service.
    with pytest.raises(IntegrityError), transaction.atomic():
        Feedback.objects.create(retrieval=retrieval, outcome="failure", created_at=now)
    # And a feedback names a retrieval that exists.
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            Feedback.objects.create(retrieval_id=time_ordered_id(now), outcome="failure", created_at=now)


def test_feedback_costs_the_same_queries_wherever_its_retrieval_lies(on_postgres, token, entries):
    now = datetime.datetime.now(UTC)
    in_month = _read(token, entries, now)
    in_default = Retrieval.objects.create(
        id=RANDOM_ID, token=token, scope=SCOPE, query="q", task_ref="t", entry_ids=[e.pk for e in entries],
        created_at=now,
    )  # fmt: skip
    counts = []
    for retrieval in (in_month, in_default):
        with CaptureQueriesContext(connection) as queries:
            assert record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=now).recorded
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1], counts


def test_a_month_the_sweep_makes_is_written_and_purged_like_its_table(on_postgres, token, entries):
    """Retrievals are not append-only (a forget's purge rewrites a query): a month made after migrate
    takes writes as its table does."""
    ahead = datetime.datetime(2031, 3, 15, 9, 0, tzinfo=UTC)
    run, _ = run_sweep("partitions", as_of=ahead, triggered_by="test")
    assert run.state == TaskRun.State.SUCCEEDED
    for table in ("curation_retrieval", "curation_feedback"):
        assert partitions.partition_name(table, ahead.date()) in partitions.partitions(table)
    retrieval = _read(token, entries, ahead)
    assert _where("curation_retrieval", retrieval.pk) == "curation_retrieval_y2031m03"
    assert Retrieval.objects.filter(pk=retrieval.pk).update(query="[forgotten: request #1]") == 1
    record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=ahead)
    assert _feedback_partition(retrieval.pk) == "curation_feedback_y2031m03"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'curation_retrieval_y2031m03'::regclass "
            "AND NOT tgisinternal"
        )
        assert cursor.fetchone()[0] == 0  # as the table: no append-only trigger


def test_a_month_read_ahead_of_its_partition_moves_out_of_default_with_what_refers_to_it(on_postgres, token, entries):
    early = datetime.datetime(2033, 2, 10, tzinfo=UTC)
    retrieval = _read(token, entries, early)
    feedback = record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=early).feedback
    items = sorted(RetrievedEntry.objects.filter(retrieval=retrieval).values_list("pk", "entry_id", "rank"))
    assert _where("curation_retrieval", retrieval.pk) == "curation_retrieval_default"
    assert _feedback_partition(retrieval.pk) == "curation_feedback_default"
    stray = Retrieval.objects.create(
        id=RANDOM_ID, token=token, scope=SCOPE, query="q", task_ref="t", entry_ids=[], created_at=early
    )
    run, _ = run_sweep("partitions", as_of=datetime.datetime(2033, 2, 1, tzinfo=UTC), triggered_by="test")
    assert run.state == TaskRun.State.SUCCEEDED
    assert _where("curation_retrieval", retrieval.pk) == "curation_retrieval_y2033m02"
    assert _feedback_partition(retrieval.pk) == "curation_feedback_y2033m02"
    assert _item_partitions(retrieval.pk) == {"curation_retrievedentry_y2033m02"}
    assert _where("curation_retrieval", stray.pk) == "curation_retrieval_default"
    # The same rows, ids and links.
    assert sorted(RetrievedEntry.objects.filter(retrieval=retrieval).values_list("pk", "entry_id", "rank")) == items
    assert Feedback.objects.get(retrieval=retrieval).pk == feedback.pk
    assert Retrieval.objects.get(pk=retrieval.pk).query == "queue"
    # The keys still hold: a retrieval referred to cannot go, from its month's partition either.
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("DELETE FROM curation_retrieval_y2033m02 WHERE id = %s", [retrieval.pk])
    assert not record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="failure", at=early).recorded


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("migrates_back")
def test_the_migration_keeps_every_retrieval_and_feedback_both_ways(on_postgres, token, entries):
    now = datetime.datetime.now(UTC)
    recent = _read(token, entries, now)
    old = Retrieval.objects.create(
        id=RANDOM_ID, token=token, scope=SCOPE, query="q", task_ref="t", entry_ids=[], created_at=now
    )
    for retrieval in (recent, old):
        record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=now)
    feedback = sorted(Feedback.objects.values_list("pk", "retrieval_id"))
    items = sorted(RetrievedEntry.objects.values_list("pk", "retrieval_id"))
    executor = MigrationExecutor(connection)
    executor.migrate([("curation", "0053_forget_purge_evidence_text")])
    assert not partitions.is_partitioned("curation_retrieval") and not partitions.is_partitioned("curation_feedback")
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, retrieval_id FROM curation_feedback ORDER BY id")
        assert cursor.fetchall() == feedback
        cursor.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'curation_feedback'::regclass "
            "AND contype = 'p'"
        )
        assert cursor.fetchone()[0] == "PRIMARY KEY (id)"
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert partitions.is_partitioned("curation_retrieval") and partitions.is_partitioned("curation_feedback")
    assert sorted(Feedback.objects.values_list("pk", "retrieval_id")) == feedback
    assert sorted(RetrievedEntry.objects.values_list("pk", "retrieval_id")) == items
    assert _where("curation_retrieval", recent.pk) == partitions.partition_name("curation_retrieval", now.date())
    assert _where("curation_retrieval", old.pk) == "curation_retrieval_default"
    assert _feedback_partition(old.pk) == "curation_feedback_default"
    # Feedback's ids go on from the same sequence, and it is still one per retrieval.
    later = _read(token, entries, now)
    made = record_feedback(token=token, retrieval_id=str(later.pk), outcome="failure", at=now).feedback
    assert made.pk > max(pk for pk, _ in feedback)
    assert not record_feedback(token=token, retrieval_id=str(old.pk), outcome="failure", at=now).recorded
    with pytest.raises(DatabaseError), transaction.atomic():
        Feedback.objects.create(retrieval=old, outcome="failure", created_at=now)


@pytest.mark.django_db(transaction=True)
def test_the_app_role_makes_a_month_of_reads_and_moves_them_out_of_default(on_postgres, token, entries):
    """The sweep runs as the application role, which owns nothing: the function moves a month's reads, with the
    retrieved entries and feedback that refer to them, and gives the new months the tables' grants."""
    from curation.infra import db_roles

    role = "memoryadmin_test_retpart"
    at = datetime.datetime(2034, 5, 10, tzinfo=UTC)
    retrieval = _read(token, entries, at)
    record_feedback(token=token, retrieval_id=str(retrieval.pk), outcome="success", at=at)
    tables = ("curation_retrievedentry", "curation_retrieval", "curation_feedback")
    with connection.cursor() as cursor:
        cursor.execute(f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
            END IF; END $$""")
    try:
        db_roles.grant_to_app_role(connection, role)
        with connection.cursor() as cursor:
            cursor.execute(f"SET ROLE {role}")
            try:
                for table in tables:
                    cursor.execute("SELECT curation_create_partition(%s, %s)", [table, datetime.date(2034, 5, 1)])
                    assert cursor.fetchone()[0] is True
            finally:
                cursor.execute("RESET ROLE")
            for table in tables:
                cursor.execute(
                    "SELECT array_agg(privilege_type::text ORDER BY privilege_type) FROM "
                    "information_schema.role_table_grants WHERE grantee = %s AND table_name = %s",
                    [role, f"{table}_y2034m05"],
                )
                assert cursor.fetchone()[0] == ["DELETE", "INSERT", "SELECT", "UPDATE"], table
        assert _where("curation_retrieval", retrieval.pk) == "curation_retrieval_y2034m05"
        assert _item_partitions(retrieval.pk) == {"curation_retrievedentry_y2034m05"}
        assert _feedback_partition(retrieval.pk) == "curation_feedback_y2034m05"
        assert RetrievedEntry.objects.filter(retrieval=retrieval).count() == len(entries)
    finally:
        with connection.cursor() as cursor:
            # The rows go first: a retrieval's partition cannot leave while rows refer to it.
            cursor.execute("DELETE FROM curation_feedback WHERE retrieval_id = %s", [retrieval.pk])
            cursor.execute("DELETE FROM curation_retrievedentry WHERE retrieval_id = %s", [retrieval.pk])
            cursor.execute("DELETE FROM curation_retrieval WHERE id = %s", [retrieval.pk])
            for table in tables:
                if to_drop := [p for p in partitions.partitions(table) if p.endswith("_y2034m05")]:
                    cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {to_drop[0]}")
                    cursor.execute(f"DROP TABLE {to_drop[0]}")
            cursor.execute(f"DROP OWNED BY {role}")
            try:
                with transaction.atomic():
                    cursor.execute(f"DROP ROLE IF EXISTS {role}")
            except DatabaseError:
                pass
