"""A skill made of a forgotten entry is withdrawn (its own Event action), and its Events lose the forgotten
text with it. On PostgreSQL the history is append-only: `curation_forget_skill` is the one function beside
`curation_forget_purge` (0024) that the trigger lets through, for the Events of a skill one of whose sources
an approved forget request forgot, and only to put the request's marker (or the skill's new name) in place
of what was there. skill_format.withdrawn_snapshot and replace_slugs are the same rules in Python."""

from django.db import migrations, models

FORGET_SKILL = r"""
CREATE OR REPLACE FUNCTION curation_forget_skill_json(value jsonb, marker text, new_slug text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE k text; inside text; path text[];
BEGIN
    IF value IS NULL OR jsonb_typeof(value) <> 'object' THEN RETURN value; END IF;
    -- The snapshot itself, then the nomination's draft inside it.
    FOREACH inside IN ARRAY ARRAY['', 'draft'] LOOP
        IF inside <> '' AND jsonb_typeof(value -> inside) IS DISTINCT FROM 'object' THEN CONTINUE; END IF;
        FOREACH k IN ARRAY ARRAY['description', 'when_to_use', 'steps', 'parameters', 'verification', 'rollback',
                                 'pitfalls', 'slug', 'skill'] LOOP
            path := CASE WHEN inside = '' THEN ARRAY[k] ELSE ARRAY[inside, k] END;
            IF jsonb_typeof(value #> path) = 'string' AND value #>> path <> '' THEN
                value := jsonb_set(value, path,
                                   to_jsonb(CASE WHEN k IN ('slug', 'skill') THEN new_slug ELSE marker END));
            END IF;
        END LOOP;
    END LOOP;
    RETURN value;
END $$;

CREATE OR REPLACE FUNCTION curation_forget_slugs(value text, slugs text[], new_slug text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE s text;
BEGIN
    IF value IS NULL THEN RETURN NULL; END IF;
    FOREACH s IN ARRAY coalesce(slugs, '{}') LOOP
        IF s ~ '^[a-z0-9-]+$' AND s <> new_slug THEN
            value := regexp_replace(value, '(?<![a-z0-9-])' || s || '(?![a-z0-9-])', new_slug, 'g');
        END IF;
    END LOOP;
    RETURN value;
END $$;

CREATE OR REPLACE FUNCTION curation_forget_skill(purged_request bigint, skill bigint, slugs text[], texts text[])
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    marker text := '[forgotten: request #' || purged_request || ']';
    ids bigint[];
    new_slug text;
    nominated bigint;
    whole boolean;
    n integer;
BEGIN
    SELECT coalesce(array_agg(f.value::bigint), '{}') INTO ids
    FROM curation_forgetrequest r LEFT JOIN LATERAL jsonb_array_elements_text(r.forgotten_ids) AS f(value) ON true
    WHERE r.id = purged_request AND r.state = 'approved';
    IF NOT EXISTS (SELECT 1 FROM curation_skillsource s WHERE s.proposal_id = skill AND s.entry_id = ANY(ids)) THEN
        RAISE EXCEPTION 'curation: no source of skill % was forgotten by an approved request %: nothing is purged',
            skill, purged_request USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT p.slug, p.nominated_entry_id INTO new_slug, nominated FROM curation_skillproposal p WHERE p.id = skill;
    -- Made of the forgotten entry: every draft text and every old name go; else only the forgotten texts.
    whole := nominated = ANY(ids);
    IF NOT whole THEN slugs := '{}'; END IF;
    PERFORM set_config('memoryadmin.forget_purge', purged_request::text, true);
    UPDATE curation_event e SET
        before = curation_forget_json(CASE WHEN whole THEN curation_forget_skill_json(e.before, marker, new_slug)
                                      ELSE e.before END, texts, marker, false),
        after = curation_forget_json(CASE WHEN whole THEN curation_forget_skill_json(e.after, marker, new_slug)
                                     ELSE e.after END, texts, marker, false),
        reason = curation_forget_text(curation_forget_slugs(e.reason, slugs, new_slug), texts, marker),
        entry_label = curation_forget_text(curation_forget_slugs(e.entry_label, slugs, new_slug), texts, marker)
    WHERE e.skill_id = skill
       OR (e.skill_id IS NULL AND e.entry_id = nominated AND e.action LIKE 'skill\_%'
           AND e.after ->> 'proposal' = skill::text);
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM set_config('memoryadmin.forget_purge', '', true);
    RETURN n;
END $$;

REVOKE ALL ON FUNCTION curation_forget_skill(bigint, bigint, text[], text[]) FROM PUBLIC;
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORGET_SKILL, params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_forget_skill(bigint, bigint, text[], text[])", params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_forget_slugs(text, text[], text)", params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_forget_skill_json(jsonb, text, text)", params=None)


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0032_exact_purge'),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
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
                    ('first_approval', 'approved (1 of 2)'),
                    ('second_approval', 'approved by a second reviewer'),
                    ('disagreement', 'rejected against an approval: sent to a lead'),
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
                    ('review_rule_set', 'approvals required set'),
                    ('holdout_set', 'holdout fraction set'),
                    ('admission_policy_set', 'admission policy set'),
                ],
                max_length=48,
            ),
        ),
    ]
