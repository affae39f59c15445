"""Conflict detection: a conflict for each pair of active entries that overlap and give opposite advice.
Ingest compares a candidate with a few partners only; this reads every entry changed since the last run
against its whole partner pool."""

from curation import contradiction
from curation.services import conflicts

from .engine import Sweep, detecting_sweep

NAME = "conflicts"
DESCRIPTION = ("Open a conflict for each pair of active entries that overlap and give opposite advice "
               "(ingest compares a candidate with a few partners only; this reads them all).")



def thresholds() -> str:
    return (f"Opens a conflict when two active entries' triggers share at least {contradiction.TRIGGER_MIN_SHARED} "
            f"words and overlap by at least {contradiction.TRIGGER_JACCARD:g} of their words (or at least "
            f"{contradiction.TRIGGER_CONTAINMENT:g} of one trigger's words are in the other), and one says to do what the other says "
            "not to do.")


def run(sweep: Sweep) -> None:
    detecting_sweep(sweep, conflicts.sweep_conflicts, lambda c: f"#{c.entry_a_id} and #{c.entry_b_id}: {c.reason}")
