"""On PostgreSQL the history that grows with traffic is partitioned by month: the Events and the retrieved
entries (one row per entry handed to an agent) become tables PARTITION BY RANGE (created_at), one partition
a month and a DEFAULT one. An entry's history still reads one index (each partition has it); old months can
be vacuumed, moved or detached whole, and no single heap grows without bound.

- A partitioned table's primary key must hold the partition key: the database's key is (id, created_at)
  while Django keeps `id` as the pk. The ids still come from one sequence (the table's identity, its value
  carried over), so `id` stays unique.
- The product's clock may be replayed (rules/clock.py): an Event may be written far in the past or future.
  The DEFAULT partition catches any row no month's partition holds, so a write never fails for its date.
- `curation_create_partition(parent, month)` makes one month's partition: owned by the tables' owner and
  SECURITY DEFINER, so the `partitions` sweep can run it as the application role (which may not create
  tables). It moves the rows of that month out of DEFAULT first, and gives the partition the parent's grants
  (grants do not pass from a partitioned table to its partitions; the row triggers do, on PostgreSQL 13+).
- The append-only trigger fires on each partition under the partition's own name: it now looks up the
  table the partition belongs to, so a forget's purge still rewrites Events' text in every partition.

Nothing references these two tables by foreign key (a key referencing a partitioned table would have to name
the partition key too). Retrievals and feedback stay whole tables: feedback is one per retrieval by a unique
key on its retrieval alone, which a partitioned table cannot keep, and both are referenced by key.

Reversible: the reverse copies the rows back into a plain table of the same name, indexes and keys.
On SQLite nothing changes."""

from django.db import migrations

# The tables made partitioned, by their partition key.
PARTITIONED = {"curation_event": "created_at", "curation_retrievedentry": "created_at"}
# Months of existing rows older than this get no partition of their own: they stay in DEFAULT.
YEARS_BACK = 5
MONTHS_AHEAD = 3

REFUSE_CHANGE = """
CREATE OR REPLACE FUNCTION curation_refuse_change() RETURNS trigger AS $$
DECLARE
    purging text := current_setting('memoryadmin.forget_purge', true);
    text_columns text[] := ARRAY['before', 'after', 'reason', 'entry_label', 'excerpt', 'task_ref'];
    -- A partition's trigger fires under the partition's name: the rule is the partitioned table's.
    tablename text := (SELECT relname FROM pg_class WHERE oid = coalesce(pg_partition_root(TG_RELID), TG_RELID));
BEGIN
    -- A forget's purge (curation_forget_purge) rewrites text columns of events and evidence, nothing else.
    IF TG_OP = 'UPDATE' AND coalesce(purging, '') <> ''
       AND tablename IN ('curation_event', 'curation_evidence')
       AND (to_jsonb(NEW) - text_columns) = (to_jsonb(OLD) - text_columns) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'curation: % on % is refused: evidence and events are append-only', TG_OP, tablename
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

# 0032's, put back by the reverse.
OLD_REFUSE_CHANGE = """
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

CREATE_PARTITION = """
CREATE OR REPLACE FUNCTION curation_create_partition(parent text, month date) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
-- Making a partition locks the table briefly: behind a long query it gives up rather than queue every write
-- behind itself (the sweep runs daily, months ahead: the next run makes it).
SET lock_timeout = '5s' AS $$
DECLARE
    -- Months in UTC, whatever the session's time zone.
    lo timestamptz := date_trunc('month', month)::timestamp AT TIME ZONE 'UTC';
    hi timestamptz := (date_trunc('month', month) + interval '1 month')::timestamp AT TIME ZONE 'UTC';
    part text := parent || '_' || to_char(month, '"y"YYYY"m"MM');
    fallback text := parent || '_default';
    stray boolean;
    g record;
BEGIN
    IF parent NOT IN ('curation_event', 'curation_retrievedentry')
       OR NOT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(parent)) THEN
        RAISE EXCEPTION 'curation: % is not a partitioned history table', parent
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE created_at >= $1 AND created_at < $2)', fallback)
        INTO stray USING lo, hi;
    IF stray THEN
        -- Rows of this month written earlier (a replayed clock) sit in DEFAULT, which would then overlap the
        -- new partition: take DEFAULT out, move them, put it back. Only the owner does this, here. Keys checked
        -- at commit (Django's are deferred) are checked now: a table with pending checks cannot be altered.
        SET CONSTRAINTS ALL IMMEDIATE;
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', parent, fallback);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', part, parent, lo, hi);
        EXECUTE format('ALTER TABLE %I DISABLE TRIGGER USER', fallback);
        EXECUTE format('WITH moved AS (DELETE FROM %I WHERE created_at >= $1 AND created_at < $2 RETURNING *) '
                       'INSERT INTO %I SELECT * FROM moved', fallback, part) USING lo, hi;
        EXECUTE format('ALTER TABLE %I ENABLE TRIGGER USER', fallback);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I DEFAULT', parent, fallback);
        SET CONSTRAINTS ALL DEFERRED;
    ELSE
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', part, parent, lo, hi);
    END IF;
    -- Grants are not inherited: the partition gets exactly the parent's (db_roles grants the parent).
    FOR g IN
        SELECT a.grantee, string_agg(a.privilege_type, ', ') AS privileges
        FROM pg_class c, aclexplode(c.relacl) a
        WHERE c.oid = to_regclass(parent) AND a.grantee <> c.relowner
        GROUP BY a.grantee
    LOOP
        EXECUTE format('GRANT %s ON %I TO %s', g.privileges, part,
                       CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END);
    END LOOP;
    RETURN true;
END $$;
"""


