"""Events about more than entries: nullable links to a conflict, a consolidation proposal, a skill
proposal or an agent token, and a check that every Event has at least one. Schema changes only: on
PostgreSQL the events table refuses UPDATE (0003), and no existing row needs one, since every stored
Event already names its entry. The action's choices change no column."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0013_retrieved_entry_one_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='event',
            name='conflict',
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='events',
                to='curation.conflict',
            ),
        ),
        migrations.AddField(
            model_name='event',
            name='proposal',
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='events',
                to='curation.consolidationproposal',
            ),
        ),
        migrations.AddField(
            model_name='event',
            name='skill',
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='events',
                to='curation.skillproposal',
            ),
        ),
        migrations.AddField(
            model_name='event',
            name='token',
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='events',
                to='curation.agenttoken',
            ),
        ),
        migrations.AlterField(
            model_name='event',
            name='action',
            field=models.CharField(
                choices=[
                    ('submit', 'submitted'),
                    ('resubmit', 'submitted again'),
                    ('add_evidence', 'evidence added'),
                    ('approve', 'approved'),
                    ('edit_approve', 'edited and approved'),
                    ('confirm', 'confirmed on recheck'),
                    ('reactivate', 'kept and reactivated'),
                    ('reject', 'rejected'),
                    ('retire', 'retired'),
                    ('defer', 'deferred'),
                    ('merge_into', 'merged into another entry'),
                    ('merge_in', 'a candidate merged in'),
                    ('outcome_success', 'task succeeded'),
                    ('outcome_failure', 'task failed'),
                    ('archive', 'archived'),
                    ('revive', 'revived'),
                    ('queue_recheck', 'sent back for a recheck'),
                    ('conflict_opened', 'conflict opened'),
                    ('conflict_keep', 'kept over the other entry'),
                    ('conflict_split', 'split from the other entry'),
                    ('conflict_merge', 'merged from a conflict'),
                    ('conflict_dismissed', 'conflict dismissed'),
                    ('conflict_moot', 'conflict closed as moot'),
                    ('supersede', 'superseded'),
                    ('consolidation_proposed', 'consolidation proposed'),
                    ('consolidation_merge', 'merged from a consolidation'),
                    ('consolidation_keep', 'kept by a consolidation'),
                    ('consolidation_dismissed', 'consolidation dismissed'),
                    ('skill_nominated', 'nominated as a skill'),
                    ('skill_draft_edited', 'skill draft edited'),
                    ('skill_trial', 'skill trial reported'),
                    ('skill_approved', 'skill approved'),
                    ('skill_rejected', 'skill rejected'),
                    ('skill_retired', 'skill retired'),
                    ('token_created', 'token created'),
                    ('token_revoked', 'token revoked'),
                ],
                max_length=48,
            ),
        ),
        migrations.AlterField(
            model_name='event',
            name='entry',
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='events',
                to='curation.entry',
            ),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(
                condition=models.Q(('conflict__isnull', False)),
                fields=['conflict', 'created_at', 'id'],
                name='event_conflict_time_idx',
            ),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(
                condition=models.Q(('proposal__isnull', False)),
                fields=['proposal', 'created_at', 'id'],
                name='event_proposal_time_idx',
            ),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(
                condition=models.Q(('skill__isnull', False)),
                fields=['skill', 'created_at', 'id'],
                name='event_skill_time_idx',
            ),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(
                condition=models.Q(('token__isnull', False)),
                fields=['token', 'created_at', 'id'],
                name='event_token_time_idx',
            ),
        ),
        migrations.AddConstraint(
            model_name='event',
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ('entry__isnull', False),
                    ('conflict__isnull', False),
                    ('proposal__isnull', False),
                    ('skill__isnull', False),
                    ('token__isnull', False),
                    _connector='OR',
                ),
                name='event_has_subject',
            ),
        ),
    ]
