"""The purge rewrites exactly the forgotten text, nowhere else.

`curation_forget_purge` no longer searches the texts inside every related value: it replaces the forgotten
entries' own texts whole (their evidence's excerpt and task reference; their Events' snapshot texts, reason
and label), the text keys of the Events about what they made (their conflicts and consolidation proposals;
a skill's are its withdrawal's) and the request's own Events' reasons, and the quoted texts only in the Events and evidence the lead
ticked as quoting the lesson. A scope, a slug, a status or another entry's snapshot is never touched.
The trigger lets the evidence's `task_ref` change during a purge too.

The SECURITY DEFINER function still refuses a request that is not approved; the rows it may rewrite beyond
the request's entries are the ticked ones, and there only by replacing a quoted text with the marker."""

from django.db import migrations

REFUSE_CHANGE = """
CREATE OR REPLACE FUNCTION curation_refuse_change() RETURNS trigger AS $$
DECLARE
    purging text := current_setting('memoryadmin.forget_purge', true);
    text_columns text[] := ARRAY['before', 'after', 'reason', 'entry_label', 'excerpt', 'task_ref'];
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

OLD_REFUSE_CHANGE = REFUSE_CHANGE.replace(", 'task_ref'];", "];")

# forgetting.purge_keys in SQL: at the top level of an object, the text under each key replaced whole.
PURGE = """
DROP FUNCTION IF EXISTS curation_forget_purge(bigint, text[]);

