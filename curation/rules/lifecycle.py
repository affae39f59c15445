"""Confidence rules as pure functions.

No database, no Django models: services, tasks and the replay simulator call these with plain values.
Every threshold comes from curation.rules.config, read once per call through `rules()`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from curation.rules import config

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


_kept: tuple = (None, None)  # (CURATION as read, its Rules)


def rules() -> Rules:
    """The confidence rules in force. Asked for each entry's confidence (an agent's read asks ten times), so
    kept while CURATION is the same dict (config.curation_in_force); none of these settings is read from the
    environment."""
    global _kept
    group = config.curation_in_force()
    if _kept[0] is group and group is not None:
        return _kept[1]
    found = _read_rules()
    _kept = (group, found)
    return found


def _read_rules() -> Rules:
    return Rules(
        self_signal_cap=config.SELF_SIGNAL_CAP.value,
        human_correction_confidence=config.HUMAN_CORRECTION_CONFIDENCE.value,
        ceiling=config.CEILING.value,
        floor=config.FLOOR.value,
        default_confidence=config.DEFAULT_CONFIDENCE.value,
        success_step=config.SUCCESS_STEP.value,
        failure_step=config.FAILURE_STEP.value,
        decay_factor=config.DECAY_FACTOR.value,
        decay_period_days=config.DECAY_PERIOD_DAYS.value,
        archive_below=config.ARCHIVE_BELOW.value,
        retrieve_at_least=config.RETRIEVE_AT_LEAST.value,
        retrieve_limit=config.RETRIEVE_LIMIT.value,
    )


def clamp(value: float, rules: Rules) -> float:
    return max(rules.floor, min(rules.ceiling, value))


def strongest_signal(signals) -> str | None:
    """The strongest signal among supporting evidence; evidence strength follows from it."""
    found = [s for s in signals if s in SIGNAL_STRENGTH]
    return max(found, key=SIGNAL_STRENGTH.__getitem__) if found else None


def cap_for(has_external_support: bool, rules: Rules) -> float:
    """Self-made lessons cannot pass the self cap until external evidence supports them."""
    return rules.ceiling if has_external_support else min(rules.self_signal_cap, rules.ceiling)


def initial_confidence(
    *, kind: str, signal: str, proposed: float | None, has_external_support: bool, rules: Rules
) -> float:
    """The base confidence a new entry starts at."""
    if kind == "human_correction":
        return rules.human_correction_confidence
    value = rules.default_confidence.get(signal, rules.default_confidence["self"]) if proposed is None else proposed
    return clamp(min(value, cap_for(has_external_support or signal == "external", rules)), rules)


def after_success(base: float, *, has_external_support: bool, rules: Rules) -> float:
    """A task that used the entry succeeded: +step, never past the cap (the entry is re-verified)."""
    return clamp(min(base + rules.success_step, max(base, cap_for(has_external_support, rules))), rules)


def after_failure(base: float, rules: Rules) -> float:
    """A task that used the entry failed: -step, not below the floor (the entry goes back to review)."""
    return clamp(base - rules.failure_step, rules)


def decayed(base: float, last_verified_at: datetime, now: datetime, rules: Rules) -> float:
    """Effective confidence: base × factor^(days unverified / period). Computed from the base and the
    time, never from the previous effective value, so running it twice gives the same answer."""
    days = max(0.0, (now - last_verified_at).total_seconds() / 86400)
    return clamp(base * rules.decay_factor ** (days / rules.decay_period_days), rules)


def confidence_at(base: float, verified_from: datetime, until: datetime | None, rules: Rules) -> float:
    """An entry's confidence as it is read: it decays from its last verification (`verified_from`) until
    `until`: the moment of reading while it is active, the moment it left the active set after that (its
    confidence stays as it was then), or None for an entry never active (it is its base). Nothing stores
    the decayed value: this and its SQL twin (selectors/confidence.py) derive it where it is read."""
    return base if until is None else decayed(base, verified_from, until, rules)


# --- the decay index -----------------------------------------------------------------------------------
# ln(confidence at t) = ln(base) - rate × (days from the verification to t), before the clamps. Splitting off
# what depends on t leaves one number per entry, its key = ln(base) + rate × (days from the Unix epoch to the
# verification), with ln(confidence at t) = key - rate × (days from the epoch to t). So "confidence below c
# at t" is "key below ln(c) + rate × days(t)": one index range, for every threshold and every moment, kept
# up to date by writing the key only when the base or the verification changes.

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
LOWEST_BASE = 1e-9  # ln(0) has no value; a base this small is below every threshold either way
# Keys are compared with this margin, so rounding never leaves out an entry the exact rule would take:
# the sweeps take the entries in the range, then decide each with the exact rule.
KEY_MARGIN = 1e-9


def decay_rate(rules: Rules) -> float:
    """The decay per day in ln(confidence): 0 when confidence does not decay."""
    return -math.log(rules.decay_factor) / rules.decay_period_days


def _epoch_days(moment: datetime) -> float:
    return (moment - EPOCH).total_seconds() / 86400


def decay_key(base: float, verified_from: datetime, rules: Rules) -> float:
    return math.log(max(base, LOWEST_BASE)) + decay_rate(rules) * _epoch_days(verified_from)


def key_below(threshold: float, at: datetime, rules: Rules) -> float:
    """The key under which an active entry's confidence at `at` is under `threshold` (with KEY_MARGIN)."""
    return math.log(threshold) + decay_rate(rules) * _epoch_days(at) + KEY_MARGIN


