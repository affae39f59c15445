"""Every write of memoryadmin: one function per decision, a transaction and an Event inside."""

from .candidates import (
    approve_candidate,
    bulk_decide,
    create_candidate,
    defer_candidate,
    edit_and_approve,
    merge_into,
    reject_candidate,
)
from .errors import DecisionError, InvalidTransition, StaleDecision
from .evidence import add_evidence

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
]
