"""The Events of a bulk write (entry_writes.write_entries), built by the database in one INSERT ... SELECT.

On SQLite the statement reads each entry as it is before the write, and the values the write's UPDATE will
set as the same expressions the UPDATE uses (constants, a CASE per row, F() expressions), evaluated over the
same row, just before write_entries runs that UPDATE, on the rows the caller has locked. On PostgreSQL it is
one statement with the UPDATE: the UPDATE reads each row once (its old values) and its RETURNING gives the
row as written (the new), from which the Events are inserted. Of the state keys whose
column the write sets (the transition's fields), the Event's `before` and `after` hold those whose value
differs, rendered as Entry.snapshot() renders them (models.snapshot_value): what event_deltas.delta of the
two snapshots would store, without reading a row into Python. A float key (the base, the derived
confidence) is the one exception: its rounding is Python's, so write_entries computes it per row, only when
the write can change it (a revival, an outcome), and passes it in with the row.

What reaches the Event's text columns: the reason, redacted here once per distinct text (the column's own
cleaning, as a save would apply it); the label and the snapshot values, read off the entry's columns, which
are redacting columns (redacted when they were written) or vocabulary (status, kind, signal, queue reason;
the scope, held to its characters by access.clean_scope)."""

from __future__ import annotations

import json

from django.db import connection, models
from django.db.models import Q, Value
from django.db.models.expressions import RawSQL

from curation.infra.middleware import current_request_id
from curation.models import DERIVED_CONFIDENCE, STATE_COLUMNS, Entry, Event
from curation.rules.event_deltas import STATE_KEYS
from curation.selectors.sql import pg_array

_UNCHANGED = '$."-"'  # SQLite: a path json_remove finds nothing at


def written_state_keys(columns) -> list[str]:
    """The state keys whose column a write sets (a link given by name or by id), in STATE_KEYS order."""
    attnames = {Entry._meta.get_field(c).attname for c in columns}
    return [key for key, column in STATE_COLUMNS.items() if column in attnames]


def is_python_key(key: str) -> bool:
    """A float (or derived) key: rendered by Python's round(), per row."""
    return key not in STATE_COLUMNS or isinstance(Entry._meta.get_field(key), models.FloatField)


# The Event columns every statement here inserts, in this order.
INSERT_EVENTS = (
    f"INSERT INTO {Event._meta.db_table} (entry_id, entry_label, actor_id, actor_label, action, reason, before, "
    "after, request_id, entry_version, created_at)"
)


def _stamp(at, request_id: str | None) -> tuple[str | None, object]:
    """An Event's request id (the current request's unless given) and `at` as its created_at column stores it."""
    request_id = current_request_id.get() if request_id is None else request_id
    return request_id, Event._meta.get_field("created_at").get_db_prep_save(at, connection)


def _written_with_events(
    rows, target, update, keys, python_keys, python_parts, reasons, actor_label, action, at, request_id
) -> tuple[str, tuple]:
    """events_statement with the UPDATE, on PostgreSQL: the UPDATE writes the rows `target` still finds at the
    version read, each found once (by the index, then by its ctid: the row itself, not a second look-up), and
    its RETURNING gives each written row's Event, the old values from that read of the row, the new from the
    row as written. So an Event is exactly a written row's, and the counts cannot differ."""
    render = _PostgresArrays()
    table = Entry._meta.db_table
    sql_keys = [k for k in keys if k not in python_keys]
    columns = sorted({STATE_COLUMNS[k] for k in sql_keys})
    read = (
        Entry.objects.filter(target)
        .annotate(tid=RawSQL(f'"{table}".ctid', ()))
        .values("tid", "id", "version", *columns)
    )
    read_sql, read_params = read.query.sql_with_params()
    before, after = [], []
    for key in keys:
        if key in python_keys:
            old, newer, keep = render.python(key, 3), render.python(key, 4), render.present(key, 3)
        else:
            field = Entry._meta.get_field(STATE_COLUMNS[key])
            old, new = f"s.{field.column}", f'"{table}".{field.column}'
            # Two values of a column render alike exactly when they are equal: compared as stored, each
            # rendered once.
            old, newer, keep = render.value(field, old), render.value(field, new), f"{old} IS DISTINCT FROM {new}"
        before.append((key, old, keep))
        after.append((key, newer, keep))
    update_sql, update_params = update
    statement = f"""
        WITH written AS (
            {update_sql}
            FROM ({read_sql}) AS s
            JOIN {render.batch()} ON {render.item(0)} = s.id AND {render.item(1)} = s.version
            CROSS JOIN {render.shared()}
            WHERE "{table}".ctid = s.tid
            RETURNING s.id, {render.label(f'"{table}".scope', f'"{table}".trigger')} AS label,
                      {render.object(before)} AS before, {render.object(after)} AS after,
                      {render.item(2, text=True)} AS reason, "{table}".version, {render.position()} AS position
        ), events AS (
            {INSERT_EVENTS}
            SELECT id, label, NULL, %s, %s, reason, before, after, %s, version, %s FROM written ORDER BY position
            RETURNING 1
        )
        SELECT count(*) FROM events"""
    request_id, created_at = _stamp(at, request_id)
    # The placeholders in the order they appear: the UPDATE's, the read's, the batch, the Events'.
    return statement, (
        *update_params,
        *read_params,
        *_arrays(rows, reasons, python_parts),
        actor_label,
        str(action),
        request_id,
        created_at,
    )


