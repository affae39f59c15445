"""An index that serves `scope LIKE 'acme/billing-api/%'` for active entries on PostgreSQL.

The plain btree on scope follows the database collation, which cannot answer prefix matches: without
this index, "the entry's scope and everything below it" (near duplicates, conflicts) scans the table."""

from django.db import migrations


def add(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS entry_active_scope_prefix_idx ON curation_entry "
            "(scope varchar_pattern_ops) WHERE status = 'active'",
            params=None,
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS entry_active_scope_prefix_idx", params=None)


class Migration(migrations.Migration):
    dependencies = [("curation", "0005_search_and_fingerprints")]

    operations = [migrations.RunPython(add, drop)]
