"""One pending entry per scope and text. Submissions that raced before this constraint may have left
several pending copies of one lesson: the oldest stays in the queue, the later ones are rejected as its
duplicates, each with an Event that says so (their evidence stays with them, readable in their history)."""

from django.db import migrations, models
from django.db.models import Count, Min
from django.utils import timezone

ACTOR = "migration"


def reject_raced_duplicates(apps, schema_editor):
    Entry, Event = apps.get_model("curation", "Entry"), apps.get_model("curation", "Event")
    groups = (
        Entry.objects.filter(status="pending")
        .exclude(fingerprint="")
        .values("scope", "fingerprint")
        .annotate(n=Count("id"), kept=Min("id"))
        .filter(n__gt=1)
    )
    now = timezone.now()
    for group in groups:
        later = Entry.objects.filter(
            status="pending", scope=group["scope"], fingerprint=group["fingerprint"], id__gt=group["kept"]
        )
        for entry in later:
            version = entry.version + 1
            Entry.objects.filter(pk=entry.pk).update(
                status="rejected", queued_at=None, queue_reason="", version=version, updated_at=now
            )
            Event.objects.create(
                entry=entry,
                entry_label=f"#{entry.pk} {entry.trigger[:60]}",
                actor_label=ACTOR,
                action="reject",
                reason=f"a duplicate of #{group['kept']}, submitted at the same moment",
                before={"status": "pending"},
                after={"status": "rejected", "duplicate_of": group["kept"]},
                entry_version=version,
                created_at=now,
            )


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0015_scope_segments"),
    ]

    operations = [
        migrations.RunPython(reject_raced_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="entry",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "pending"), models.Q(("fingerprint", ""), _negated=True)),
                fields=("scope", "fingerprint"),
                name="entry_one_pending_per_fingerprint",
            ),
        ),
    ]