def _batch(rows, reasons: dict[int, str], python_parts: dict) -> str:
    """The rows as one JSON parameter: [id, version read, reason, python old, python new] each, in order."""
    return json.dumps(
        [[r["id"], r["version"], reasons[r["id"]], *python_parts.get(r["id"], ({}, {}))] for r in rows],
        separators=(",", ":"),
    )


def _arrays(rows, reasons: dict[int, str], python_parts: dict) -> tuple[str, str, str, str, str]:
    """The rows as _PostgresArrays.batch() and .shared() read them: the ids, the versions read and each row's
    reason by its number, as array literals (pg_array), then the distinct reasons and the python
    parts by id. Read by the database several times faster than the same rows as one JSON document, which a
    batch of thousands with a reason each made large."""
    numbers: dict[str, int] = {}
    for row in rows:
        numbers.setdefault(reasons[row["id"]], len(numbers) + 1)
    return (
        pg_array(row["id"] for row in rows),
        pg_array(row["version"] for row in rows),
        pg_array(numbers[reasons[row["id"]]] for row in rows),
        pg_array(numbers),
        json.dumps({str(pk): parts for pk, parts in python_parts.items()}, separators=(",", ":")),
    )


def events_statement(
    rows,
    target: Q,
    updates: dict,
    *,
    python_parts: dict[int, tuple[dict, dict]],
    python_keys: list[str],
    reasons: dict[int, str],
    actor_label: str,
    action,
    at,
    request_id: str | None,
    update: tuple[str, tuple] | None = None,
) -> tuple[str, tuple]:
    """The INSERT of one Event per row of `rows` (the caller's dicts, with the id and the version it read) that `target` still
    finds at that version, about the write of `updates` (column -> value or expression, the UPDATE's SET)
    that follows or runs in the same statement; with its parameters. `python_parts[pk]` holds the changed
    `python_keys` (old, new). With `update` (PostgreSQL: that UPDATE's `UPDATE ... SET ...`, no WHERE, and its
    parameters), the one statement that writes the rows and their Events, answering the Events written."""
    keys = [k for k in STATE_KEYS if k in python_keys or (k in written_state_keys(updates) and not is_python_key(k))]
    if update is not None:
        return _written_with_events(
            rows, target, update, keys, python_keys, python_parts, reasons, actor_label, action, at, request_id
        )
    by_attname = {Entry._meta.get_field(c).attname: (Entry._meta.get_field(c), v) for c, v in updates.items()}
    new = {}
    for attname, (field, value) in by_attname.items():
        if isinstance(value, models.Model):
            value = value.pk
        new[f"new_{attname}"] = (
            value if hasattr(value, "resolve_expression") else Value(_stored(field, value), output_field=field)
        )
    sql_keys = [k for k in keys if k not in python_keys]
    old_columns = {STATE_COLUMNS[k] for k in sql_keys} | {"scope", "trigger"}
    subquery = Entry.objects.filter(target).annotate(**new).values("id", "version", *sorted(old_columns), *new)
    sub_sql, sub_params = subquery.query.sql_with_params()

    vendor = connection.vendor
    render = _Postgres() if vendor == "postgresql" else _Sqlite()
    before, after = [], []
    for key in keys:
        if key in python_keys:
            old, newer, keep = render.python(key, 3), render.python(key, 4), render.present(key, 3)
        else:
            column = STATE_COLUMNS[key]
            field = Entry._meta.get_field(column)
            new_value = f"s.new_{column}" if f"new_{column}" in new else f"s.{column}"
            old = render.json(field, f"s.{column}")
            newer = render.json(field, render.cast(field, new_value) if new_value != f"s.{column}" else new_value)
            keep = f"({old}) IS DISTINCT FROM ({newer})" if vendor == "postgresql" else f"({old}) IS NOT ({newer})"
        before.append((key, old, keep))
        after.append((key, newer, keep))
    scope = "s.new_scope" if "new_scope" in new else "s.scope"
    trigger = "s.new_trigger" if "new_trigger" in new else "s.trigger"
    batch = _batch(rows, reasons, python_parts)
    statement = f"""
        {INSERT_EVENTS}
        SELECT s.id, {render.label(scope, trigger)}, NULL, %s, %s, {render.item(2, text=True)},
               {render.object(before)}, {render.object(after)}, %s, s.version + 1, %s
        FROM ({sub_sql}) AS s
        JOIN {render.batch()} ON {render.item(0)} = s.id AND {render.item(1)} = s.version
        ORDER BY {render.position()}"""
    request_id, created_at = _stamp(at, request_id)
    # The placeholders in the order they appear: the select list's, the subquery's, the batch.
    return statement, (actor_label, str(action), request_id, created_at, *sub_params, batch)