def should_archive(confidence: float, rules: Rules) -> bool:
    return confidence < rules.archive_below


def is_retrievable(confidence: float, rules: Rules) -> bool:
    return confidence >= rules.retrieve_at_least


# --- Background policies -----------------------------------------------------------------------------------
# The sweeps in curation/sweeps/ implement these predicates in SQL; tests/sweeps/test_lifecycle_rules.py
# checks, case by case, that the SQL and these functions agree.

# Averages are compared with this margin so that 1.2 / 3 counts as 0.4 (not below 0.4), as a person reads it.
EPSILON = 1e-9
# An entry nobody has reported an outcome for ranks as if its average utility were this (neither good nor bad).
UNKNOWN_UTILITY = 0.5


@dataclass(frozen=True)
class Policies:
    unused_window_days: float
    unused_max_retrievals: int
    low_utility_min_retrievals: int
    low_utility_below: float
    scope_capacity: dict
    batch_size: int
    capacity_spares_unretrieved: bool = False
    unused_spares_verified: bool = True


def policies() -> Policies:
    return Policies(
        unused_window_days=config.UNUSED_WINDOW_DAYS.value,
        unused_max_retrievals=config.UNUSED_MAX_RETRIEVALS.value,
        low_utility_min_retrievals=config.LOW_UTILITY_MIN_RETRIEVALS.value,
        low_utility_below=config.LOW_UTILITY_BELOW.value,
        scope_capacity=config.SCOPE_CAPACITY.value,
        batch_size=config.SWEEP_BATCH_SIZE.value,
        capacity_spares_unretrieved=config.CAPACITY_SPARES_UNRETRIEVED.value,
        unused_spares_verified=config.UNUSED_SPARES_VERIFIED.value,
    )


def revived_confidence(signal: str, rules: Rules) -> float:
    """The base confidence an archived entry comes back with, from the evidence that revived it:
    the default for that signal, under the self cap unless the evidence is external."""
    value = rules.default_confidence.get(signal, rules.default_confidence["self"])
    return clamp(min(value, cap_for(signal == "external", rules)), rules)


@dataclass(frozen=True)
class Revival:
    signal: str
    base_confidence: float
    confidence: float
    verified_at: datetime


