"""Forget requests and tombstones; and on PostgreSQL the one exception to append-only history.

The trigger on events and evidence still refuses every UPDATE and DELETE, except an UPDATE made while the
transaction-local setting `memoryadmin.forget_purge` names a forget request and that changes only the text
columns. Only `curation_forget_purge` sets it, inside the forget service's transaction: a SECURITY DEFINER
function owned by the tables' owner, so the application role (which may only SELECT and INSERT the history)
can run exactly this purge and nothing else: replace the forgotten texts with the request's marker in the
events and evidence of the entries an approved request forgot."""

import curation.rules.access
import curation.rules.clock
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

REFUSE_CHANGE = """
CREATE OR REPLACE FUNCTION curation_refuse_change() RETURNS trigger AS $$
DECLARE
    purging text := current_setting('memoryadmin.forget_purge', true);
    text_columns text[] := ARRAY['before', 'after', 'reason', 'entry_label', 'excerpt'];
BEGIN
    -- A forget's purge (curation_forget_purge) rewrites text columns of events and evidence, nothing else.
    IF TG_OP = 'UPDATE' AND coalesce(purging, '') <> ''
       AND TG_TABLE_NAME IN ('curation_event', 'curation_evidence')
       AND (to_jsonb(NEW) - text_columns) = (to_jsonb(OLD) - text_columns) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'curation: % on % is refused: evidence and events are append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

OLD_REFUSE_CHANGE = """
CREATE OR REPLACE FUNCTION curation_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'curation: % on % is refused: evidence and events are append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

# forgetting.purge_text and forgetting.purge_value, in SQL: a text inside a JSON value is matched in its
# JSON-escaped form.
PURGE_HELPERS = """
CREATE OR REPLACE FUNCTION curation_forget_text(value text, texts text[], marker text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE t text;
BEGIN
    IF value IS NULL THEN RETURN NULL; END IF;
    FOREACH t IN ARRAY coalesce(texts, '{}') LOOP
        value := replace(value, t, marker);
    END LOOP;
    RETURN value;
END $$;

CREATE OR REPLACE FUNCTION curation_forget_json(value jsonb, texts text[], marker text, own boolean) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE t text; k text; quoted text; s text;
BEGIN
    IF value IS NULL THEN RETURN NULL; END IF;
    IF own AND jsonb_typeof(value) = 'object' THEN
        FOREACH k IN ARRAY ARRAY['trigger', 'content', 'boundary', 'recheck_when'] LOOP
            IF jsonb_typeof(value -> k) = 'string' AND value ->> k <> '' THEN
                value := jsonb_set(value, ARRAY[k], to_jsonb(marker));
            END IF;
        END LOOP;
        IF jsonb_typeof(value -> 'conditions') = 'array' AND jsonb_array_length(value -> 'conditions') > 0 THEN
            value := jsonb_set(value, '{conditions}', '[]'::jsonb);
        END IF;
    END IF;
    s := value::text;
    FOREACH t IN ARRAY coalesce(texts, '{}') LOOP
        quoted := to_jsonb(t)::text;
        s := replace(s, substr(quoted, 2, length(quoted) - 2), marker);
    END LOOP;
    RETURN s::jsonb;
END $$;

CREATE OR REPLACE FUNCTION curation_forget_purge(purged_request bigint, texts text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    marker text := '[forgotten: request #' || purged_request || ']';
    ids bigint[];
    changed integer := 0;
    n integer;
BEGIN
    SELECT coalesce(array_agg(f.value::bigint), '{}') INTO ids
    FROM curation_forgetrequest r LEFT JOIN LATERAL jsonb_array_elements_text(r.forgotten_ids) AS f(value) ON true
    WHERE r.id = purged_request AND r.state = 'approved';
    IF NOT EXISTS (SELECT 1 FROM curation_forgetrequest WHERE id = purged_request AND state = 'approved') THEN
        RAISE EXCEPTION 'curation: forget request % is not approved: nothing is purged', purged_request
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM set_config('memoryadmin.forget_purge', purged_request::text, true);
    UPDATE curation_evidence SET excerpt = marker WHERE entry_id = ANY(ids) AND excerpt <> marker;
    GET DIAGNOSTICS n = ROW_COUNT;
    changed := changed + n;
    UPDATE curation_event e SET
        before = curation_forget_json(e.before, texts, marker, coalesce(e.entry_id = ANY(ids), false)),
        after = curation_forget_json(e.after, texts, marker, coalesce(e.entry_id = ANY(ids), false)),
        reason = curation_forget_text(e.reason, texts, marker),
        entry_label = CASE WHEN e.entry_id = ANY(ids) THEN '#' || e.entry_id || ' ' || marker
                           ELSE curation_forget_text(e.entry_label, texts, marker) END
    WHERE e.entry_id = ANY(ids) OR e.forget_request_id = purged_request
       OR e.conflict_id IN (SELECT c.id FROM curation_conflict c WHERE c.entry_a_id = ANY(ids) OR c.entry_b_id = ANY(ids))
       OR e.proposal_id IN (SELECT p.consolidationproposal_id FROM curation_consolidationproposal_entries p
                            WHERE p.entry_id = ANY(ids))
       OR e.skill_id IN (SELECT s.proposal_id FROM curation_skillsource s WHERE s.entry_id = ANY(ids));
    GET DIAGNOSTICS n = ROW_COUNT;
    changed := changed + n;
    PERFORM set_config('memoryadmin.forget_purge', '', true);
    RETURN changed;
END $$;

REVOKE ALL ON FUNCTION curation_forget_purge(bigint, text[]) FROM PUBLIC;
"""


