"""Provenance trust (rules/trust.py): each piece of evidence and each entry gets a level.

Existing rows had no way to say that a piece relays untrusted content, so none is taken as untrusted: a piece
a signed-in person recorded is a person's (5); the server's own verdict from task outcomes ("verified by
outcomes") a verification (4); a piece another token recorded about an entry it did not write an independent
agent's (3); everything else the agent's own claim (2). A reviewer's merge copies (their excerpt names the row
they copy, or their recorder is "merged from #N") keep the agent's level and never confirm. An entry starts
at a person's level when a person wrote it in the console, or it was imported from a file people write (its
import evidence is a user statement with an `import:` reference); a merge's new entry and every other entry
start at the agent's. Its level is then the rule's: its origin, raised by the highest supporting piece
another source recorded. The released rows of every version take their entry's level."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


PERSON, VERIFIED, INDEPENDENT, AGENT = 5, 4, 3, 2
COPIED = "(v.recorded_by_label LIKE 'merged from #%%' OR v.excerpt LIKE '%%[copied from evidence #%%')"

EVIDENCE_LEVELS = f"""
UPDATE curation_evidence SET trust = CASE
    WHEN recorded_by_id IS NOT NULL AND recorded_by_label NOT LIKE 'merged from #%%' THEN {PERSON}
    WHEN kind = 'task_outcome' AND excerpt LIKE 'verified by outcomes:%%' THEN {VERIFIED}
    WHEN kind = 'user_statement' AND signal = 'external' AND task_ref LIKE 'import:%%' THEN {PERSON}
    WHEN recorded_by_label NOT LIKE 'merged from #%%' AND excerpt NOT LIKE '%%[copied from evidence #%%'
         AND recorded_by_label <> (SELECT e.created_by_label FROM curation_entry e WHERE e.id = entry_id)
         THEN {INDEPENDENT}
    ELSE {AGENT} END,
    source = CASE
    WHEN recorded_by_id IS NOT NULL AND recorded_by_label NOT LIKE 'merged from #%%' THEN 'person'
    WHEN kind = 'task_outcome' AND excerpt LIKE 'verified by outcomes:%%' THEN 'verification'
    WHEN kind = 'user_statement' AND signal = 'external' AND task_ref LIKE 'import:%%' THEN 'person'
    ELSE 'own' END
"""

ENTRY_ORIGINS = f"""
UPDATE curation_entry SET trust_origin = CASE
    WHEN EXISTS (SELECT 1 FROM curation_event m WHERE m.entry_id = curation_entry.id
                 AND m.action IN ('consolidation_merge', 'conflict_merge')) THEN {AGENT}
    WHEN created_by_id IS NOT NULL THEN {PERSON}
    WHEN EXISTS (SELECT 1 FROM curation_evidence v WHERE v.entry_id = curation_entry.id
                 AND v.recorded_by_label = curation_entry.created_by_label AND v.kind = 'user_statement'
                 AND v.signal = 'external' AND v.task_ref LIKE 'import:%%') THEN {PERSON}
    ELSE {AGENT} END
"""

ENTRY_LEVELS = f"""
UPDATE curation_entry SET trust = CASE
    WHEN COALESCE((SELECT MAX(v.trust) FROM curation_evidence v WHERE v.entry_id = curation_entry.id
                   AND v.polarity = 'supports' AND v.recorded_by_label <> curation_entry.created_by_label
                   AND NOT {COPIED}), 0) > trust_origin
    THEN (SELECT MAX(v.trust) FROM curation_evidence v WHERE v.entry_id = curation_entry.id
          AND v.polarity = 'supports' AND v.recorded_by_label <> curation_entry.created_by_label AND NOT {COPIED})
    ELSE trust_origin END
