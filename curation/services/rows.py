"""Many new rows of one model inserted in one statement, as bulk_create inserts them but cheaper on PostgreSQL:
the rows go as one JSON document, turned into the table's rows by the database (json_populate_recordset over
the table's row type), where bulk_create compiles every value of every row and psycopg adapts a list per
column item by item (a batch of 500 entries is 22,000 values). The values are the ones bulk_create writes:
each field's pre_save (a redacting column's cleaning, the defaults the instance holds) and its database value,
a time as ISO 8601 with its offset, a JSON column's value as JSON. The instances get their ids, as bulk_create
gives them. Elsewhere (SQLite) bulk_create itself.

Each column's way into the document is decided once per model (`_renderers`): a value of the type the column
stores (a str for a text column, an int, a float, a bool, an aware datetime, a date) is written as the field
would prepare it, without passing through the field's machinery (most of the statement's cost here: 22,000
calls of get_db_prep_save); any other value (a naive time, a lazy string, a number given as text) takes the
field's own way, so the column still holds what bulk_create writes."""

from __future__ import annotations

import datetime
import json
from functools import cache
from typing import Callable

from django.db import connection, models
from django.db.models.fields import DateTimeCheckMixin


def insert_rows(objs: list[models.Model]) -> None:
    """Insert `objs` (new instances of one model, no id yet) and set their ids."""
    if not objs:
        return
    model = type(objs[0])
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs)
        return
    opts = model._meta
    renderers = _renderers(model)
    rows = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")
        rows.append({column: render(obj) for column, render in renderers})
    columns = ", ".join(connection.ops.quote_name(column) for column, _ in renderers)
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


@cache
def _renderers(model) -> list[tuple[str, Callable[[models.Model], object]]]:
    """(column, the instance's value for it in the document) of every column an insert writes, in order."""
    opts = model._meta
    return [(f.column, _renderer(f)) for f in opts.concrete_fields if f is not opts.pk and not f.generated]


def _renderer(field) -> Callable[[models.Model], object]:
    """How `field`'s value goes into the document: the value pre_save gives, then as get_db_prep_save would
    prepare it, by the column's type."""
    read = _pre_save(field)
    if isinstance(field, models.JSONField):
        return read  # pre_save has cleaned a redacting one; the document carries the value itself
    stored = field.target_field if isinstance(field, models.ForeignKey) else field
    if isinstance(stored, (models.CharField, models.TextField)):
        # A redacting column's get_db_prep_save cleans again what its pre_save cleaned, as in bulk_create.
        clean = getattr(field, "stored", None)
        return _when(read, field, lambda value: isinstance(value, str), clean)
    if isinstance(stored, models.BooleanField):
        return _when(read, field, lambda value: type(value) is bool)
    if isinstance(stored, models.IntegerField):  # the auto ids a link stores too
        # int() of an int, as get_prep_value does: a choices member (Trust.AGENT) is written as its number.
        return _when(read, field, lambda value: isinstance(value, int) and type(value) is not bool, int)
    if isinstance(stored, models.FloatField):
        return _when(read, field, lambda value: type(value) is float)
    if isinstance(stored, models.DateTimeField):
        return _when(read, field, lambda value: type(value) is datetime.datetime and value.tzinfo is not None, _iso)
    if isinstance(stored, models.DateField):
        return _when(read, field, lambda value: type(value) is datetime.date, _iso)
    return lambda obj: _prepared(field, read(obj))


def _pre_save(field) -> Callable[[models.Model], object]:
    """The field's pre_save for an insert; the attribute itself when pre_save is only that."""
    now = isinstance(field, DateTimeCheckMixin) and (field.auto_now or field.auto_now_add)
    if type(field).pre_save in (models.Field.pre_save, models.DateField.pre_save, models.DateTimeField.pre_save):
        if not now:
            attname = field.attname
            return lambda obj: getattr(obj, attname)
    return lambda obj: field.pre_save(obj, True)


def _iso(value) -> str:
    return value.isoformat()


def _when(read, field, plain: Callable[[object], bool], finish: Callable[[object], object] | None = None):
    """None as None, a value `plain` says the column takes as it is (after `finish`) as it is; any other
    through the field's own way."""

    def render(obj):
        value = read(obj)
        if value is None:
            return None
        if plain(value):
            return value if finish is None else finish(value)
        return _prepared(field, value)

    return render


def _prepared(field, value):
    """The value through the field's get_db_prep_save, as JSON that json_populate_recordset reads back into the
    column's type."""
    value = field.get_db_prep_save(value, connection)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return value
