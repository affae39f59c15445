"""Confidence where it is read, in SQL: the twin of Entry.confidence_at and lifecycle.confidence_at, for
the queries that filter, order or count by it (retrieval, the queues' filters, the dashboard, the sweeps).
tests/sweeps/test_lifecycle_rules.py checks, case by case, that the two agree."""

from __future__ import annotations

import datetime

from django.db.models import Case, DateTimeField, F, FloatField, Func, Q, Value, When
from django.db.models.functions import Coalesce, Greatest, Least, Ln, Power
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual

from curation.rules import clock, lifecycle
from curation.models import Status


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
