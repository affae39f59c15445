"""The lifecycle rules of lifecycle.py as SQL expressions, so a sweep decides a whole batch in one
statement. Each one mirrors a pure function there; the sweep tests compare the two."""

from __future__ import annotations

import datetime

from django.db.models import Case, Count, F, FloatField, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce, Greatest, NullIf

from curation.rules import lifecycle
from curation.models import Evidence, RetrievedEntry
from curation.selectors.confidence import confidence


def _signal_rank(column: str):
    return Case(
        *[When(**{column: signal}, then=Value(rank)) for signal, rank in lifecycle.SIGNAL_STRENGTH.items()],
        default=Value(0),
        output_field=IntegerField(),
    )


def evidence_strength():
    """lifecycle.evidence_strength(): the strongest of the entry's signal and its supporting evidence."""
    strongest = (
        Evidence.objects.filter(entry=OuterRef("pk"), polarity=Evidence.Polarity.SUPPORTS)
        .annotate(rank=_signal_rank("signal"))
        .order_by("-rank")
        .values("rank")[:1]
    )
    return Greatest(_signal_rank("signal"), Coalesce(Subquery(strongest), Value(0)), output_field=IntegerField())


def merit(at: datetime.datetime, rules: lifecycle.Rules):
    """confidence × average utility (UNKNOWN_UTILITY when no outcome was reported), as in displacement_key()."""
    average = Coalesce(
        F("utility_sum") / NullIf(F("utility_n"), Value(0)), Value(lifecycle.UNKNOWN_UTILITY), output_field=FloatField()
    )
    return confidence(at, rules) * average


def recent_retrievals(as_of: datetime.datetime, policies: lifecycle.Policies):
    """How often the entry was handed out in the unused window before `as_of`."""
    cutoff = as_of - datetime.timedelta(days=policies.unused_window_days)
    counted = (
        RetrievedEntry.objects.filter(entry=OuterRef("pk"), created_at__gt=cutoff, created_at__lte=as_of)
        .order_by()
        .values("entry")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))