def insert_first_events(rows: list[tuple[Entry, object, str, str]], *, at, request_id: str | None = None) -> int:
    """The Event of each newly inserted entry, (entry, action, actor label, reason) per row, in one INSERT ...
    SELECT from the entries' rows: its `after` is the entry's whole first version (event_deltas.delta of no
    snapshot), each state key rendered from its column as snapshot_value renders it, the float keys (the base,
    the derived confidence at `at`) by Python, passed in with the row. No actor (an agent's or a policy's
    decision, by label). Answers the Events inserted."""
    if not rows:
        return 0
    render = _Postgres() if connection.vendor == "postgresql" else _Sqlite()
    after = []
    for key in STATE_KEYS:
        if is_python_key(key):
            after.append((key, render.python(key, 4), None))
        else:
            column = STATE_COLUMNS[key]
            after.append((key, render.json(Entry._meta.get_field(column), f"s.{column}"), None))
    reason = Event._meta.get_field("reason")
    stored: dict[str, str] = {}
    batch = []
    floated = [key for key in STATE_KEYS if is_python_key(key)]
    for entry, action, label, text in rows:
        if text not in stored:
            stored[text] = reason.stored(text)  # redacted once per distinct text, as a save would
        floats = {
            key: round(entry.confidence_at(at), 4) if key == DERIVED_CONFIDENCE else round(getattr(entry, key), 4)
            for key in floated
        }
        batch.append([entry.pk, str(action), label, stored[text], floats])
    statement = f"""
        {INSERT_EVENTS}
        SELECT s.id, {render.label("s.scope", "s.trigger")}, NULL, {render.item(2, text=True)},
               {render.item(1, text=True)}, {render.item(3, text=True)}, NULL, {render.whole(after)}, %s, s.version, %s
        FROM {Entry._meta.db_table} AS s
        JOIN {render.batch()} ON {render.item(0)} = s.id
        ORDER BY {render.position()}"""
    request_id, created_at = _stamp(at, request_id)
    with connection.cursor() as cursor:
        cursor.execute(statement, (request_id, created_at, json.dumps(batch, separators=(",", ":"))))
        return cursor.rowcount


def _stored(field, value):
    """What the column stores of `value`: a redacting column's cleaning (as update() applies it)."""
    return field.stored(value) if hasattr(field, "stored") else value


