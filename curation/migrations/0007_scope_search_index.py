"""Retrieval reads one scope's matching entries, not the whole scope: one GIN index on (scope,
search_vector) for active entries (btree_gin lets a GIN index hold the scope too), in place of the
search_vector-only index of 0005. PostgreSQL only.

(No index holds `confidence`: the decay sweep rewrites it daily, and an update that touches no indexed
column can stay on its page (a HOT update) without touching the indexes at all; see 0009.)"""

from django.db import migrations


def add(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin", params=None)
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS entry_active_scope_search_idx ON curation_entry "
        "USING gin (scope, search_vector) WHERE status = 'active'",
        params=None,
    )
    schema_editor.execute("DROP INDEX IF EXISTS entry_search_vector_idx", params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS entry_search_vector_idx ON curation_entry USING gin (search_vector) "
        "WHERE status = 'active'",
        params=None,
    )
    schema_editor.execute("DROP INDEX IF EXISTS entry_active_scope_search_idx", params=None)


class Migration(migrations.Migration):
    dependencies = [("curation", "0006_scope_prefix_index")]

    operations = [migrations.RunPython(add, drop)]
