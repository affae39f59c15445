"""Retrieval finds a scope's entries that mention a query word through one exact index key per
(scope, word), in place of the (scope, search_vector) GIN index of 0007. PostgreSQL only.

A multi-column GIN index keeps each column's keys apart: a lookup for scope S and word W intersects
S's posting list with W's posting list over the whole table, so a common word cost ~450 index pages
per request at 1,000,000 entries. Here each key is "<scope> <lexeme>", so the same lookup reads only
the entries of S that contain W (measured with benchmarks/api_bench.py: the ranking query from ~10 ms
to ~1 ms).

`curation_scoped_query(scopes, q)` builds the keys of a query; it is IMMUTABLE so that PostgreSQL
folds it into a constant while planning and estimates the lookup from the index's statistics.

Parallel scans of curation_entry are turned off: this is an interactive service on few cores, where
starting two workers for a query that reads a hundred rows costs more than the query."""

from django.db import migrations

FUNCTIONS = """
CREATE OR REPLACE FUNCTION curation_scoped_lexemes(scope text, tsv tsvector) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT array(SELECT scope || ' ' || w FROM unnest(tsvector_to_array(tsv)) AS w) $$;

CREATE OR REPLACE FUNCTION curation_scoped_query(scopes text[], q text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT array(SELECT s || ' ' || w FROM unnest(scopes) AS s,
                unnest(tsvector_to_array(to_tsvector('english', q))) AS w) $$;
"""


def add(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTIONS, params=None)
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS entry_active_scoped_lexeme_idx ON curation_entry "
        "USING gin (curation_scoped_lexemes(scope, search_vector)) WHERE status = 'active'",
        params=None,
    )
    schema_editor.execute("DROP INDEX IF EXISTS entry_active_scope_search_idx", params=None)
    schema_editor.execute("ALTER TABLE curation_entry SET (parallel_workers = 0)", params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("ALTER TABLE curation_entry RESET (parallel_workers)", params=None)
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS entry_active_scope_search_idx ON curation_entry "
        "USING gin (scope, search_vector) WHERE status = 'active'",
        params=None,
    )
    schema_editor.execute("DROP INDEX IF EXISTS entry_active_scoped_lexeme_idx", params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_scoped_query(text[], text)", params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_scoped_lexemes(text, tsvector)", params=None)


class Migration(migrations.Migration):
    dependencies = [("curation", "0009_entry_fillfactor")]

    operations = [migrations.RunPython(add, drop)]