def install_purge(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(REFUSE_CHANGE, params=None)
    schema_editor.execute(PURGE_HELPERS, params=None)


def uninstall_purge(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_forget_purge(bigint, text[])", params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_forget_json(jsonb, text[], text, boolean)", params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_forget_text(text, text[], text)", params=None)
    schema_editor.execute(OLD_REFUSE_CHANGE, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0023_one_clock'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ForgetRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('match_text', models.TextField(blank=True, max_length=4000)),
                ('scope', models.CharField(max_length=255, validators=[curation.rules.access.clean_scope])),
                ('reason', models.TextField(max_length=2000)),
                ('requested_by_label', models.CharField(max_length=150)),
                (
                    'state',
                    models.CharField(
                        choices=[('open', 'open'), ('approved', 'approved'), ('declined', 'declined')],
                        default='open',
                        max_length=16,
                    ),
                ),
                ('created_at', models.DateTimeField(default=curation.rules.clock.now)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_note', models.TextField(blank=True)),
                ('forgotten_ids', models.JSONField(blank=True, default=list)),
                ('published_version', models.PositiveIntegerField(blank=True, null=True)),
            ],
        ),
        migrations.CreateModel(
            name='Tombstone',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scope', models.CharField(max_length=255)),
                ('fingerprint', models.CharField(blank=True, max_length=64)),
                ('signature', models.JSONField(default=list)),
                ('forgotten_on', models.DateField()),
                ('created_at', models.DateTimeField(default=curation.rules.clock.now)),
            ],
        ),
        migrations.RemoveConstraint(
            model_name='event',
            name='event_has_subject',
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
                    ('undo', 'decision undone'),
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
                    ('version_published', 'memory version published'),
                    ('version_rolled_back', 'memory version rolled back'),
                    ('forget_filed', 'forget requested'),
                    ('forget_approved', 'forget request approved'),
                    ('forget_declined', 'forget request declined'),
                    ('forgotten', 'forgotten: retired and its text purged'),
                    ('forget_purge', 'text purged from the history'),
                ],
                max_length=48,
            ),
        ),
        migrations.AddField(
            model_name='forgetrequest',
            name='decided_by',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='+',
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name='forgetrequest',
            name='entry',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='forget_requests',
                to='curation.entry',
            ),
        ),
        migrations.AddField(
            model_name='forgetrequest',
            name='requested_by',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='+',
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name='forgetrequest',
            name='requested_by_token',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='+',
                to='curation.agenttoken',
            ),
        ),
        migrations.AddField(
            model_name='event',
            name='forget_request',
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='events',
                to='curation.forgetrequest',
            ),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(
                condition=models.Q(('forget_request__isnull', False)),
                fields=['forget_request', 'created_at', 'id'],
                name='event_forget_request_time_idx',
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
                    ('memory_version__isnull', False),
                    ('forget_request__isnull', False),
                    _connector='OR',
                ),
                name='event_has_subject',
            ),
        ),
        migrations.AddField(
            model_name='tombstone',
            name='entry',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='+',
                to='curation.entry',
            ),
        ),
        migrations.AddField(
            model_name='tombstone',
            name='request',
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name='tombstones', to='curation.forgetrequest'
            ),
        ),
        migrations.AddIndex(
            model_name='forgetrequest',
            index=models.Index(fields=['state', 'created_at', 'id'], name='forget_state_created_idx'),
        ),
        migrations.AddConstraint(
            model_name='forgetrequest',
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ('entry__isnull', False), models.Q(('match_text', ''), _negated=True), _connector='OR'
                ),
                name='forget_request_names_something',
            ),
        ),
        migrations.AddConstraint(
            model_name='forgetrequest',
            constraint=models.CheckConstraint(
                condition=models.Q(('state__in', ['open', 'approved', 'declined'])), name='forget_request_state_known'
            ),
        ),
        migrations.AddIndex(
            model_name='tombstone',
            index=models.Index(fields=['scope'], name='tombstone_scope_idx'),
        ),
        migrations.RunPython(install_purge, uninstall_purge),
    ]
