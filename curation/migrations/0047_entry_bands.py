"""MinHash band keys of each entry's text (curation_entryband), the index near-duplicate lookups read, and
the keys of the entries that exist: every entry whose stored text is its own (not a held submission's
marker, not a forgotten entry's)."""

import django.db.models.deletion
from django.db import migrations, models

from curation.rules.minhash import band_keys

FILL_BATCH = 2000
BANDS_THEN = 32  # the bands this migration wrote: 0060 adds PostgreSQL's later ones to the entries it banded


def fill_bands(apps, schema_editor):
    Entry = apps.get_model("curation", "Entry")
    EntryBand = apps.get_model("curation", "EntryBand")
    ForgetRequest = apps.get_model("curation", "ForgetRequest")
    forgotten = {pk for ids in ForgetRequest.objects.values_list("forgotten_ids", flat=True) for pk in ids or ()}
    rows = Entry.objects.filter(held_by__isnull=True).order_by("id").values_list("id", "scope", "trigger", "content")
    last = 0
    while batch := list(rows.filter(id__gt=last)[:FILL_BATCH]):
        last = batch[-1][0]
        EntryBand.objects.bulk_create(
            EntryBand(entry_id=pk, scope=scope, band=band)
            for pk, scope, trigger, content in batch
            if pk not in forgotten
            for band in band_keys(f"{trigger} {content}", BANDS_THEN)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0046_screened_evidence_and_skill_drafts"),
    ]

    operations = [
        migrations.CreateModel(
            name="EntryBand",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("scope", models.CharField(max_length=255)),
                ("band", models.BigIntegerField()),
                (
                    "entry",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="curation.entry"
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["band", "scope"],
                        name="entry_band_key_idx",
                        opclasses=["int8_ops", "varchar_pattern_ops"],
                    )
                ],
            },
        ),
        migrations.RunPython(fill_bands, migrations.RunPython.noop),
    ]