def revival(evidence, *, archived_at: datetime, now: datetime, rules: Rules) -> Revival | None:
    """Whether an archived entry comes back, and how.

    `evidence` is (signal, polarity, observed_at, created_at) tuples. Only supporting evidence from an
    external or independent signal recorded after the archiving (and by `now`) counts: self-signal evidence
    never revives. The strongest such evidence decides, the latest of equals; the entry counts as verified
    when that evidence was observed. An entry whose decayed confidence would fall straight back under the
    archive threshold (the evidence is old news) stays archived."""
    fresh = [
        (signal, observed_at)
        for signal, polarity, observed_at, created_at in evidence
        if polarity == "supports" and signal in ("independent", "external") and archived_at < created_at <= now
    ]
    if not fresh:
        return None
    signal, observed_at = max(fresh, key=lambda item: (SIGNAL_STRENGTH[item[0]], item[1]))
    base = revived_confidence(signal, rules)
    confidence = decayed(base, observed_at, now, rules)
    if should_archive(confidence, rules):
        return None
    return Revival(signal, base, confidence, observed_at)


def is_unused(
    *,
    created_at: datetime,
    last_verified_at: datetime | None,
    retrievals_in_window: int,
    now: datetime,
    policies: Policies,
    withheld: bool = False,
) -> bool:
    """Periodic deletion: neither created nor verified within the last W days, and retrieved
    at most alpha times in them. (A just-approved entry has had no chance to be retrieved yet, and an entry
    withheld from retrieval because an approved skill replaces it has had none either.) Without
    `unused_spares_verified`, a recent verification does not spare it: only age and use count."""
    cutoff = now - timedelta(days=policies.unused_window_days)
    return (
        not withheld
        and created_at <= cutoff
        and (not policies.unused_spares_verified or last_verified_at is None or last_verified_at <= cutoff)
        and retrievals_in_window <= policies.unused_max_retrievals
    )


def is_low_utility(*, retrieval_count: int, utility_sum: float, utility_n: int, policies: Policies) -> bool:
    """History-based deletion: retrieved at least n times, average utility below beta."""
    return (
        retrieval_count >= policies.low_utility_min_retrievals
        and utility_n > 0
        and utility_sum / utility_n < policies.low_utility_below - EPSILON
    )


def is_review_due(*, review_by: date | None, last_verified_at: datetime | None, today: date) -> bool:
    """The review date has passed (it is over) and nobody has verified the entry since that date began;
    a reviewer's confirmation sets last_verified_at, so a confirmed entry is not sent back again."""
    return (
        review_by is not None
        and review_by < today
        and (last_verified_at is None or last_verified_at.date() < review_by)
    )


def evidence_strength(entry_signal: str, supporting_signals) -> int:
    """0 self, 1 independent, 2 external: the strongest of the entry's own signal and its supporting evidence."""
    return max(SIGNAL_STRENGTH.get(s, 0) for s in [entry_signal, *supporting_signals])


def displacement_key(*, strength: int, confidence: float, average_utility: float | None, entry_id: int) -> tuple:
    """Order of eviction under a scope's capacity: lowest evidence strength first, then lowest
    confidence × average utility, then the oldest entry."""
    utility = UNKNOWN_UTILITY if average_utility is None else average_utility
    return (strength, confidence * utility, entry_id)


# --- Skill promotion -----------------------------------------------------------------------------------------
# The nomination sweep in services/skills.py finds candidates in SQL and decides each with
# nomination_blockers(); approving a proposal asks approval_blockers(). Both answer the reasons a person
# reads ("9 hits, 10 needed"), empty when the gate passes.

SKILL_KINDS = ("procedure", "success_pattern")


@dataclass(frozen=True)
class SkillGates:
    min_hits: int
    min_avg_utility: float
    recent_window: int
    trials_required: int


def skill_gates() -> SkillGates:
    return SkillGates(
        min_hits=config.SKILL_MIN_HITS.value,
        min_avg_utility=float(config.SKILL_MIN_AVG_UTILITY.value),
        recent_window=config.SKILL_RECENT_WINDOW.value,
        trials_required=config.SKILL_TRIALS_REQUIRED.value,
    )


