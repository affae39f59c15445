"""The partitioned history (PostgreSQL): Events, retrieved entries, retrievals and feedback live in monthly
partitions and a DEFAULT one; a month's partition made by the `partitions` sweep after `migrate` is
append-only where its table is and granted like the rest; rows of any date are written and read; the
forget's purge reaches every partition; an entry's page reads its history in the same number of queries
wherever it lies."""

import datetime

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from curation import services
from curation.infra import db_roles, partitions
from curation.models import Event, TaskRun
from curation.rules import clock
from curation.sweeps import run_sweep
from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db

UTC = datetime.timezone.utc
# Months the migration cannot have made (it makes this month and the next few by the real date): the sweep does.
AHEAD = datetime.datetime(2031, 3, 15, 9, 0, tzinfo=UTC)
PAST = datetime.datetime(1999, 6, 1, 9, 0, tzinfo=UTC)  # a replayed clock, long before any partition
ROLE = "memoryadmin_test_partitions"


_made = iter(range(1, 1000))


def _at(moment, make, **kwargs):
    """An entry written at `moment` (each one its own text: one pending candidate per text)."""
    kwargs.setdefault("content", f"Restart the ingest worker {next(_made)} after the schema change lands.")
    with clock.running_at(moment):
        return make(**kwargs)


def _partition(event):
    return partitions.partition_of_row("curation_event", event.pk)


def test_on_sqlite_the_sweep_has_nothing_to_do():
    if connection.vendor == "postgresql":
        pytest.skip("SQLite's behaviour: on PostgreSQL the history is partitioned")
    run, sweep = run_sweep("partitions", as_of=AHEAD, triggered_by="test")
    assert (run.state, run.rows_changed) == (TaskRun.State.SUCCEEDED, 0)
    assert sweep.samples == ["nothing to do: the history is partitioned on PostgreSQL only"]


def test_the_history_tables_are_partitioned_by_month_with_a_default(on_postgres):
    today = datetime.datetime.now(UTC).date()
    # The retrievals' key is their time-ordered id, the feedback's its retrieval's (test_partitioned_retrievals).
    keys = {
        "curation_event": "PRIMARY KEY (id, created_at)",
        "curation_retrievedentry": "PRIMARY KEY (id, created_at)",
        "curation_retrieval": "PRIMARY KEY (id)",
        "curation_feedback": "PRIMARY KEY (id, retrieval_id)",
    }
    assert set(partitions.PARTITIONED_TABLES) == set(keys)
    for table in partitions.PARTITIONED_TABLES:
        names = partitions.partitions(table)
        assert f"{table}_default" in names
        assert partitions.partition_name(table, today) in names
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
                [table],
            )
            assert cursor.fetchone()[0] == keys[table]


def test_the_sweep_makes_the_months_ahead_once(on_postgres):
    run, sweep = run_sweep("partitions", as_of=AHEAD, triggered_by="test")
    months = ["y2031m03", "y2031m04", "y2031m05", "y2031m06"]
    assert run.state == TaskRun.State.SUCCEEDED and run.rows_changed == len(partitions.PARTITIONED_TABLES) * len(months)
    for table in partitions.PARTITIONED_TABLES:
        assert {f"{table}_{m}" for m in months} <= set(partitions.partitions(table))
    again, _ = run_sweep("partitions", as_of=AHEAD, triggered_by="test")
    assert (again.state, again.rows_changed) == (TaskRun.State.SUCCEEDED, 0)


