"""The forgotten entries' rows, and their released rows in every version, take the exact-duplicate key of the
text they hold now (the forget's marker): a forget before this kept the plain hash of the forgotten lesson there,
which confirms a guess of its text where the keyed tombstone never does. A forget now writes it so itself
(services.entry_writes.write_entry, services.forgets._purge). Back: nothing to restore (the old hashes are gone)."""

from django.db import migrations

from curation.rules.similarity import fingerprint


def rekey_forgotten_rows(apps, schema_editor):
    Entry = apps.get_model("curation", "Entry")
    ReleasedEntry = apps.get_model("curation", "ReleasedEntry")
    Tombstone = apps.get_model("curation", "Tombstone")
    forgotten = Tombstone.objects.filter(entry__isnull=False).values("entry_id")
    for model, rows in (
        (Entry, Entry.objects.filter(pk__in=forgotten)),
        (ReleasedEntry, ReleasedEntry.objects.filter(entry_id__in=forgotten)),
    ):
        changed = []
        for row in rows.only("pk", "trigger", "content", "fingerprint").iterator(chunk_size=1000):
            key = fingerprint(row.trigger, row.content)
            if row.fingerprint != key:
                row.fingerprint = key
                changed.append(row)
        model.objects.bulk_update(changed, ["fingerprint"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0064_band_keys_unchecked"),
    ]

    operations = [
        migrations.RunPython(rekey_forgotten_rows, migrations.RunPython.noop),
    ]
