"""Confidence rules (DESIGN.md §2, seed 001) as pure functions.

No database, no Django models: services, tasks and the replay simulator call these with plain values.
Every threshold comes from settings.CURATION, read once per call through `rules()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

SIGNAL_STRENGTH = {"self": 0, "independent": 1, "external": 2}


@dataclass(frozen=True)
class Rules:
    self_signal_cap: float
    human_correction_confidence: float
    ceiling: float
    floor: float
    default_confidence: dict
    success_step: float
    failure_step: float
    decay_factor: float
    decay_period_days: float
    archive_below: float
    retrieve_at_least: float
    retrieve_limit: int


def rules() -> Rules:
    c = settings.CURATION
    return Rules(
        self_signal_cap=c["SELF_SIGNAL_CAP"],
        human_correction_confidence=c["HUMAN_CORRECTION_CONFIDENCE"],
        ceiling=c["CEILING"],
        floor=c["FLOOR"],
        default_confidence=c["DEFAULT_CONFIDENCE"],
        success_step=c["SUCCESS_STEP"],
        failure_step=c["FAILURE_STEP"],
        decay_factor=c["DECAY_FACTOR"],
        decay_period_days=c["DECAY_PERIOD_DAYS"],
        archive_below=c["ARCHIVE_BELOW"],
        retrieve_at_least=c["RETRIEVE_AT_LEAST"],
        retrieve_limit=c["RETRIEVE_LIMIT"],
    )


def clamp(value: float, r: Rules) -> float:
    return max(r.floor, min(r.ceiling, value))


def strongest_signal(signals) -> str | None:
    """The strongest signal among supporting evidence; evidence strength follows from it."""
    found = [s for s in signals if s in SIGNAL_STRENGTH]
    return max(found, key=SIGNAL_STRENGTH.__getitem__) if found else None


def cap_for(has_external_support: bool, r: Rules) -> float:
    """Self-made lessons cannot pass the self cap until external evidence supports them."""
    return r.ceiling if has_external_support else min(r.self_signal_cap, r.ceiling)


def initial_confidence(
    *, kind: str, signal: str, proposed: float | None, has_external_support: bool, r: Rules
) -> float:
    """The base confidence a new entry starts at."""
    if kind == "human_correction":
        return r.human_correction_confidence
    value = r.default_confidence.get(signal, r.default_confidence["self"]) if proposed is None else proposed
    return clamp(min(value, cap_for(has_external_support or signal == "external", r)), r)


def after_success(base: float, *, has_external_support: bool, r: Rules) -> float:
    """A task that used the entry succeeded: +step, never past the cap (the entry is re-verified)."""
    return clamp(min(base + r.success_step, max(base, cap_for(has_external_support, r))), r)


def after_failure(base: float, r: Rules) -> float:
    """A task that used the entry failed: -step, not below the floor (the entry goes back to review)."""
    return clamp(base - r.failure_step, r)


def decayed(base: float, last_verified_at: datetime, now: datetime, r: Rules) -> float:
    """Effective confidence: base × factor^(days unverified / period). Computed from the base and the
    time, never from the previous effective value, so running it twice gives the same answer."""
    days = max(0.0, (now - last_verified_at).total_seconds() / 86400)
    return clamp(base * r.decay_factor ** (days / r.decay_period_days), r)


def should_archive(confidence: float, r: Rules) -> bool:
    return confidence < r.archive_below


def is_retrievable(confidence: float, r: Rules) -> bool:
    return confidence >= r.retrieve_at_least
