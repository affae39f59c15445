"""Events say what changed: an entry's write that stored two whole snapshots keeps, in `before`, the old
values of the fields it changed and, in `after`, their new values (with the words the write added); the
version is the Event's entry_version (rules/event_deltas.py). A disagreement names the first approval it
disagreed with (`after.disagreed_with`), which the entry keeps and so its delta would not.

Only Events whose `before` and `after` are both an entry's snapshot are rewritten: an insert's first
version, and every Event of another shape (evidence added, a skill's, a token's), stay as they are.

On PostgreSQL events are append-only: the trigger (migrations 0003, 0024, 0032) lets an UPDATE through only
while `memoryadmin.forget_purge` is set in the transaction, and then only of the text columns (`before` and
`after` among them); this rewrite sets it for itself (transaction-local, reset at the end), so the trigger
still refuses any change of another column. Readers read both shapes (a whole snapshot laid over the version
before it is that version), so going back leaves the deltas as they are."""

import json

from django.db import migrations

# The keys every entry snapshot has, whatever its age: what tells an entry's write from another Event.
SNAPSHOT_KEYS = ("status", "kind", "scope", "trigger", "content", "version")
DISAGREEMENT = "disagreement"

POSTGRES = """
UPDATE curation_event e SET
    before = (SELECT coalesce(jsonb_object_agg(b.key, b.value), '{}'::jsonb) FROM jsonb_each(e.before) AS b
              WHERE b.key <> 'version' AND (e.after -> b.key) IS DISTINCT FROM b.value),
    after = (SELECT coalesce(jsonb_object_agg(a.key, a.value), '{}'::jsonb) FROM jsonb_each(e.after) AS a
             WHERE a.key <> 'version' AND (e.before -> a.key) IS DISTINCT FROM a.value)
            || CASE WHEN e.action = %(disagreement)s
                    THEN jsonb_build_object('disagreed_with', e.before -> 'first_approval_by')
                    ELSE '{}'::jsonb END
WHERE e.entry_id IS NOT NULL
  AND jsonb_typeof(e.before) = 'object' AND jsonb_typeof(e.after) = 'object'
  AND e.before ?& %(keys)s AND e.after ?& %(keys)s
"""


def delta(before: dict, after: dict, action: str) -> tuple[dict, dict]:
    """rules/event_deltas.delta as it is today, frozen here as migrations are."""
    changed = [k for k, v in after.items() if k != "version" and (k not in before or before[k] != v)]
    old, new = {k: before[k] for k in changed if k in before}, {k: after[k] for k in changed}
    if action == DISAGREEMENT:
        new["disagreed_with"] = before.get("first_approval_by")
    return old, new


def is_snapshot(value) -> bool:
    return isinstance(value, dict) and all(k in value for k in SNAPSHOT_KEYS)


def to_deltas(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('memoryadmin.forget_purge', 'events as deltas', true)")
            cursor.execute(POSTGRES, {"disagreement": DISAGREEMENT, "keys": list(SNAPSHOT_KEYS)})
            cursor.execute("SELECT set_config('memoryadmin.forget_purge', '', true)")
        return
    # SQLite (no trigger): the same rewrite, row by row, on the stored JSON text.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, action, before, after FROM curation_event "
            "WHERE entry_id IS NOT NULL AND before IS NOT NULL AND after IS NOT NULL"
        )
        rows = cursor.fetchall()
        for pk, action, before, after in rows:
            before, after = json.loads(before), json.loads(after)
            if not (is_snapshot(before) and is_snapshot(after)):
                continue
            old, new = delta(before, after, action)
            cursor.execute(
                "UPDATE curation_event SET before = %s, after = %s WHERE id = %s",
                [json.dumps(old), json.dumps(new), pk],
            )


class Migration(migrations.Migration):
    dependencies = [("curation", "0042_import_jobs")]

    operations = [migrations.RunPython(to_deltas, migrations.RunPython.noop, elidable=False)]