CREATE OR REPLACE FUNCTION curation_forget_keys(value jsonb, keys text[], lists text[], marker text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE k text;
BEGIN
    IF value IS NULL OR jsonb_typeof(value) <> 'object' THEN RETURN value; END IF;
    FOREACH k IN ARRAY keys LOOP
        IF jsonb_typeof(value -> k) = 'string' AND value ->> k <> '' THEN
            value := jsonb_set(value, ARRAY[k], to_jsonb(marker));
        END IF;
    END LOOP;
    FOREACH k IN ARRAY lists LOOP
        IF jsonb_typeof(value -> k) = 'array' AND jsonb_array_length(value -> k) > 0 THEN
            value := jsonb_set(value, ARRAY[k], '[]'::jsonb);
        END IF;
    END LOOP;
    RETURN value;
END $$;

CREATE OR REPLACE FUNCTION curation_forget_purge(purged_request bigint, texts text[], quoting_events bigint[],
                                                 quoting_evidence bigint[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    marker text := '[forgotten: request #' || purged_request || ']';
    entry_keys text[] := ARRAY['trigger', 'content', 'boundary', 'recheck_when', 'reason'];
    entry_lists text[] := ARRAY['conditions'];
    derived_keys text[] := ARRAY['reason', 'proposed_trigger', 'proposed_content', 'proposed_boundary'];
    derived_lists text[] := ARRAY['proposed_conditions'];
    every_key text[] := entry_keys || derived_keys;
    every_list text[] := entry_lists || derived_lists;
    ids bigint[];
    changed integer := 0;
    n integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM curation_forgetrequest WHERE id = purged_request AND state = 'approved') THEN
        RAISE EXCEPTION 'curation: forget request % is not approved: nothing is purged', purged_request
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT coalesce(array_agg(f.value::bigint), '{}') INTO ids
    FROM curation_forgetrequest r, jsonb_array_elements_text(r.forgotten_ids) AS f(value)
    WHERE r.id = purged_request;
    PERFORM set_config('memoryadmin.forget_purge', purged_request::text, true);

    -- The forgotten entries' own evidence: its texts whole.
    UPDATE curation_evidence SET excerpt = CASE WHEN excerpt <> '' THEN marker ELSE '' END,
                                 task_ref = CASE WHEN task_ref <> '' THEN marker ELSE '' END
    WHERE entry_id = ANY(ids) AND (excerpt NOT IN ('', marker) OR task_ref NOT IN ('', marker));
    GET DIAGNOSTICS n = ROW_COUNT; changed := changed + n;
    -- Ticked evidence of other entries that quotes the lesson: the quoted texts only.
    UPDATE curation_evidence v SET excerpt = curation_forget_text(v.excerpt, texts, marker),
                                   task_ref = curation_forget_text(v.task_ref, texts, marker)
    WHERE v.id = ANY(quoting_evidence) AND NOT (v.entry_id = ANY(ids))
      AND (curation_forget_text(v.excerpt, texts, marker) <> v.excerpt
           OR curation_forget_text(v.task_ref, texts, marker) <> v.task_ref);
    GET DIAGNOSTICS n = ROW_COUNT; changed := changed + n;

    -- The forgotten entries' own Events: snapshot texts, reason and label whole.
    UPDATE curation_event e SET
        before = curation_forget_keys(e.before, entry_keys, entry_lists, marker),
        after = curation_forget_keys(e.after, entry_keys, entry_lists, marker),
        reason = CASE WHEN e.reason <> '' THEN marker ELSE '' END,
        entry_label = '#' || e.entry_id || ' ' || marker
    WHERE e.entry_id = ANY(ids);
    GET DIAGNOSTICS n = ROW_COUNT; changed := changed + n;
    -- Ticked notes on other entries that quote the lesson (and the Events that recorded ticked evidence):
    -- the quoted texts only, wherever they are in the Event.
    UPDATE curation_event e SET reason = curation_forget_text(e.reason, texts, marker),
                                before = curation_forget_json(e.before, texts, marker, false),
                                after = curation_forget_json(e.after, texts, marker, false)
    WHERE e.id = ANY(quoting_events) AND (e.entry_id IS NULL OR NOT (e.entry_id = ANY(ids)))
      AND (curation_forget_text(e.reason, texts, marker) <> e.reason
           OR curation_forget_json(e.before, texts, marker, false) IS DISTINCT FROM e.before
           OR curation_forget_json(e.after, texts, marker, false) IS DISTINCT FROM e.after);
    GET DIAGNOSTICS n = ROW_COUNT; changed := changed + n;
    -- The request's own Events, and those about what the forgotten entries made (their conflicts and
    -- proposals; a skill's are its withdrawal's): those texts whole; another entry's own snapshot beside them stays.
    WITH related AS (
        SELECT e.id,
               CASE WHEN e.entry_id IS NULL THEN every_key ELSE derived_keys END AS keys,
               CASE WHEN e.entry_id IS NULL THEN every_list ELSE derived_lists END AS lists
        FROM curation_event e
        WHERE (e.entry_id IS NULL OR NOT (e.entry_id = ANY(ids))) AND NOT (e.id = ANY(quoting_events))
          AND (e.forget_request_id = purged_request
               OR e.conflict_id IN (SELECT c.id FROM curation_conflict c
                                    WHERE c.entry_a_id = ANY(ids) OR c.entry_b_id = ANY(ids))
               OR e.proposal_id IN (SELECT p.consolidationproposal_id FROM curation_consolidationproposal_entries p
                                    WHERE p.entry_id = ANY(ids)))
    )
    UPDATE curation_event e SET
        before = curation_forget_keys(e.before, r.keys, r.lists, marker),
        after = curation_forget_keys(e.after, r.keys, r.lists, marker),
        reason = CASE WHEN e.reason <> '' THEN marker ELSE '' END
    FROM related r
    WHERE e.id = r.id
      AND (curation_forget_keys(e.before, r.keys, r.lists, marker) IS DISTINCT FROM e.before
           OR curation_forget_keys(e.after, r.keys, r.lists, marker) IS DISTINCT FROM e.after
           OR e.reason NOT IN ('', marker));
    GET DIAGNOSTICS n = ROW_COUNT; changed := changed + n;

    PERFORM set_config('memoryadmin.forget_purge', '', true);
    RETURN changed;
END $$;

REVOKE ALL ON FUNCTION curation_forget_purge(bigint, text[], bigint[], bigint[]) FROM PUBLIC;
"""

UNPURGE = """
DROP FUNCTION IF EXISTS curation_forget_purge(bigint, text[], bigint[], bigint[]);
DROP FUNCTION IF EXISTS curation_forget_keys(jsonb, text[], text[], text);
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(REFUSE_CHANGE, params=None)
        schema_editor.execute(PURGE, params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNPURGE, params=None)
        schema_editor.execute(OLD_REFUSE_CHANGE, params=None)
        # 0024's function comes back with 0024's definition when that migration is re-applied; here the
        # database is left without a purge until then (migrating back past this is for tests only).


class Migration(migrations.Migration):
    dependencies = [("curation", "0031_held_submissions")]

    operations = [migrations.RunPython(install, uninstall)]
