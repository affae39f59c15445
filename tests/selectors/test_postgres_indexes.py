"""The PostgreSQL lookups that keep the agent API fast at a million entries are served by their indexes.

A few thousand entries in other scopes make the planner weigh the choice as it does at scale; what
breaks these plans is a query that stops matching its index expression."""

import pytest
from django.db import connection

from curation import selectors
from curation.models import Entry, EntryBand, Status
from curation.rules.minhash import band_keys, bands_for
from curation.services import conflicts
from tests.factories import active

pytestmark = pytest.mark.django_db


def _plans_of(run) -> str:
    """Every plan PostgreSQL made for the statements `run` executes (via EXPLAIN of each)."""
    plans = []

    def explain(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith(("SELECT", "WITH")):
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN " + sql, params)
                plans.extend(line for (line,) in cursor.fetchall())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explain):
        run()
    return "\n".join(plans)


def _fill_other_scopes(n: int) -> None:
    words = "deploy migrate cache worker queue ledger invoice webhook rotate restart drain lock retry".split()
    filled = Entry.objects.bulk_create(
        Entry(
            kind="fact",
            scope=f"other/s{i % 100}",
            trigger=f"When {words[i % 13]}ing part{i}",
            content=f"Always {words[(i // 13) % 13]} the unit{i} first.",
            status=Status.ACTIVE,
            signal="self",
            base_confidence=0.6,
            fingerprint=f"fill{i}",
        )
        for i in range(n)
    )
    EntryBand.objects.bulk_create(  # their band keys, as the write path writes them
        EntryBand(entry=e, scope=e.scope, band=band)
        for e in filled
        for band in band_keys(f"{e.trigger} {e.content}", bands_for(connection.vendor))
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE curation_entry")
        cursor.execute("ANALYZE curation_entryband")


def test_the_scoped_word_index_keeps_no_pending_list(on_postgres):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'entry_active_scoped_lexeme_idx'")
        assert "fastupdate=off" in cursor.fetchone()[0]


def test_retrieval_and_conflict_partners_use_the_scoped_word_index_near_duplicates_the_band_index(
    on_postgres, reviewer, make_candidate
):
    _fill_other_scopes(3000)
    active(reviewer, scope="acme/billing-api", trigger="Restarting the worker", content="Always drain the queue first.")
    candidate = make_candidate(
        scope="acme/billing-api", trigger="Restarting the worker", content="Never drain the queue first."
    )
    for read in (
        lambda: selectors.retrieve_memory(scopes=["acme", "acme/billing-api"], q="drain queue", k=5, min_confidence=0),
        lambda: conflicts.detect_conflicts_many([candidate]),
    ):
        plan = _plans_of(read)
        assert "entry_active_scoped_lexeme_idx" in plan, plan
    # near duplicates: the entries sharing a MinHash band key, through the (band, scope) index
    plan = _plans_of(lambda: selectors.similar_active_entries_many([candidate]))
    assert "entry_band_key_idx" in plan, plan


def test_a_retrieval_writes_no_index_that_no_read_uses(on_postgres):
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'curation_retrievedentry'")
        columns = sorted(d[d.index("(") + 1 : d.index(")")] for (d,) in cursor.fetchall())
    # The primary key holds the month the table is partitioned by (migration 0048).
    assert columns == ["entry_id, created_at", "id, created_at", "retrieval_id"]
