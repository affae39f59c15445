"""A forgotten entry's own Events lose the texts of its evidence too: an `add_evidence` Event records the
piece's excerpt and task reference in `after`, and the purge replaced only the lesson's own texts there.

The purge function is 0032's with `excerpt` and `task_ref` among the forgotten entry's text keys, as
`forgetting.ENTRY_TEXT_KEYS` has them (a test holds the two lists together)."""

import importlib

from django.db import migrations

exact_purge = importlib.import_module("curation.migrations.0032_exact_purge")

OLD_KEYS = "entry_keys text[] := ARRAY['trigger', 'content', 'boundary', 'recheck_when', 'reason'];"
NEW_KEYS = (
    "entry_keys text[] := ARRAY['trigger', 'content', 'boundary', 'recheck_when', 'reason', 'excerpt', 'task_ref'];"
)
assert OLD_KEYS in exact_purge.PURGE


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(exact_purge.PURGE.replace(OLD_KEYS, NEW_KEYS), params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(exact_purge.PURGE, params=None)


class Migration(migrations.Migration):
    dependencies = [("curation", "0050_every_scope_is_a_grant")]

    operations = [migrations.RunPython(install, uninstall)]
