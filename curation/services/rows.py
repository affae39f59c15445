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
from operator import attrgetter
from typing import Callable

from django.db import connection, models
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
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
    prepare it, by the column's type. One call a column: the read and the type's test are inline."""
    read = _pre_save(field)
    if isinstance(field, models.JSONField):
        return read  # pre_save has cleaned a redacting one; the document carries the value itself
    stored = field.target_field if isinstance(field, models.ForeignKey) else field
    if isinstance(stored, (models.CharField, models.TextField)):
        # A str is written as it is: a redacting column's read is its pre_save, which cleaned it (its
        # get_db_prep_save would clean the cleaned text again, as in bulk_create, and find nothing more).

        def render(obj):
            value = read(obj)
            return value if value is None or isinstance(value, str) else _prepared(field, value)

    elif isinstance(stored, models.BooleanField):

        def render(obj):
            value = read(obj)
            return value if value is None or type(value) is bool else _prepared(field, value)

    elif isinstance(stored, models.IntegerField):  # the auto ids a link stores too
        # int() of an int, as get_prep_value does: a choices member (Trust.AGENT) is written as its number.

        def render(obj):
            value = read(obj)
            if value is None:
                return None
            return int(value) if isinstance(value, int) and type(value) is not bool else _prepared(field, value)

    elif isinstance(stored, models.FloatField):

        def render(obj):
            value = read(obj)
            return value if value is None or type(value) is float else _prepared(field, value)

    elif isinstance(stored, models.DateTimeField):

        def render(obj):
            value = read(obj)
            if value is None:
                return None
            if type(value) is datetime.datetime and value.tzinfo is not None:
                return value.isoformat()
            return _prepared(field, value)

    elif isinstance(stored, models.DateField):

        def render(obj):
            value = read(obj)
            if value is None:
                return None
            return value.isoformat() if type(value) is datetime.date else _prepared(field, value)

    else:

        def render(obj):
            return _prepared(field, read(obj))

    return render


def _pre_save(field) -> Callable[[models.Model], object]:
    """The field's pre_save for an insert; the attribute itself when pre_save is only that."""
    now = isinstance(field, DateTimeCheckMixin) and (field.auto_now or field.auto_now_add)
    if type(field).pre_save in (models.Field.pre_save, models.DateField.pre_save, models.DateTimeField.pre_save):
        if not now:
            return attrgetter(field.attname)
    return lambda obj: field.pre_save(obj, True)


def _prepared(field, value):
    """The value through the field's get_db_prep_save, as JSON that json_populate_recordset reads back into the
    column's type."""
    value = field.get_db_prep_save(value, connection)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return value


def new_instance(model, **values) -> models.Model:
    """`model(**values)`, built as Model.__init__ builds it from keywords: each field's value given or its
    default, a link given as an object set through its descriptor (its id, its cache, the router's checks),
    a new ModelState. Without __init__'s walk of every field with its setattr and its two signals: a batch
    builds ~1,000 of these only to insert them (half of their rendering's cost). Anything this does not
    know (a property, a link's object and id both, a receiver of pre_init or post_init, a field that is not
    a column) is left to the model's own __init__; tests/services/test_insert_rows.py compares the two."""
    plan = _construction(model)
    if plan is None or not plan.takes(values) or pre_init.has_listeners(model) or post_init.has_listeners(model):
        return model(**values)
    obj = model.__new__(model)
    obj._state = ModelState()
    attributes = obj.__dict__
    attributes.update(plan.constants)
    for attname, field in plan.made:
        if attname not in values and field.name not in values:
            attributes[attname] = field.get_default()
    links = []
    for key, value in values.items():
        if key in plan.links:
            links.append((key, value))
        else:
            attributes[key] = value
    for name, value in links:
        setattr(obj, name, value)
    return obj


class _Construction:
    """What new_instance needs of a model, read once: each column's constant default (by attname), the
    fields whose default is made per instance, and the names and attnames of its links."""

    def __init__(self, model):
        fields = [f for f in model._meta.concrete_fields if not f.generated]
        # A default made by a call (default=list, a database default's expression) is made anew for each.
        made = [f for f in fields if (callable(f.default) if f.has_default() else f.has_db_default())]
        self.constants = {f.attname: f.get_default() for f in fields if f not in made}
        self.made = [(f.attname, f) for f in made]
        self.links = frozenset(f.name for f in fields if f.is_relation)
        self.link_attnames = {f.name: f.attname for f in fields if f.is_relation}
        self.known = frozenset(f.attname for f in fields) | self.links

    def takes(self, values: dict) -> bool:
        return values.keys() <= self.known and not any(
            name in values and attname in values for name, attname in self.link_attnames.items()
        )


@cache
def _construction(model) -> _Construction | None:
    opts = model._meta
    if opts.abstract or set(opts.fields) != set(opts.concrete_fields) or any(f.generated for f in opts.fields):
        return None
    if any(f.is_relation and not isinstance(f, models.ForeignKey) for f in opts.concrete_fields):
        return None
    return _Construction(model)
