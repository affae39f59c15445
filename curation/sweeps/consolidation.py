"""Consolidation: proposals to merge near-duplicate active entries of a scope, and to let a newer entry
supersede an outdated one. Only a reviewer's accepted proposal changes an entry."""

from curation.services import consolidation

from .engine import Sweep, detecting_sweep

NAME = "consolidation"
DESCRIPTION = ("Propose merging clusters of near-duplicate active entries of a scope, and superseding "
               "entries made outdated by a newer one; only an accepted proposal changes an entry.")



def thresholds() -> str:
    return (f"Proposes a merge when two active entries of a scope share at least {consolidation.merge_threshold():g} of "
            "their words (trigger and content); proposes that a newer entry supersede an older one when their triggers "
            f"share at least {consolidation.supersede_trigger_threshold():g} of their words, their advice differs and "
            "the newer one is at least as confident.")


def run(sweep: Sweep) -> None:
    detecting_sweep(sweep, consolidation.sweep_consolidation, lambda p: f"{p.kind} in {p.scope}: {p.reason}")
