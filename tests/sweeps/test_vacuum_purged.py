"""Vacuum after a purge: once a forget's purge has committed, the sweep VACUUMs the tables it rewrote, so
no dead row version keeps the forgotten text (PostgreSQL); a run with no new purge does nothing."""

import re

import psycopg
import pytest
from django.db import connection

from curation.models import TaskRun
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.sweeps import run_sweep
from curation.sweeps.vacuum_purged import purged_tables
from tests.deploy.test_app_db_role import APP_ROLE, app_role  # noqa: F401 (a fixture)
from tests.factories import active, client_for, make_user, publish_pending

TOKEN = "FORGETMEAXOLOTL-4242"


def _forget(lead, reviewer):
    entry = active(
        lead,
        scope="acme/payroll",
        trigger="Rotating the payroll signing key",
        content=f"Run rotate-keys with {TOKEN} and then restart the signer.",
    )
    publish_pending()
    request = file_forget_request(entry_id=entry.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    return entry


def _stats(tables):
    with connection.cursor() as cursor:
        # This backend's own counts reach the shared statistics at a transaction's end, at most once a
        # second unless forced: forced, then flushed by the next statement (autocommit), then read fresh.
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        # A partitioned table (the history) keeps its rows and counts in its partitions: its dead rows are
        # theirs together, and it was vacuumed as many times as the least vacuumed of them.
        cursor.execute(
            "SELECT coalesce(r.relname, s.relname), sum(s.n_dead_tup), min(s.vacuum_count) "
            "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
            "LEFT JOIN pg_class r ON r.oid = pg_partition_root(s.relid) "
            "WHERE c.relkind <> 'p' AND coalesce(r.relname, s.relname) = ANY(%s) GROUP BY 1",
            [list(tables)],
        )
        return {name: (dead, count) for name, dead, count in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_after_a_purge_the_purged_tables_are_vacuumed_once(on_postgres, lead, reviewer):
    _forget(lead, reviewer)
    tables = purged_tables()
    before = _stats(tables)
    assert before["curation_entry"][0] > 0  # the old row version holding the text, dead but on disk

    run, sweep = run_sweep("vacuum_purged", triggered_by="test")

    assert (run.state, run.rows_examined, run.rows_changed) == (TaskRun.State.SUCCEEDED, len(tables), len(tables))
    after = _stats(tables)
    for table in tables:
        assert after[table][1] == before[table][1] + 1, table
    assert after["curation_entry"][0] == 0 and after["curation_event"][0] == 0
    again, _ = run_sweep("vacuum_purged", triggered_by="test")  # nothing purged since: nothing to do
    assert (again.state, again.rows_examined, again.rows_changed) == (TaskRun.State.SUCCEEDED, 0, 0)
    assert _stats(tables)["curation_entry"][1] == after["curation_entry"][1]


@pytest.mark.django_db
def test_on_sqlite_the_sweep_says_there_is_nothing_to_vacuum(lead, reviewer):
    if connection.vendor == "postgresql":
        pytest.skip("SQLite has no dead row versions kept until VACUUM: the PostgreSQL test above covers it")
    _forget(lead, reviewer)
    run, sweep = run_sweep("vacuum_purged", triggered_by="test")
    assert (run.state, run.rows_changed) == (TaskRun.State.SUCCEEDED, 0)
    assert sweep.samples == ["nothing to vacuum: only PostgreSQL keeps dead row versions until VACUUM"]
    again, _ = run_sweep("vacuum_purged", triggered_by="test")
    assert again.rows_examined == 0


@pytest.mark.django_db
def test_inside_a_transaction_the_sweep_vacuums_nothing_and_keeps_its_cursor(on_postgres, lead, reviewer):
    _forget(lead, reviewer)
    run, sweep = run_sweep("vacuum_purged", triggered_by="test")
    assert run.rows_changed == 0 and "VACUUM cannot run inside a transaction" in sweep.samples[0]
    assert TaskRun.objects.get(pk=run.pk).cursor is None  # the next run outside one still vacuums


def test_the_tables_vacuumed_are_those_the_purge_rewrites():
    from curation.models import (
        ConsolidationProposal,
        Conflict,
        Entry,
        Event,
        Evidence,
        ForgetRequest,
        MemoryVersion,
        ReleasedEntry,
        Retrieval,
        SkillProposal,
    )

    purged = {
        Entry,
        Evidence,
        Event,
        ReleasedEntry,
        Retrieval,
        ConsolidationProposal,
        SkillProposal,
        MemoryVersion,
        Conflict,
        ForgetRequest,
    }
    assert set(purged_tables()) == {m._meta.db_table for m in purged}


@pytest.mark.django_db(transaction=True)
def test_a_role_that_may_not_vacuum_names_each_table_it_skipped(app_role, reviewer):
    lead = make_user("lena2", "lead")
    _forget(lead, reviewer)
    owner = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = APP_ROLE
    try:
        run, sweep = run_sweep("vacuum_purged", triggered_by="test")
    finally:
        connection.close()
        connection.settings_dict["USER"] = owner
    assert run.state == TaskRun.State.SUCCEEDED
    if connection.pg_version >= 170000:  # MAINTAIN granted by db_roles
        assert run.rows_changed == len(purged_tables())
    else:
        assert run.rows_changed == 0
        assert sweep.samples == [
            f"{t}: skipped, this role may not vacuum it (run the sweep as the tables' owner)" for t in purged_tables()
        ]
        assert TaskRun.objects.get(pk=run.pk).cursor["notes"] == sweep.samples  # shown on the Maintenance page
        as_owner, _ = run_sweep("vacuum_purged", triggered_by="test")  # the purge is still to vacuum
        assert as_owner.rows_changed == len(purged_tables())


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_from_before_the_purge_is_named_and_the_purge_vacuumed_again_once_it_ends(
    on_postgres, lead, reviewer
):
    s = connection.settings_dict
    report = psycopg.connect(
        dbname=s["NAME"],
        user=s["USER"],
        host=s["HOST"] or None,
        port=s["PORT"] or None,
        password=s["PASSWORD"] or None,
        application_name="quarterly report",
    )
    report.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot for the whole report
    report.execute("SELECT count(*) FROM curation_entry")  # a long report's snapshot, taken before the purge
    try:
        _forget(lead, reviewer)
        run, sweep = run_sweep("vacuum_purged", triggered_by="test")

        held = [line for line in sweep.samples if line.startswith("not yet removable")]
        assert len(held) == 1 and re.fullmatch(
            rf"not yet removable: session {report.info.backend_pid} \(quarterly report\), idle in transaction, "
            r"in a transaction since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC holds back VACUUM from before the purge; "
            r"the next run vacuums again",
            held[0],
        ), held
        assert _stats(purged_tables())["curation_entry"][0] > 0  # the forgotten text is still on disk
        # The purge is not marked done, and the Maintenance page says what holds it.
        assert TaskRun.objects.get(pk=run.pk).cursor == {"after_event": 0, "notes": held}
        page = client_for(lead).get("/maintenance/").content.decode()
        assert f"not yet removable: session {report.info.backend_pid} (quarterly report), idle in transaction" in page
    finally:
        report.close()

    again, sweep = run_sweep("vacuum_purged", triggered_by="test")

    assert not [line for line in sweep.samples if line.startswith("not yet removable")]
    assert again.rows_changed == len(purged_tables())
    assert _stats(purged_tables())["curation_entry"][0] == 0
    assert TaskRun.objects.get(pk=again.pk).cursor["after_event"] > 0
    assert run_sweep("vacuum_purged", triggered_by="test")[0].rows_examined == 0  # done: nothing left to vacuum
