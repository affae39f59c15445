"""On PostgreSQL the agents' reads and their outcomes are partitioned by month too (0048 did the Events and
the retrieved entries): `curation_retrieval` by RANGE (id), `curation_feedback` by RANGE (retrieval_id),
one partition a month and a DEFAULT one.

- A retrieval's id is a UUID of version 7 made from the read's own time (usage.time_ordered_id): its first
  48 bits are its Unix milliseconds, so a month of reads is a range of ids, from the month's first
  millisecond with every other bit 0 to the next month's. The key is the id itself, so `id` stays the
  primary key alone: unique across the partitions, which the buffered flush's ON CONFLICT (id) needs.
- Feedback is one per retrieval by a unique key on `retrieval_id`, which holds the partition key: the
  database keeps it whole. Its primary key at the database level is (id, retrieval_id) while Django keeps
  `id` as the pk; the ids come from one identity sequence (its value carried over), so `id` stays unique.
- Every foreign key stays: the retrieved entries' and the feedback's to a retrieval (PostgreSQL checks a key
  that refers to a partitioned table against all its partitions), the retrieval's to its token.
- The ids made before version 7 are random: their first 48 bits are no time, so most such rows land in
  DEFAULT (a few fall inside some month's range and live there; either way a row is found by its id). So do
  the reads of a replayed clock (rules/clock.py) outside the months made: a write never fails for its id.
- `curation_create_partition` now reads the table's partition key from the catalogue (a time, or a
  time-ordered id) and makes the month's bounds of that type. A retrieval is referred to, so its rows
  cannot leave DEFAULT by detaching it as 0048's move does (PostgreSQL refuses to detach a partition other
  rows refer to, and a deferred key check fired on DEFAULT looks for the row in DEFAULT only): the rows
  that refer to the month's retrievals step out with them and come back after, under a lock that holds
  every writer of retrievals meanwhile. That happens only when a replayed clock wrote ahead of the sweep.
- Neither table has the append-only trigger (a forget's purge rewrites a retrieval's query; the feedback's
  are counters' inputs): a partition has exactly its table's grants, copied as for the history.

Reversible: the reverse copies the rows back into plain tables of the same names, keys and indexes, and
puts 0048's function back. On SQLite nothing changes."""

import importlib

from django.db import migrations

history = importlib.import_module("curation.migrations.0048_partitioned_history")

# The tables made partitioned, by their partition key.
PARTITIONED = {"curation_retrieval": "id", "curation_feedback": "retrieval_id"}
YEARS_BACK = history.YEARS_BACK
MONTHS_AHEAD = history.MONTHS_AHEAD

