"""Provenance trust on the write side: the level each new piece of evidence gets, and the entry's level raised
when a piece is a confirmation (rules/trust.py decides both; this writes what they decide)."""

from __future__ import annotations

from curation.models import Entry, EventAction, Evidence
from curation.rules import trust

from .entry_writes import write_entry


def with_levels(evidence: list[dict], *, entry: Entry, recorder: str, sender: str) -> list[dict]:
    """`evidence` (cleaned pieces) with the level each one gets when `recorder`, a `sender` (trust.Sender),
    records it about `entry`: independent when `recorder` is not the entry's author."""
    independent = recorder != entry.created_by_label
    return [
        {**piece, "trust": trust.evidence_trust(piece["source"], sender=sender, independent=independent)}
        for piece in evidence
    ]


def pieces(rows) -> list[trust.Piece]:
    """Evidence rows as the rule reads them."""
    return [
        trust.Piece(
            id=row.pk,
            trust=row.trust,
            supports=row.polarity == Evidence.Polarity.SUPPORTS,
            recorder=row.recorded_by_label,
            copied=row.copied_from_id is not None,
        )
        for row in rows
    ]


def raise_trust(entry: Entry, new_rows, *, actor=None, actor_label: str = "", at) -> Entry:
    """After `new_rows` of evidence were added to `entry` (locked by the caller): its level by the rule, and a
    `trust_raised` write with its Event when that is higher. The rule only raises, so the new rows and the
    level the entry has are all it needs to read."""
    level, why = trust.entry_trust(entry.trust, pieces(new_rows), author=entry.created_by_label)
    if level > entry.trust:
        write_entry(
            entry,
            {"trust": int(level)},
            action=EventAction.TRUST_RAISED,
            actor=actor,
            actor_label=actor_label,
            reason=why,
            at=at,
        )
    return entry
