"""Why an entry has its provenance trust level, in words (rules/trust.py's rule over its evidence)."""

from __future__ import annotations

from django.db.models import Q

from curation.models import Entry, Evidence
from curation.rules import trust


def _piece(row: Evidence) -> trust.Piece:
    return trust.Piece(
        id=row.pk,
        trust=row.trust,
        supports=row.polarity == Evidence.Polarity.SUPPORTS,
        recorder=row.recorded_by_label,
        copied=row.copied_from_id is not None,
    )


def trust_why(entry: Entry, evidence=None) -> str:
    """The rule's level and reason for `entry`: from `evidence` when the caller has read it (a card's), else
    from its one strongest confirmation, read in one query."""
    if evidence is None:
        evidence = (
            Evidence.objects.filter(
                entry=entry,
                polarity=Evidence.Polarity.SUPPORTS,
                copied_from__isnull=True,
                trust__gt=entry.trust_origin,
            )
            .exclude(recorded_by_label=entry.created_by_label)
            .only("id", "trust", "polarity", "recorded_by_label", "copied_from")
            .order_by("-trust", "id")[:1]
        )
    level, why = trust.entry_trust(entry.trust_origin, [_piece(row) for row in evidence], author=entry.created_by_label)
    if level != entry.trust:  # evidence the caller did not read (a card shows a few): the stored level holds
        return f"{trust.name(entry.trust)}: confirmed by another source"
    return why


def trust_between(min_trust: str = "", max_trust: str = "", prefix: str = "") -> Q:
    """Entries whose provenance trust lies between two level names (either may be ""), the queues' "Trust from/to"
    filter; `prefix` reaches the entry through a relation ("entry_a__")."""
    q = Q()
    if min_trust:
        q &= Q(**{f"{prefix}trust__gte": trust.parse(min_trust)})
    if max_trust:
        q &= Q(**{f"{prefix}trust__lte": trust.parse(max_trust)})
    return q
