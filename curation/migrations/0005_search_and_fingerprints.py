"""Retrieval search on PostgreSQL (a stored tsvector with its GIN index, and pg_trgm for trigram
similarity), and fingerprints for the entries that existed before exact-duplicate detection.

On SQLite the search part is skipped: selectors fall back to a portable word match."""

from django.db import migrations

from curation.rules.similarity import fingerprint

SEARCH_SQL = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """ALTER TABLE curation_entry ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
           setweight(to_tsvector('english', trigger), 'A')
        || setweight(jsonb_to_tsvector('english', conditions, '["string"]'), 'B')
        || setweight(to_tsvector('english', content), 'C')
       ) STORED""",
    "CREATE INDEX entry_search_vector_idx ON curation_entry USING gin (search_vector) WHERE status = 'active'",
]


def add_search(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in SEARCH_SQL:
        schema_editor.execute(statement, params=None)


def drop_search(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS entry_search_vector_idx", params=None)
    schema_editor.execute("ALTER TABLE curation_entry DROP COLUMN IF EXISTS search_vector", params=None)


def fill_fingerprints(apps, schema_editor):
    Entry = apps.get_model("curation", "Entry")
    for entry in Entry.objects.filter(fingerprint="").only("id", "trigger", "content").iterator(chunk_size=2000):
        Entry.objects.filter(pk=entry.pk).update(fingerprint=fingerprint(entry.trigger, entry.content))


class Migration(migrations.Migration):
    dependencies = [("curation", "0004_agent_api_and_maintenance")]

    operations = [
        migrations.RunPython(add_search, drop_search),
        migrations.RunPython(fill_fingerprints, migrations.RunPython.noop),
    ]
