"""Many new rows of one model inserted in one statement, as bulk_create inserts them but cheaper on PostgreSQL:
the rows go as one JSON document, turned into the table's rows by the database (json_populate_recordset over
the table's row type), where bulk_create compiles every value of every row and psycopg adapts a list per
column item by item (a batch of 500 entries is 22,000 values). The values are the ones bulk_create writes:
each field's pre_save (a redacting column's cleaning, the defaults the instance holds) and its database value,
a time as ISO 8601 with its offset, a JSON column's value as JSON. The instances get their ids, as bulk_create
gives them. Elsewhere (SQLite) bulk_create itself."""

from __future__ import annotations

import datetime
import json

from django.db import connection, models


def insert_rows(objs: list[models.Model]) -> None:
    """Insert `objs` (new instances of one model, no id yet) and set their ids."""
    if not objs:
        return
    model = type(objs[0])
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs)
        return
    opts = model._meta
    fields = [f for f in opts.concrete_fields if f is not opts.pk and not f.generated]
    rows = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")
        rows.append({field.column: _json_value(field, obj) for field in fields})
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(opts.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} "
            f"FROM json_populate_recordset(NULL::{table}, CAST(%s AS json)) RETURNING {opts.pk.column}",
            [json.dumps(rows, separators=(",", ":"))],
        )
        ids = cursor.fetchall()
    for obj, (pk,) in zip(objs, ids, strict=True):  # in the order given, as bulk_create reads them
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias


def _json_value(field, obj):
    """The field's value as bulk_create writes it, as JSON that json_populate_recordset reads back into the
    column's type."""
    value = field.pre_save(obj, True)
    if isinstance(field, models.JSONField):
        return value  # pre_save has cleaned a redacting one; the document carries the value itself
    value = field.get_db_prep_save(value, connection)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return value
