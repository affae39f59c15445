"""Every write of memoryadmin: one function per decision, a transaction and an Event inside. An entry's
state or content is written only through entry_writes (one versioned write and its Event); every other
Event, about an entry, a conflict, a proposal, a skill or a token, through events.record_event."""

from .candidates import (
    approve_candidate,
    bulk_decide,
    create_candidate,
    defer_candidate,
    edit_and_approve,
    merge_into,
    reject_candidate,
    undo_bulk,
    undo_decision,
)
from .errors import DecisionError, InvalidTransition, StaleDecision
from .evidence import add_evidence
from .preferences import remember_queue

__all__ = [
    "DecisionError",
    "InvalidTransition",
    "StaleDecision",
    "add_evidence",
    "approve_candidate",
    "bulk_decide",
    "create_candidate",
    "defer_candidate",
    "edit_and_approve",
    "merge_into",
    "reject_candidate",
    "remember_queue",
    "undo_bulk",
    "undo_decision",
]