CREATE_PARTITION = """
CREATE OR REPLACE FUNCTION curation_create_partition(parent text, month date) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
-- Making a partition locks the table briefly: behind a long query it gives up rather than queue every write
-- behind itself (the sweep runs daily, months ahead: the next run makes it).
SET lock_timeout = '5s' AS $$
DECLARE
    -- Months in UTC, whatever the session's time zone.
    lo_time timestamptz := date_trunc('month', month)::timestamp AT TIME ZONE 'UTC';
    hi_time timestamptz := (date_trunc('month', month) + interval '1 month')::timestamp AT TIME ZONE 'UTC';
    part text := parent || '_' || to_char(month, '"y"YYYY"m"MM');
    fallback text := parent || '_default';
    key text;
    key_type regtype;
    lo text;
    hi text;
    stray boolean;
    referring text[];
    referring_keys text[];
    i integer;
    g record;
BEGIN
    IF parent NOT IN ('curation_event', 'curation_retrievedentry', 'curation_retrieval', 'curation_feedback')
       OR NOT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(parent)) THEN
        RAISE EXCEPTION 'curation: % is not a partitioned history table', parent
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- The month's bounds in the key's own type: a time, or a time-ordered id (a UUID of version 7, whose
    -- first 48 bits are its Unix milliseconds: the month's first id has them and every other bit 0).
    SELECT a.attname, a.atttypid::regtype INTO key, key_type
    FROM pg_partitioned_table p JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
    WHERE p.partrelid = to_regclass(parent);
    IF key_type = 'uuid'::regtype THEN
        IF lo_time < timestamptz '1970-01-01 00:00+00' OR hi_time > timestamptz '10000-01-01 00:00+00' THEN
            RAISE EXCEPTION 'curation: no time-ordered ids in %', to_char(month, 'YYYY-MM')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        lo := (lpad(to_hex((extract(epoch FROM lo_time) * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid::text;
        hi := (lpad(to_hex((extract(epoch FROM hi_time) * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid::text;
    ELSE
        lo := lo_time::text;
        hi := hi_time::text;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE %I >= %L AND %I < %L)', fallback, key, lo, key, hi)
        INTO stray;
    SELECT array_agg(c.conrelid::regclass::text ORDER BY c.oid), array_agg(a.attname::text ORDER BY c.oid)
        INTO referring, referring_keys
    FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
    WHERE c.confrelid = to_regclass(parent) AND c.contype = 'f' AND c.conparentid = 0;
    IF stray AND referring IS NOT NULL THEN
        -- Rows other rows refer to (retrievals) cannot leave DEFAULT while they are referred to: PostgreSQL
        -- refuses to detach it, and a deferred key check fired on DEFAULT looks there only. The referring rows
        -- of this month's ids step out too, then all come back, referred to before referring. The table's lock
        -- holds every writer meanwhile, and the key checks of theirs, which read it. Keys checked now.
        SET CONSTRAINTS ALL IMMEDIATE;
        EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', parent);
        FOR i IN 1 .. array_length(referring, 1) LOOP
            EXECUTE format('CREATE TEMP TABLE %I AS WITH moved AS (DELETE FROM %s WHERE %I >= %L AND %I < %L '
                           'RETURNING *) SELECT * FROM moved', 'curation_moving_' || i, referring[i],
                           referring_keys[i], lo, referring_keys[i], hi);
        END LOOP;
        EXECUTE format('CREATE TEMP TABLE curation_moving_0 AS WITH moved AS (DELETE FROM %I WHERE %I >= %L '
                       'AND %I < %L RETURNING *) SELECT * FROM moved', fallback, key, lo, key, hi);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', part, parent, lo, hi);
        EXECUTE format('INSERT INTO %I SELECT * FROM curation_moving_0', part);
        DROP TABLE curation_moving_0;
        FOR i IN 1 .. array_length(referring, 1) LOOP
            EXECUTE format('INSERT INTO %s SELECT * FROM %I', referring[i], 'curation_moving_' || i);
            EXECUTE format('DROP TABLE %I', 'curation_moving_' || i);
        END LOOP;
        SET CONSTRAINTS ALL DEFERRED;
    ELSIF stray THEN
        -- Rows of this month written earlier (a replayed clock) sit in DEFAULT, which would then overlap the
        -- new partition: take DEFAULT out, move them, put it back. Only the owner does this, here. Keys checked
        -- at commit (Django's are deferred) are checked now: a table with pending checks cannot be altered.
        SET CONSTRAINTS ALL IMMEDIATE;
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', parent, fallback);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', part, parent, lo, hi);
        EXECUTE format('ALTER TABLE %I DISABLE TRIGGER USER', fallback);
        EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING *) '
                       'INSERT INTO %I SELECT * FROM moved', fallback, key, lo, key, hi, part);
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

_rows = history._rows


def _months(cursor, table: str, key: str) -> list:
    """The months that get a partition: every recent month some time-ordered id of `table` falls in (an id of
    version 7; a random one says no time), and this month and the next few."""
    return [
        month
        for (month,) in _rows(
            cursor,
            f"SELECT DISTINCT date_trunc('month', to_timestamp(ms / 1000.0) AT TIME ZONE 'UTC')::date "
            f"FROM (SELECT ('x' || left(replace({key}::text, '-', ''), 12))::bit(48)::bigint AS ms FROM {table} "
            f"      WHERE substr({key}::text, 15, 1) = '7') AS ids "
            f"WHERE to_timestamp(ms / 1000.0) >= now() - interval '{YEARS_BACK} years' "
            f"  AND to_timestamp(ms / 1000.0) AT TIME ZONE 'UTC' "
            f"      < date_trunc('month', now() AT TIME ZONE 'UTC') + interval '{MONTHS_AHEAD + 1} months' "
            f"UNION SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + n * interval '1 month')::date "
            f"FROM generate_series(0, {MONTHS_AHEAD}) AS n ORDER BY 1",
        )
    ]


def _referring(cursor) -> list:
    """The foreign keys that refer to the tables rebuilt (the retrieved entries' and the feedback's to their
    retrieval), read while they still name the tables as they are."""
    return _rows(
        cursor,
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE confrelid = ANY(%s::regclass[]) AND contype = 'f' AND conparentid = 0 ORDER BY conname",
        [list(PARTITIONED)],
    )


def _rebuild(cursor, table: str, *, months) -> None:
    """Copy `table` into a new table of the same name, partitioned by month (`months` given) or plain, with
    the same columns, identity value, check and unique constraints, indexes, its own foreign keys, triggers
    and grants. The keys that refer to it are the caller's to drop before and add after."""
    key = PARTITIONED[table]
    partitioned = months is not None
    old = f"{table}_unpartitioned" if partitioned else f"{table}_partitioned"
    indexes = _rows(
        cursor,
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = %s::regclass AND NOT EXISTS ("
        "  SELECT 1 FROM pg_constraint k WHERE k.conrelid = i.indrelid AND k.conindid = i.indexrelid)",
        [table],
    )
    uniques = _rows(
        cursor,
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype = 'u' AND conparentid = 0",
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
    if sequence:
        (last_value, is_called) = _rows(cursor, f"SELECT last_value, is_called FROM {sequence}")[0]
    grants = _rows(
        cursor,
        "SELECT a.grantee::regrole::text, string_agg(a.privilege_type, ', ') FROM pg_class c, aclexplode(c.relacl) a "
        "WHERE c.oid = %s::regclass AND a.grantee NOT IN (0, c.relowner) GROUP BY a.grantee",
        [table],
    )

    # The old table steps aside: its name, its keys' and its indexes' names are the new one's.
    cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
    for name in [pkey] + [name for name, _definition in uniques]:
        cursor.execute(f"ALTER TABLE {old} RENAME CONSTRAINT {name} TO {name}_old")
    for name, _definition in indexes:
        cursor.execute(f"DROP INDEX {name}")

    shape = f" PARTITION BY RANGE ({key})" if partitioned else ""
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY "
        f"INCLUDING STORAGE){shape}"
    )
    if partitioned:
        cursor.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
        for month in months:
            cursor.execute("SELECT curation_create_partition(%s, %s)", [table, month])
    cursor.execute(f"INSERT INTO {table} SELECT * FROM {old}")
    primary = "id" if key == "id" or not partitioned else f"id, {key}"
    cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {pkey} PRIMARY KEY ({primary})")
    for name, definition in uniques:
        cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
    cursor.execute(f"DROP TABLE {old}")
    if sequence:
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


def _rebuild_both(cursor, *, partitioned: bool) -> None:
    referring = _referring(cursor)
    for referrer, name, _definition in referring:
        cursor.execute(f"ALTER TABLE {referrer} DROP CONSTRAINT {name}")
    # The feedback's months are its retrievals': one list for both, read before either moves.
    months = _months(cursor, "curation_retrieval", "id") if partitioned else None
    for table in PARTITIONED:
        _rebuild(cursor, table, months=months)
    # Checked again as they are added: every retrieved entry and feedback still has its retrieval.
    for referrer, name, definition in referring:
        cursor.execute(f"ALTER TABLE {referrer} ADD CONSTRAINT {name} {definition}")


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(CREATE_PARTITION)
        _rebuild_both(cursor, partitioned=True)


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        _rebuild_both(cursor, partitioned=False)
        cursor.execute(history.CREATE_PARTITION)


class Migration(migrations.Migration):
    # One transaction: a failure leaves the tables as they were.
    dependencies = [("curation", "0053_forget_purge_evidence_text")]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
