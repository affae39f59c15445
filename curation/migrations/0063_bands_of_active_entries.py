"""Near-duplicate band keys only where a lookup reads them: a lookup reads active entries, and the write path
now writes an entry's keys when it becomes active (services/entry_writes.py), so the keys of entries that
are neither active nor archived (pending candidates, rejected, superseded and retired entries) are removed.
An archived entry keeps its keys, as the daily run's archive leaves them. Back: those entries' keys written
again (the write path before this wrote every entry's, but a held submission's or a forgotten entry's)."""

from django.db import migrations

from curation.rules.minhash import band_keys

FILL_BATCH = 2000
KEPT = ("active", "archived")
# The bands each database's measure had when this migration was made (rules/minhash.bands_for then).
BANDS_THEN = {"postgresql": 48}
OTHER_BANDS_THEN = 32


def remove_unread_bands(apps, schema_editor):
    Entry = apps.get_model("curation", "Entry")
    EntryBand = apps.get_model("curation", "EntryBand")
    EntryBand.objects.filter(entry__in=Entry.objects.exclude(status__in=KEPT).values("id")).delete()


def write_them_back(apps, schema_editor):
    Entry = apps.get_model("curation", "Entry")
    EntryBand = apps.get_model("curation", "EntryBand")
    ForgetRequest = apps.get_model("curation", "ForgetRequest")
    bands = BANDS_THEN.get(schema_editor.connection.vendor, OTHER_BANDS_THEN)
    forgotten = {pk for ids in ForgetRequest.objects.values_list("forgotten_ids", flat=True) for pk in ids or ()}
    rows = (
        Entry.objects.exclude(status__in=KEPT)
        .filter(held_by__isnull=True)
        .order_by("id")
        .values_list("id", "scope", "trigger", "content")
    )
    last = 0
    while batch := list(rows.filter(id__gt=last)[:FILL_BATCH]):
        last = batch[-1][0]
        EntryBand.objects.bulk_create(
            EntryBand(entry_id=pk, scope=scope, band=band)
            for pk, scope, trigger, content in batch
            if pk not in forgotten
            for band in band_keys(f"{trigger} {content}", bands)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0060_forty_eight_bands"),
    ]

    operations = [migrations.RunPython(remove_unread_bands, write_them_back)]
