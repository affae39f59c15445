"""Confidence where it is read, in SQL: the twin of Entry.confidence_at and lifecycle.confidence_at, for
the queries that filter, order or count by it (retrieval, the queues' filters, the dashboard, the sweeps).
tests/sweeps/test_lifecycle_rules.py checks, case by case, that the two agree."""

from __future__ import annotations

import datetime

from django.db import connections
from django.db.models import Case, DateTimeField, Expression, F, FloatField, Func, Q, Value, When
from django.db.models.functions import Coalesce, Greatest, Least, Ln, Power
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual

from curation.rules import clock, lifecycle
from curation.models import Entry, Status


class DaysBetween(Func):
    """(end − start) in days, as a float, on PostgreSQL and SQLite."""

    output_field = FloatField()

    def __init__(self, start, end):
        super().__init__(end, start)

    def as_postgresql(self, compiler, conn, **extra):
        return super().as_sql(
            compiler,
            conn,
            template="(EXTRACT(EPOCH FROM (%(expressions)s))::double precision / 86400.0)",
            arg_joiner=" - ",
            **extra,
        )

    def as_sqlite(self, compiler, conn, **extra):
        return super().as_sql(
            compiler, conn, template="(julianday(%(expressions)s))", arg_joiner=") - julianday(", **extra
        )


def _moment(at: datetime.datetime):
    return Value(at, output_field=DateTimeField())


def _decayed(base, verified_from, until, rules: lifecycle.Rules):
    """lifecycle.decayed(): GREATEST(floor, LEAST(ceiling, base × factor ^ (max(0, days unverified) / period)))."""
    days = Greatest(Value(0.0), DaysBetween(verified_from, until))
    return Greatest(
        Value(rules.floor),
        Least(
            Value(rules.ceiling), base * Power(Value(rules.decay_factor), days / Value(float(rules.decay_period_days)))
        ),
        output_field=FloatField(),
    )


def confidence(at: datetime.datetime, rules: lifecycle.Rules, prefix: str = ""):
    """Entry.confidence_at(at) in SQL, for an entry (or the entry at `prefix`, e.g. "entry_a__"): decaying
    until `at` while active, until it left the active set after that, its base if it never was active."""

    def column(name):
        return F(prefix + name)

    verified_from = Coalesce(column("last_verified_at"), column("created_at"))
    return Case(
        When(
            **{prefix + "status": Status.ACTIVE},
            then=_decayed(column("base_confidence"), verified_from, _moment(at), rules),
        ),
        When(
            **{prefix + "decay_stopped_at__isnull": False},
            then=_decayed(column("base_confidence"), verified_from, column("decay_stopped_at"), rules),
        ),
        default=column("base_confidence"),
        output_field=FloatField(),
    )


class RowConfidence(Expression):
    """confidence(at, rules) of the query's own entry row, its SQL compiled once per decay rules and database
    (`compiled`) and bound to `at` each time: a sweep's statements compile the same expression every batch
    and every run, and Django's compilation of it cost more of the worker than the statement's other parts.
    Over another alias of the table (a join) it is compiled as confidence() is."""

    def __init__(self, at: datetime.datetime, rules: lifecycle.Rules):
        super().__init__(output_field=FloatField())
        self.at, self.rules = at, rules

    @property
    def identity(self):  # the rules hold a dict: compared by what the SQL is made of
        return (type(self), self.at, *_settings(self.rules))

    def as_sql(self, compiler, connection):
        if compiler.query.base_table != Entry._meta.db_table:
            return compiler.compile(confidence(self.at, self.rules).resolve_expression(compiler.query))
        sql, params, at_positions = compiled(connection.alias, self.rules)
        at = _moment(self.at).output_field.get_db_prep_value(self.at, connection)
        params = list(params)
        for position in at_positions:
            params[position] = at
        return sql, params


# A moment no rule's constant equals: where it lands in the compiled parameters, each use puts its own `at`.
_MARK = datetime.datetime(1999, 12, 31, 23, 59, 59, 123457, tzinfo=datetime.timezone.utc)


