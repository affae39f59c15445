"""Skill promotions: proposals with their draft, their source entries (one live proposal per
entry, kept by a partial unique index) and the agents' trial runs, append-only on PostgreSQL like events."""

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

APPEND_ONLY = ("curation_skilltrial",)


def install_append_only(apps, schema_editor):
    """The trigger function of 0003 (curation_refuse_change) on the trials table too."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in APPEND_ONLY:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION curation_refuse_change()"
        )


def uninstall_append_only(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in APPEND_ONLY:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0011_gin_without_pending_list'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SkillProposal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.CharField(max_length=64, unique=True)),
                (
                    'scope',
                    models.CharField(
                        max_length=255,
                        validators=[
                            django.core.validators.RegexValidator(
                                '^[a-z0-9._-]+(/[a-z0-9._-]+)*$',
                                "A scope is path segments of a-z, 0-9, '.', '_' or '-', joined by '/' (e.g. acme/billing-api/container).",
                            )
                        ],
                    ),
                ),
                (
                    'status',
                    models.CharField(
                        choices=[
                            ('nominated', 'nominated'),
                            ('approved', 'approved'),
                            ('rejected', 'rejected'),
                            ('retired', 'retired'),
                        ],
                        default='nominated',
                        max_length=16,
                    ),
                ),
                ('description', models.TextField(max_length=1024)),
                ('when_to_use', models.TextField(blank=True)),
                ('steps', models.TextField()),
                ('parameters', models.TextField(blank=True)),
                ('verification', models.TextField(blank=True)),
                ('rollback', models.TextField(blank=True)),
                ('pitfalls', models.TextField(blank=True)),
                ('reason', models.TextField(blank=True)),
                ('flags', models.JSONField(blank=True, default=list)),
                ('revision', models.PositiveIntegerField(default=1)),
                ('version', models.PositiveIntegerField(default=1)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('created_by_label', models.CharField(blank=True, max_length=150)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_note', models.TextField(blank=True)),
                ('retired_at', models.DateTimeField(blank=True, null=True)),
                ('retire_reason', models.TextField(blank=True)),
                (
                    'decided_by',
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name='+',
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    'nominated_entry',
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name='+', to='curation.entry'
                    ),
                ),
                (
                    'retired_by',
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name='+',
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name='SkillSource',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('live', models.BooleanField(default=True)),
                ('entry_version', models.PositiveIntegerField()),
                ('added_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('added_by_label', models.CharField(blank=True, max_length=150)),
                ('removed_at', models.DateTimeField(blank=True, null=True)),
                (
                    'entry',
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name='skill_sources', to='curation.entry'
                    ),
                ),
                (
                    'proposal',
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name='sources', to='curation.skillproposal'
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name='skillproposal',
            name='entries',
            field=models.ManyToManyField(
                related_name='skill_proposals', through='curation.SkillSource', to='curation.entry'
            ),
        ),
        migrations.CreateModel(
            name='SkillTrial',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('revision', models.PositiveIntegerField()),
                ('outcome', models.CharField(choices=[('success', 'success'), ('failure', 'failure')], max_length=16)),
                ('task_ref', models.CharField(max_length=255)),
                ('notes', models.TextField(blank=True, max_length=4000)),
                ('reported_by_label', models.CharField(max_length=150)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                (
                    'proposal',
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name='trials', to='curation.skillproposal'
                    ),
                ),
                (
                    'token',
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name='+',
                        to='curation.agenttoken',
                    ),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name='skillsource',
            constraint=models.UniqueConstraint(fields=('proposal', 'entry'), name='skill_source_unique'),
        ),
        migrations.AddConstraint(
            model_name='skillsource',
            constraint=models.UniqueConstraint(
                condition=models.Q(('live', True)), fields=('entry',), name='skill_source_one_live_proposal'
            ),
        ),
        migrations.AddIndex(
            model_name='skillproposal',
            index=models.Index(fields=['status', 'created_at', 'id'], name='skill_status_created_idx'),
        ),
        migrations.AddIndex(
            model_name='skillproposal',
            index=models.Index(fields=['status', 'scope'], name='skill_status_scope_idx'),
        ),
        migrations.AddConstraint(
            model_name='skillproposal',
            constraint=models.CheckConstraint(
                condition=models.Q(('status__in', ['nominated', 'approved', 'rejected', 'retired'])),
                name='skill_status_known',
            ),
        ),
        migrations.AddIndex(
            model_name='skilltrial',
            index=models.Index(fields=['proposal', 'revision', 'created_at'], name='skill_trial_recent_idx'),
        ),
        migrations.AddConstraint(
            model_name='skilltrial',
            constraint=models.UniqueConstraint(
                fields=('proposal', 'revision', 'task_ref'), name='skill_trial_once_per_task'
            ),
        ),
        migrations.RunPython(install_append_only, uninstall_append_only),
    ]
