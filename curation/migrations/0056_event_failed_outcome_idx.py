"""A partial index of the failed task outcomes' Events by entry and time: a publish's failed-outcome check
probes it once per change (on PostgreSQL a partitioned index, made on every month's partition of the history
and on each partition made later)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0054_partitioned_retrievals"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="event",
            index=models.Index(
                condition=models.Q(("action", "outcome_failure")),
                fields=["entry", "created_at"],
                name="event_entry_failed_idx",
            ),
        ),
    ]
