"""An agent token's name is unique per maker (and among the operator's), no longer across the install: the
service refuses a name only when the maker can see a token with it. Existing rows were unique by name
across the install, so they already satisfy both constraints and nothing is rewritten.

A conflict records the entry whose detection raised it, so the queue shows an entry's conflicts as one card.
Existing conflicts are given their newer entry (entry_b): at ingest that is the candidate that raised them."""

from django.conf import settings
import django.db.models.deletion
from django.db import migrations, models


def raised_by_the_newer_entry(apps, schema_editor):
    Conflict = apps.get_model("curation", "Conflict")
    Conflict.objects.filter(raised_by__isnull=True).update(raised_by=models.F("entry_b"))


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0044_event_actions_of_trust_and_memory_tests'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='agenttoken',
            name='name',
            field=models.CharField(max_length=100),
        ),
        migrations.AddConstraint(
            model_name='agenttoken',
            constraint=models.UniqueConstraint(fields=('created_by', 'name'), name='agent_token_name_once_per_maker'),
        ),
        migrations.AddConstraint(
            model_name='agenttoken',
            constraint=models.UniqueConstraint(condition=models.Q(('created_by__isnull', True)), fields=('name',), name='agent_token_name_once_by_operator'),
        ),
        migrations.AddField(
            model_name='conflict',
            name='raised_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='curation.entry'),
        ),
        migrations.RunPython(raised_by_the_newer_entry, migrations.RunPython.noop),
    ]