"""

RELEASED_LEVELS = """
UPDATE curation_releasedentry SET trust = (SELECT e.trust FROM curation_entry e WHERE e.id = entry_id)
"""


def give_levels(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    with schema_editor.connection.cursor() as cursor:
        if postgres:  # evidence is append-only: its trigger is off for this one rewrite, as its owner
            cursor.execute("ALTER TABLE curation_evidence DISABLE TRIGGER curation_evidence_append_only")
        cursor.execute(EVIDENCE_LEVELS)
        if postgres:
            cursor.execute("ALTER TABLE curation_evidence ENABLE TRIGGER curation_evidence_append_only")
        for statement in (ENTRY_ORIGINS, ENTRY_LEVELS, RELEASED_LEVELS):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0039_injection_quarantine'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='entry',
            name='trust',
            field=models.PositiveSmallIntegerField(
                choices=[(1, 'untrusted'), (2, 'agent'), (3, 'independent'), (4, 'verified'), (5, 'person')],
                db_default=2,
                default=2,
            ),
        ),
        migrations.AddField(
            model_name='entry',
            name='trust_origin',
            field=models.PositiveSmallIntegerField(
                choices=[(1, 'untrusted'), (2, 'agent'), (3, 'independent'), (4, 'verified'), (5, 'person')],
                db_default=2,
                default=2,
            ),
        ),
        migrations.AddField(
            model_name='evidence',
            name='copied_from',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='+',
                to='curation.evidence',
            ),
        ),
        migrations.AddField(
            model_name='evidence',
            name='source',
            field=models.CharField(
                choices=[
                    ('own', "the sender's own observation or reasoning"),
                    ('verification', 'a test or check result'),
                    ('relayed', 'content relayed from elsewhere (a web page, a fetched document, tool output)'),
                    ('person', "a person's statement or decision"),
                ],
                db_default='own',
                default='own',
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name='evidence',
            name='trust',
            field=models.PositiveSmallIntegerField(
                choices=[(1, 'untrusted'), (2, 'agent'), (3, 'independent'), (4, 'verified'), (5, 'person')],
                db_default=2,
                default=2,
            ),
        ),
        migrations.AddField(
            model_name='releasedentry',
            name='trust',
            field=models.PositiveSmallIntegerField(
                choices=[(1, 'untrusted'), (2, 'agent'), (3, 'independent'), (4, 'verified'), (5, 'person')],
                db_default=2,
                default=2,
            ),
        ),
        migrations.AddField(
            model_name='skillproposal',
            name='first_approval_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='skillproposal',
            name='first_approval_by',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='+',
                to=settings.AUTH_USER_MODEL,
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
                    ('trust_raised', 'trust raised by a confirmation'),
                    ('approve', 'approved'),
                    ('edit_approve', 'edited and approved'),
                    ('confirm', 'confirmed on recheck'),
                    ('reactivate', 'kept and reactivated'),
                    ('reject', 'rejected'),
                    ('retire', 'retired'),
                    ('defer', 'deferred'),
                    ('merge_into', 'merged into another entry'),
                    ('merge_in', 'a candidate merged in'),
                    ('undo', 'decision undone'),
                    ('first_approval', 'approved (1 of 2)'),
                    ('second_approval', 'approved by a second reviewer'),
                    ('disagreement', 'rejected against an approval: sent to a lead'),
                    ('outcome_success', 'task succeeded'),
                    ('outcome_failure', 'task failed'),
                    ('archive', 'archived'),
                    ('revive', 'revived'),
                    ('queue_recheck', 'sent back for a recheck'),
                    ('quarantine', 'withheld: an injection detector flagged it'),
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
                    ('skill_first_approval', 'skill approved (1 of 2 leads)'),
                    ('skill_rejected', 'skill rejected'),
                    ('skill_retired', 'skill retired'),
                    ('skill_withdrawn', 'skill withdrawn: a source was forgotten'),
                    ('token_created', 'token created'),
                    ('token_revoked', 'token revoked'),
                    ('version_published', 'memory version published'),
                    ('version_rolled_back', 'memory version rolled back'),
                    ('forget_filed', 'forget requested'),
                    ('forget_approved', 'forget request approved'),
                    ('forget_declined', 'forget request declined'),
                    ('forgotten', 'forgotten: retired and its text purged'),
                    ('forget_purge', 'text purged from the history'),
                    ('forget_held', 'held: repeats a forgotten lesson'),
                    ('forget_receipt', 'searched for residues after the purge'),
                    ('forget_reopened', 'reopened: a residue was found'),
                    ('forget_residue_closed', 'residues dealt with: closed again'),
                    ('review_rule_set', 'approvals required set'),
                    ('holdout_set', 'holdout fraction set'),
                    ('admission_policy_set', 'admission policy set'),
                ],
                max_length=48,
            ),
        ),
        migrations.RunPython(give_levels, migrations.RunPython.noop),
    ]