class _Postgres:
    def cast(self, field, sql: str) -> str:
        return f"CAST({sql} AS {field.db_type(connection)})"

    def json(self, field, sql: str) -> str:
        """The column's value as jsonb, as snapshot_value renders it (SQL NULL for a null)."""
        return f"to_jsonb({self.value(field, sql)})"

    def value(self, field, sql: str) -> str:
        """The column's value as jsonb_build_object renders it as snapshot_value does: a time or a date as
        text (a jsonb_build_object argument needs no to_jsonb, which costs as much again)."""
        if isinstance(field, models.DateTimeField):
            # Python's isoformat: microseconds only when there are any, the UTC offset spelled +00:00 (one
            # to_char of it all, the ".000000" of a whole second taken out).
            return (
                f"replace(to_char({sql} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"'), '.000000+', '+')"
            )
        if isinstance(field, models.DateField):
            return f"to_char({sql}, 'YYYY-MM-DD')"
        return sql

    def python(self, key: str, part: int) -> str:
        return f"(b.r->{part}->'{key}')"

    def present(self, key: str, part: int) -> str:
        return f"(b.r->{part}->'{key}') IS NOT NULL"

    def object(self, pairs) -> str:
        if not pairs:
            return "'{}'::jsonb"
        built = ", ".join(f"'{key}', {value}" for key, value, _ in pairs)
        unchanged = ", ".join(f"CASE WHEN NOT ({keep}) THEN '{key}' END" for key, _, keep in pairs)
        return f"(jsonb_build_object({built}) - array_remove(ARRAY[{unchanged}]::text[], NULL))"

    def whole(self, pairs) -> str:
        built = ", ".join(f"'{key}', {value}" for key, value, _ in pairs)
        return f"jsonb_build_object({built})"

    def label(self, scope: str, trigger: str) -> str:
        """Entry.label in SQL, cut to the Event column's length."""
        length = Event._meta.get_field("entry_label").max_length
        return (
            f"left('#' || s.id || ' ' || {scope} || ': ' || CASE WHEN char_length({trigger}) <= 60 THEN {trigger} "
            f"ELSE left({trigger}, 57) || '...' END, {length})"
        )

    def batch(self) -> str:
        return "jsonb_array_elements(CAST(%s AS jsonb)) WITH ORDINALITY AS b(r, n)"

    def item(self, index: int, text: bool = False) -> str:
        return f"(b.r->>{index})" if text else f"(b.r->>{index})::bigint"

    def position(self) -> str:
        return "b.n"


class _PostgresArrays(_Postgres):
    """_Postgres over a write's batch as arrays (_arrays): a row's id, version read and reason's number, and
    beside the rows the distinct reasons and the python parts ({id: [old, new]})."""

    def python(self, key: str, part: int) -> str:
        return f"(p.parts->(b.id::text)->{part - 3}->'{key}')"

    def present(self, key: str, part: int) -> str:
        return f"{self.python(key, part)} IS NOT NULL"

    def batch(self) -> str:
        return (
            "unnest(CAST(%s AS bigint[]), CAST(%s AS bigint[]), CAST(%s AS integer[])) "
            "WITH ORDINALITY AS b(id, version, reason, n)"
        )

    def shared(self) -> str:
        return "CAST(%s AS text[]) AS r(reasons) CROSS JOIN CAST(%s AS jsonb) AS p(parts)"

    def item(self, index: int, text: bool = False) -> str:
        return ("b.id", "b.version", "r.reasons[b.reason]")[index]


class _Sqlite:
    def cast(self, field, sql: str) -> str:
        return sql

    def json(self, field, sql: str) -> str:
        """The column's value as JSON text, as snapshot_value renders it ('null' for a null)."""
        if isinstance(field, models.DateTimeField):
            # Stored as 'YYYY-MM-DD HH:MM:SS[.ffffff]' in UTC: Python's isoformat but for the T and the offset.
            return f"CASE WHEN {sql} IS NULL THEN 'null' ELSE json_quote(replace({sql}, ' ', 'T') || '+00:00') END"
        if isinstance(field, models.BooleanField):
            return f"CASE WHEN {sql} IS NULL THEN 'null' WHEN {sql} THEN 'true' ELSE 'false' END"
        if isinstance(field, models.JSONField):
            return f"coalesce(json({sql}), 'null')"
        return f"json_quote({sql})"

    def python(self, key: str, part: int) -> str:
        return f"json_quote(json_extract(b.value, '$[{part}].{key}'))"

    def present(self, key: str, part: int) -> str:
        return f"json_type(b.value, '$[{part}].{key}') IS NOT NULL"

    def object(self, pairs) -> str:
        if not pairs:
            return "json_object()"
        built = ", ".join(f"'{key}', json({value})" for key, value, _ in pairs)
        unchanged = ", ".join(f"CASE WHEN {keep} THEN '{_UNCHANGED}' ELSE '$.{key}' END" for key, _, keep in pairs)
        return f"json_remove(json_object({built}), {unchanged})"

    def whole(self, pairs) -> str:
        built = ", ".join(f"'{key}', json({value})" for key, value, _ in pairs)
        return f"json_object({built})"

    def label(self, scope: str, trigger: str) -> str:
        length = Event._meta.get_field("entry_label").max_length
        return (
            f"substr('#' || s.id || ' ' || {scope} || ': ' || CASE WHEN length({trigger}) <= 60 THEN {trigger} "
            f"ELSE substr({trigger}, 1, 57) || '...' END, 1, {length})"
        )

    def batch(self) -> str:
        return "json_each(%s) AS b"

    def item(self, index: int, text: bool = False) -> str:
        return f"json_extract(b.value, '$[{index}]')"

    def position(self) -> str:
        return "b.key"
