"""Near-duplicate band keys on PostgreSQL: 48 bands where there were 32 (rules/minhash.bands_for), so that
lessons whose trigrams reach the threshold while their words are 0.2-0.3 alike share a key (elsewhere the
measure is the words', and 32 stay). The first 32 bands' keys stay as they are (the
hashes are read in order from one digest); every entry that has keys gets the new bands' keys, one that has
none (a held submission, a forgotten entry) still has none. Back: the new bands' keys removed."""

from django.db import migrations

from curation.rules.minhash import band_keys, bands_for

FILL_BATCH = 2000
OLD_BANDS = 32
BAND_SHIFT = 56  # a key's band number sits above its two 28-bit values (rules/minhash.band_keys)


def add_bands(apps, schema_editor):
    bands = bands_for(schema_editor.connection.vendor)
    if bands <= OLD_BANDS:
        return
    Entry = apps.get_model("curation", "Entry")
    EntryBand = apps.get_model("curation", "EntryBand")
    rows = Entry.objects.order_by("id").values_list("id", "scope", "trigger", "content")
    last = 0
    while batch := list(rows.filter(id__gt=last)[:FILL_BATCH]):
        last = batch[-1][0]
        banded = set(
            EntryBand.objects.filter(entry_id__in=[pk for pk, *_ in batch], band__lt=OLD_BANDS << BAND_SHIFT)
            .values_list("entry_id", flat=True)
            .distinct()
        )
        EntryBand.objects.bulk_create(
            EntryBand(entry_id=pk, scope=scope, band=band)
            for pk, scope, trigger, content in batch
            if pk in banded
            for band in band_keys(f"{trigger} {content}", bands)[OLD_BANDS:]
        )


def remove_bands(apps, schema_editor):
    apps.get_model("curation", "EntryBand").objects.filter(band__gte=OLD_BANDS << BAND_SHIFT).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0056_event_failed_outcome_idx"),
    ]

    operations = [migrations.RunPython(add_bands, remove_bands)]