def _rows(cursor, sql, params=None):
    cursor.execute(sql, params)
    return cursor.fetchall()


def _rebuild(cursor, table: str, *, partitioned: bool) -> None:
    """Copy `table` into a new table of the same name, partitioned by month or plain, with the same columns,
    identity value, check constraints, indexes, foreign keys and triggers."""
    key = PARTITIONED[table]
    old = f"{table}_unpartitioned" if partitioned else f"{table}_partitioned"
    indexes = _rows(
        cursor,
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = %s::regclass AND NOT i.indisprimary",
        [table],
    )
    foreign_keys = _rows(
        cursor,
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype = 'f' AND conparentid = 0",
        [table],
    )
    triggers = _rows(
        cursor,
        "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger "
        "WHERE tgrelid = %s::regclass AND NOT tgisinternal AND tgparentid = 0",
        [table],
    )
    (pkey,) = _rows(
        cursor, "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'", [table]
    )[0]
    (sequence,) = _rows(cursor, "SELECT pg_get_serial_sequence(%s, 'id')", [table])[0]
    (last_value, is_called) = _rows(cursor, f"SELECT last_value, is_called FROM {sequence}")[0]
    grants = _rows(
        cursor,
        "SELECT a.grantee::regrole::text, string_agg(a.privilege_type, ', ') FROM pg_class c, aclexplode(c.relacl) a "
        "WHERE c.oid = %s::regclass AND a.grantee NOT IN (0, c.relowner) GROUP BY a.grantee",
        [table],
    )

    # The old table steps aside: its name, its key's and its indexes' names are the new one's.
    cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
    cursor.execute(f"ALTER TABLE {old} RENAME CONSTRAINT {pkey} TO {pkey}_old")
    for name, _definition in indexes:
        cursor.execute(f"DROP INDEX {name}")

    shape = f" PARTITION BY RANGE ({key})" if partitioned else ""
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY "
        f"INCLUDING STORAGE){shape}"
    )
    if partitioned:
        cursor.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
        # A month of its own for every recent month that has rows, and for this month and the next few.
        months = _rows(
            cursor,
            f"SELECT DISTINCT date_trunc('month', {key} AT TIME ZONE 'UTC')::date FROM {old} "
            f"WHERE {key} >= now() - interval '{YEARS_BACK} years' "
            f"  AND {key} < date_trunc('month', now() AT TIME ZONE 'UTC') + interval '{MONTHS_AHEAD + 1} months' "
            f"UNION SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + n * interval '1 month')::date "
            f"FROM generate_series(0, {MONTHS_AHEAD}) AS n ORDER BY 1",
        )
        for (month,) in months:
            cursor.execute("SELECT curation_create_partition(%s, %s)", [table, month])
    cursor.execute(f"INSERT INTO {table} SELECT * FROM {old}")
    cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {pkey} PRIMARY KEY (id{', ' + key if partitioned else ''})")
    cursor.execute(f"DROP TABLE {old}")
    # The new identity's sequence takes the old one's name and place: ids go on where they were.
    (new_sequence,) = _rows(cursor, "SELECT pg_get_serial_sequence(%s, 'id')", [table])[0]
    if new_sequence != sequence:
        cursor.execute(f"ALTER SEQUENCE {new_sequence} RENAME TO {sequence.split('.')[-1]}")
    cursor.execute("SELECT setval(%s, %s, %s)", [sequence, last_value, is_called])
    for _name, definition in indexes:
        cursor.execute(definition)
    for name, definition in foreign_keys:
        cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
    for _name, definition in triggers:
        cursor.execute(definition)
    for grantee, privileges in grants:
        cursor.execute(f"GRANT {privileges} ON {table} TO {grantee}")
        if partitioned:
            for (partition,) in _rows(
                cursor, "SELECT relid::regclass::text FROM pg_partition_tree(%s) WHERE isleaf", [table]
            ):
                cursor.execute(f"GRANT {privileges} ON {partition} TO {grantee}")


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(REFUSE_CHANGE)
        cursor.execute(CREATE_PARTITION)
        for table in PARTITIONED:
            _rebuild(cursor, table, partitioned=True)


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table in PARTITIONED:
            _rebuild(cursor, table, partitioned=False)
        cursor.execute("DROP FUNCTION IF EXISTS curation_create_partition(text, date)")
        cursor.execute(OLD_REFUSE_CHANGE)


class Migration(migrations.Migration):
    # The copy is one transaction per table set: a failure leaves the tables as they were.
    dependencies = [("curation", "0047_entry_bands")]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
