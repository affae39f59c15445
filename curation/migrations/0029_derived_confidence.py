"""Confidence is derived where it is read, not stored and rewritten daily by decay.

Entries gain what it is derived from (`decay_stopped_at`: when an entry left the active set, its confidence
staying as it was then) and the decay index (`decay_key`, `decay_rate`: "confidence below c at t" as an
index range). Released rows carry the base instead of a frozen value, so a published version decays as
the live rows do. The formulas below are frozen copies of lifecycle.decay_key's, as they were written.
"""

import math

from django.conf import settings
from django.db import migrations, models

EPOCH_SECONDS_PER_DAY = 86400.0
LOWEST_BASE = 1e-9


def _rate():
    # The deployment's decay settings, else their defaults as they were when this was written (settings.py
    # holds only what a deployment sets; a key written under another rate is rewritten by the decay sweep).
    c = getattr(settings, "CURATION", {})
    return -math.log(c.get("DECAY_FACTOR", 0.95)) / c.get("DECAY_PERIOD_DAYS", 30)


def backfill(apps, schema_editor):
    Entry = apps.get_model("curation", "Entry")
    ReleasedEntry = apps.get_model("curation", "ReleasedEntry")
    rate = _rate()
    # Where decay stopped: an archived entry at its archiving; a retired or superseded one that had been
    # verified (so active) at its last write. Entries never active keep their base.
    Entry.objects.filter(status="archived").update(decay_stopped_at=models.F("archived_at"))
    Entry.objects.filter(status__in=["retired", "superseded"], last_verified_at__isnull=False).update(
        decay_stopped_at=models.F("updated_at")
    )
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "UPDATE curation_entry SET decay_rate = %s, decay_key = ln(greatest(base_confidence, %s)) "
            "+ %s * EXTRACT(EPOCH FROM COALESCE(last_verified_at, created_at))::double precision / %s",
            params=[rate, LOWEST_BASE, rate, EPOCH_SECONDS_PER_DAY],
        )
        # A released row takes its entry's base when it is of the entry's current version, else (an older
        # version's row) the value it was released with.
        schema_editor.execute(
            "UPDATE curation_releasedentry r SET base_confidence = CASE WHEN e.version = r.entry_version "
            "THEN e.base_confidence ELSE r.confidence END FROM curation_entry e WHERE e.id = r.entry_id",
            params=None,
        )
        return
    rows = []
    for entry in Entry.objects.only("id", "base_confidence", "last_verified_at", "created_at").iterator(
        chunk_size=2000
    ):
        verified = entry.last_verified_at or entry.created_at
        entry.decay_rate = rate
        entry.decay_key = (
            math.log(max(entry.base_confidence, LOWEST_BASE)) + rate * verified.timestamp() / EPOCH_SECONDS_PER_DAY
        )
        rows.append(entry)
    Entry.objects.bulk_update(rows, ["decay_key", "decay_rate"], batch_size=500)
    bases = dict(Entry.objects.values_list("id", "base_confidence"))
    versions = dict(Entry.objects.values_list("id", "version"))
    released = list(ReleasedEntry.objects.only("id", "entry_id", "entry_version", "confidence"))
    for row in released:
        row.base_confidence = bases[row.entry_id] if versions[row.entry_id] == row.entry_version else row.confidence
    ReleasedEntry.objects.bulk_update(released, ["base_confidence"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0028_sweep_cursor'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='entry',
            name='decay_key',
            field=models.FloatField(default=0.0, db_default=0.0),
        ),
        migrations.AddField(
            model_name='entry',
            name='decay_rate',
            field=models.FloatField(default=-1.0, db_default=-1.0),
        ),
        migrations.AddField(
            model_name='entry',
            name='decay_stopped_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='releasedentry',
            name='base_confidence',
            field=models.FloatField(default=0.5),
            preserve_default=False,
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name='entry',
            name='entry_confidence_in_unit_range',
        ),
        migrations.RemoveField(
            model_name='entry',
            name='confidence',
        ),
        migrations.RemoveField(
            model_name='releasedentry',
            name='confidence',
        ),
        migrations.AddIndex(
            model_name='entry',
            index=models.Index(
                condition=models.Q(('status', 'active')), fields=['decay_key'], name='entry_decay_key_idx'
            ),
        ),
        migrations.AddIndex(
            model_name='entry',
            index=models.Index(
                condition=models.Q(('status', 'active')), fields=['decay_rate'], name='entry_decay_rate_idx'
            ),
        ),
        migrations.AddConstraint(
            model_name='entry',
            constraint=models.CheckConstraint(
                condition=models.Q(('base_confidence__gte', 0), ('base_confidence__lte', 1)),
                name='entry_confidence_in_unit_range',
            ),
        ),
    ]
