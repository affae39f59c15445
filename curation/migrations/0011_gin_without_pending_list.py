"""The retrieval index of 0010 without GIN's pending list. PostgreSQL only.

With fastupdate (the default) new index entries wait in an unsorted pending list until a vacuum or the
4 MB limit merges them, and every lookup scans the whole list: 1,000 waiting entries made a one-scope
lookup 3.7 ms instead of 0.2 ms (benchmarks/api_bench.py). Entries enter this index only when they
become active (a reviewer's approval, a revival), so inserting directly costs little where it happens
and every read stays at its best."""

from django.db import migrations


def set_fastupdate(value: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        schema_editor.execute(f"ALTER INDEX entry_active_scoped_lexeme_idx SET (fastupdate = {value})", params=None)
        if value == "off":
            # Entries already waiting are merged now; with fastupdate off no new ones wait.
            schema_editor.execute("SELECT gin_clean_pending_list('entry_active_scoped_lexeme_idx')", params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("curation", "0010_scoped_lexeme_index")]

    operations = [migrations.RunPython(set_fastupdate("off"), set_fastupdate("on"))]
