"""Conflict detection: a conflict for each pair of active entries that overlap and give opposite advice.
Ingest compares a candidate with a few partners only; this reads every entry changed since the last run
against its whole partner pool."""

from curation.services import conflicts

from .engine import Sweep, detecting_sweep

NAME = "conflicts"
DESCRIPTION = ("Open a conflict for each pair of active entries that overlap and give opposite advice "
               "(ingest compares a candidate with a few partners only; this reads them all).")


def run(sweep: Sweep) -> None:
    detecting_sweep(sweep, conflicts.sweep_conflicts, lambda c: f"#{c.entry_a_id} and #{c.entry_b_id}: {c.reason}")