def nomination_blockers(
    *,
    kind: str,
    status: str,
    hit_count: int,
    utility_sum: float,
    utility_n: int,
    recent_outcomes,
    has_rollback_note: bool,
    open_conflicts: int = 0,
    awaiting_recheck: bool = False,
    gates: SkillGates,
) -> list[str]:
    """Why an entry may not be nominated as a skill yet; [] when it may.

    `recent_outcomes` are its latest task outcomes ("success" / "failure"), newest first; only the first
    `recent_window` count ("no failure in the last 10 uses"). Averages are compared with EPSILON, so an
    average of 0.8 computed as 0.7999999 passes a 0.8 gate."""
    reasons = []
    if kind not in SKILL_KINDS:
        reasons.append(f"a {kind.replace('_', ' ')} is not a procedure or a success pattern")
    if status != "active":
        reasons.append(f"it is {status}, not active")
    if hit_count < gates.min_hits:
        reasons.append(f"{hit_count} hits, {gates.min_hits} needed")
    if not utility_n:
        reasons.append("no task outcome reported yet")
    elif utility_sum / utility_n < gates.min_avg_utility - EPSILON:
        reasons.append(f"average utility {utility_sum / utility_n:.2f}, at least {gates.min_avg_utility:g} needed")
    failures = [i for i, outcome in enumerate(list(recent_outcomes)[: gates.recent_window]) if outcome != "success"]
    if failures:
        reasons.append(
            f"a task that used it failed {failures[0] + 1} uses ago (none allowed in the last {gates.recent_window})"
        )
    if not has_rollback_note:
        reasons.append("no rollback note (a line starting 'Rollback:' in its content)")
    if open_conflicts:
        reasons.append("it is in an open conflict")
    if awaiting_recheck:
        reasons.append("it waits in the candidates queue for a recheck")
    return reasons


def is_nominable(**facts) -> bool:
    return not nomination_blockers(**facts)


@dataclass(frozen=True)
class TrialProgress:
    """The trials reported on a proposal's current revision."""

    reported: int
    succeeded: int
    required: int

    @property
    def failed(self) -> int:
        return self.reported - self.succeeded

    @property
    def label(self) -> str:
        return f"{self.succeeded} of {max(self.required, self.reported)} trials succeeded"

    @property
    def passes(self) -> bool:
        return self.reported >= self.required and self.failed == 0


def trial_progress(outcomes, gates: SkillGates) -> TrialProgress:
    outcomes = list(outcomes)
    return TrialProgress(len(outcomes), sum(1 for o in outcomes if o == "success"), gates.trials_required)


def approval_blockers(
    *, progress: TrialProgress, rollback: str, steps: str, inactive_sources=(), injection_unread=()
) -> list[str]:
    """Why a lead may not approve the proposal yet; [] when the gate passes: at least `required` trials
    reported on this revision, all successful, a rollback path and steps in the draft, every source active, and
    no finding of the injection detector in the draft that no lead has acknowledged (`injection_unread`)."""
    reasons = []
    if injection_unread:
        reasons.append(f"possible injection in the draft ({', '.join(injection_unread)}): a lead acknowledges it first")
    if progress.failed:
        reasons.append(
            f"{progress.failed} trial{'s' if progress.failed > 1 else ''} of this revision failed: revise "
            "the draft (its trials start again) or reject it"
        )
    if progress.reported < progress.required:
        missing = progress.required - progress.reported
        reasons.append(f"{progress.reported} of {progress.required} trials reported: {missing} more needed")
    if not rollback.strip():
        reasons.append("the draft has no rollback path")
    if not steps.strip():
        reasons.append("the draft has no steps")
    for entry_id, status in inactive_sources:
        reasons.append(f"source entry #{entry_id} is now {status}")
    return reasons