def compiled(using: str, rules: lifecycle.Rules) -> tuple[str, tuple, tuple[int, ...]]:
    """confidence(at, rules) over an entry's own columns as the database `using` reads it: (its SQL, its
    parameters with a mark for `at`, the positions of the mark). Kept by what the SQL is made of: the
    database and the decay settings."""
    from django.db.models.sql import Query

    key = (using, *_settings(rules))
    if key not in _COMPILED:
        connection = connections[using]
        query = Query(Entry)
        sql, params = query.get_compiler(connection=connection).compile(
            confidence(_MARK, rules).resolve_expression(query)
        )
        mark = _moment(_MARK).output_field.get_db_prep_value(_MARK, connection)
        _COMPILED[key] = (sql, tuple(params), tuple(i for i, value in enumerate(params) if value == mark))
    return _COMPILED[key]


def _settings(rules: lifecycle.Rules) -> tuple:
    """What of the rules confidence() is made of."""
    return rules.floor, rules.ceiling, rules.decay_factor, rules.decay_period_days


_COMPILED: dict[tuple, tuple[str, tuple, tuple[int, ...]]] = {}  # a few settings in a process's life


def released_confidence(at: datetime.datetime, rules: lifecycle.Rules):
    """ReleasedEntry.confidence in SQL: decaying since the verification (a row without one keeps its base)."""
    return Case(
        When(
            last_verified_at__isnull=False,
            then=_decayed(F("base_confidence"), F("last_verified_at"), _moment(at), rules),
        ),
        default=F("base_confidence"),
        output_field=FloatField(),
    )


def confidence_sql(base: str, verified_from: str, rules: lifecycle.Rules) -> str:
    """The same decay in raw PostgreSQL for the ranking queries, at %(now)s, for an active entry or a
    released row: `base` and `verified_from` are SQL over the row's columns."""
    days = f"GREATEST(0.0, EXTRACT(EPOCH FROM (%(now)s - {verified_from}))::double precision / 86400.0)"
    decayed = f"{base} * POWER({float(rules.decay_factor)!r}, {days} / {float(rules.decay_period_days)!r})"
    return f"GREATEST({float(rules.floor)!r}, LEAST({float(rules.ceiling)!r}, {decayed}))"


def with_current_confidence(rows, *, released: bool = False, at: datetime.datetime | None = None):
    """`rows` (entries, or released rows) with their confidence at `at` (the one clock's now) as the alias
    `current_confidence`, to filter and order by. An alias, not an annotation: `confidence` is the model's
    own derived property."""
    at = at or clock.now()
    rules = lifecycle.rules()
    return rows.alias(current_confidence=released_confidence(at, rules) if released else confidence(at, rules))


def confidence_at_least(value: float, at: datetime.datetime, prefix: str = ""):
    """A filter condition (for Q or filter()): the entry's (at `prefix`) confidence at `at` is `value` or more."""
    return GreaterThanOrEqual(confidence(at, lifecycle.rules(), prefix), value)


def confidence_at_most(value: float, at: datetime.datetime, prefix: str = ""):
    return LessThanOrEqual(confidence(at, lifecycle.rules(), prefix), value)


def decay_key(rules: lifecycle.Rules):
    """lifecycle.decay_key in SQL, over an entry's own columns: for rewriting many keys in one statement."""
    verified_from = Coalesce(F("last_verified_at"), F("created_at"))
    return Ln(Greatest(F("base_confidence"), Value(lifecycle.LOWEST_BASE))) + Value(
        lifecycle.decay_rate(rules)
    ) * DaysBetween(_moment(lifecycle.EPOCH), verified_from)


def keyed_under_other_settings(rules: lifecycle.Rules) -> Q:
    """Entries whose decay key was written under other decay settings (or never, for rows loaded by plain
    SQL): the index cannot judge them until the decay sweep rewrites their keys. Two ranges, so that the
    partial index on decay_rate serves it."""
    rate = lifecycle.decay_rate(rules)
    return Q(decay_rate__lt=rate) | Q(decay_rate__gt=rate)