def test_a_partition_made_after_migrate_is_append_only(on_postgres, make_candidate):
    run_sweep("partitions", as_of=AHEAD, triggered_by="test")
    entry = _at(AHEAD, make_candidate)
    event = Event.objects.get(entry=entry)
    assert _partition(event) == "curation_event_y2031m03"
    with pytest.raises(DatabaseError, match="UPDATE on curation_event is refused"), transaction.atomic():
        Event.objects.filter(pk=event.pk).update(reason="rewritten")
    with pytest.raises(DatabaseError, match="DELETE on curation_event is refused"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM curation_event_y2031m03 WHERE id = %s", [event.pk])
    assert Event.objects.get(pk=event.pk).reason == event.reason


@pytest.mark.django_db(transaction=True)
def test_a_partition_the_app_role_makes_has_the_tables_grants(on_postgres):
    """The application role (owns nothing) runs the sweep's function; the new month has exactly the grants
    db_roles gave its table: append-only for the Events."""
    with connection.cursor() as cursor:
        cursor.execute(f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
                CREATE ROLE {ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
            END IF; END $$""")
    made = []
    try:
        db_roles.grant_to_app_role(connection, ROLE)
        with connection.cursor() as cursor:
            cursor.execute(f"SET ROLE {ROLE}")
            try:
                for table in partitions.PARTITIONED_TABLES:
                    cursor.execute("SELECT curation_create_partition(%s, %s)", [table, datetime.date(2032, 7, 1)])
                    assert cursor.fetchone()[0] is True
                    made.append((table, f"{table}_y2032m07"))
            finally:
                cursor.execute("RESET ROLE")

            def may(table, right):
                cursor.execute("SELECT has_table_privilege(%s, %s, %s)", [ROLE, table, right])
                return cursor.fetchone()[0]

            assert [may("curation_event_y2032m07", r) for r in ("SELECT", "INSERT", "UPDATE", "DELETE")] == [
                True,
                True,
                False,
                False,
            ]
            for table in ("curation_retrievedentry", "curation_retrieval", "curation_feedback"):
                assert all(may(f"{table}_y2032m07", r) for r in ("SELECT", "INSERT", "UPDATE", "DELETE")), table
            assert all(may("curation_retrieval_default", r) for r in ("SELECT", "INSERT", "UPDATE", "DELETE"))
            # The migration's partitions were granted by the same code after migrate.
            assert may("curation_event_default", "INSERT") and not may("curation_event_default", "UPDATE")
            cursor.execute(f"SET ROLE {ROLE}")
            try:
                with pytest.raises(DatabaseError, match="not a partitioned history table"), transaction.atomic():
                    cursor.execute("SELECT curation_create_partition('curation_entry', '2032-07-01')")
            finally:
                cursor.execute("RESET ROLE")
    finally:
        with connection.cursor() as cursor:
            for table, name in made:
                # Detached first: a retrieval's partition is referred to by the keys to its table.
                cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {name}")
                cursor.execute(f"DROP TABLE {name}")
            cursor.execute(f"DROP OWNED BY {ROLE}")
            try:
                with transaction.atomic():
                    cursor.execute(f"DROP ROLE IF EXISTS {ROLE}")
            except DatabaseError:
                pass


def test_events_of_a_replayed_clock_land_in_default_and_are_read(on_postgres, make_candidate, reviewer):
    past = _at(PAST, make_candidate, content="Pin the 1999 toolchain before building the legacy billing module.")
    future = _at(datetime.datetime(2095, 1, 1, tzinfo=UTC), make_candidate)
    for entry in (past, future):
        event = Event.objects.get(entry=entry)
        assert _partition(event) == "curation_event_default"
    page = client_for(reviewer).get(reverse("curation:entry", args=[past.pk]))
    assert page.status_code == 200 and "1999" in page.content.decode()


def test_a_month_written_before_its_partition_moves_out_of_default(on_postgres, make_candidate):
    early = datetime.datetime(2033, 2, 10, tzinfo=UTC)
    entry = _at(early, make_candidate)
    event = Event.objects.get(entry=entry)
    assert _partition(event) == "curation_event_default"
    run, _ = run_sweep("partitions", as_of=datetime.datetime(2033, 2, 1, tzinfo=UTC), triggered_by="test")
    assert run.state == TaskRun.State.SUCCEEDED
    assert _partition(event) == "curation_event_y2033m02"
    assert Event.objects.get(pk=event.pk).after == event.after
    # DEFAULT went back with its trigger on: it still refuses.
    stray = Event.objects.get(entry=_at(PAST, make_candidate))
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM curation_event_default WHERE id = %s", [stray.pk])


def test_the_forget_purge_rewrites_events_in_every_partition(on_postgres, make_candidate):
    from curation.services.forgets import approve_forget_request, file_forget_request

    lead = make_user("lena", "lead")
    entry = _at(
        PAST,
        make_candidate,
        content="Ask Marguerite Okonkwo for the payroll rollback keys before deploying.",
        evidence=[{"kind": "user_statement", "signal": "external", "excerpt": "Marguerite Okonkwo holds the keys"}],
    )
    run_sweep("partitions", as_of=AHEAD, triggered_by="test")
    with clock.running_at(AHEAD):
        services.add_evidence(
            entry.pk,
            data={"kind": "tool_output", "signal": "external", "excerpt": "exit 0"},
            actor=lead,
        )
    events = list(Event.objects.filter(entry=entry))
    assert {_partition(e) for e in events} == {"curation_event_default", "curation_event_y2031m03"}
    request = file_forget_request(entry_id=entry.pk, reason="the user asked", actor=lead)
    approve_forget_request(request.pk, actor=lead)
    marker = f"[forgotten: request #{request.pk}]"
    rewritten = list(Event.objects.filter(pk__in=[e.pk for e in events]))
    assert len(rewritten) == len(events) and all(
        "Okonkwo" not in str((e.before, e.after, e.reason, e.entry_label)) for e in rewritten
    )
    assert Event.objects.get(entry=entry, action="submit").after["content"] == marker
    assert all(e.entry_label == f"#{entry.pk} {marker}" for e in rewritten)


def test_an_entrys_page_reads_its_history_in_the_same_queries_across_partitions(on_postgres, make_candidate, reviewer):
    lead = make_user("lena", "lead")
    run_sweep("partitions", as_of=AHEAD, triggered_by="test")

    def with_history(moments):
        entry = _at(moments[0], make_candidate)
        for moment in moments[1:]:
            with clock.running_at(moment):
                services.add_evidence(
                    entry.pk, data={"kind": "tool_output", "signal": "external", "excerpt": "exit 0"}, actor=lead
                )
        return entry

    one_month = with_history([AHEAD, AHEAD, AHEAD, AHEAD])
    spread = with_history(
        [PAST, AHEAD, datetime.datetime(2031, 5, 2, tzinfo=UTC), datetime.datetime(2090, 1, 1, tzinfo=UTC)]
    )
    assert len({_partition(e) for e in Event.objects.filter(entry=spread)}) == 3
    client = client_for(reviewer)
    counts = []
    for entry in (one_month, spread):
        with CaptureQueriesContext(connection) as queries:
            page = client.get(reverse("curation:entry", args=[entry.pk]))
        assert page.status_code == 200
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1] and counts[0] > 3, counts


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("migrates_back")
def test_the_migration_keeps_every_row_and_id_both_ways(on_postgres, make_candidate):
    now = datetime.datetime.now(UTC)
    entry = _at(now, make_candidate)
    stray = _at(PAST, make_candidate)
    ids = sorted(Event.objects.values_list("pk", flat=True))
    executor = MigrationExecutor(connection)
    executor.migrate([("curation", "0046_screened_evidence_and_skill_drafts")])
    assert not partitions.is_partitioned("curation_event")
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM curation_event ORDER BY id")
        assert [i for (i,) in cursor.fetchall()] == ids
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            cursor.execute("DELETE FROM curation_event WHERE id = %s", [ids[0]])
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert partitions.is_partitioned("curation_event")
    assert sorted(Event.objects.values_list("pk", flat=True)) == ids
    assert _partition(Event.objects.get(entry=stray)) == "curation_event_default"
    # The ids go on from the same sequence.
    later = _at(now, make_candidate)
    assert Event.objects.get(entry=later).pk > max(ids) and Event.objects.filter(entry=entry).exists()
