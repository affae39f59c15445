"""Does a lesson help? Its lift over the baseline, and how a task's outcome moves its confidence, as pure
functions.

A lesson's lift is the success rate of the tasks that used it less the rate of comparable tasks without it
(the baseline: the scope's holdout arm, or its other tasks). Each rate gets a Beta posterior: the
baseline's from a flat prior, the lesson's from `prior_tasks` pseudo-tasks at the baseline's rate, so a
handful of outcomes moves it little. The lift's posterior mean is then (successes − tasks × p₀) /
(tasks + prior_tasks), zero on average for a lesson that does no better or worse than the baseline
whatever the baseline is: a failure at the baseline's rate costs a lesson nothing on average. The
interval is the posterior mean ± 1.96 posterior sd (the two posteriors are independent).

The design notes' rule (+SUCCESS_STEP on a success, −FAILURE_STEP on a failure) is lifecycle.after_success /
after_failure, still selectable as OUTCOME_RULE "steps"; it balances at 80% success, so under an evaluator
that fails 30% of tasks every lesson sinks."""

from __future__ import annotations

import math
from dataclasses import dataclass

from curation.rules import config
from curation.rules.evaluation import Z95
from curation.rules.lifecycle import Rules, clamp

LIFT, STEPS = OUTCOME_RULES = config.OUTCOME_RULES
HELPS, HARMS, UNCLEAR, NOT_ENOUGH = "helps", "harms", "unclear", "not_enough"
VERDICT_WORDS = {HELPS: "helps", HARMS: "harms", UNCLEAR: "no clear effect", NOT_ENOUGH: "not enough tasks"}


@dataclass(frozen=True)
class LiftSettings:
    rule: str
    prior_tasks: float
    gain: float
    min_tasks: int
    window_days: int


def lift_settings() -> LiftSettings:
    """The lift rule's settings; SettingError (a ValueError) on an OUTCOME_RULE that is neither rule."""
    return LiftSettings(
        config.OUTCOME_RULE.value,
        float(config.LIFT_PRIOR_TASKS.value),
        float(config.LIFT_GAIN.value),
        config.LIFT_MIN_TASKS.value,
        config.LIFT_WINDOW_DAYS.value,
    )


@dataclass(frozen=True)
class Lift:
    tasks: int  # tasks with the lesson
    successes: int
    baseline_tasks: int  # comparable tasks without it
    baseline_successes: int
    mean: float  # posterior mean of the lift (a difference of rates)
    low: float  # its 95% interval
    high: float
    verdict: str  # helps, harms, unclear, not_enough

    @property
    def text(self) -> str:
        """The figures a reviewer reads on a card or an Event."""
        return (
            f"lift {self.mean * 100:+.1f} points (95% {self.low * 100:+.1f} to {self.high * 100:+.1f}), "
            f"{self.successes}/{self.tasks} tasks with it succeeded, {self.baseline_successes}/"
            f"{self.baseline_tasks} without"
        )

    def as_json(self) -> dict:
        return {
            "tasks_with": self.tasks,
            "successes_with": self.successes,
            "tasks_without": self.baseline_tasks,
            "successes_without": self.baseline_successes,
            "lift_points": round(self.mean * 100, 2),
            "lift_ci95": [round(self.low * 100, 2), round(self.high * 100, 2)],
            "verdict": self.verdict,
        }


def _beta_variance(a: float, b: float) -> float:
    return a * b / ((a + b) ** 2 * (a + b + 1))


def estimate(
    tasks: int,
    successes: int,
    baseline_tasks: int,
    baseline_successes: int,
    *,
    prior_tasks: float,
    min_tasks: int,
    z: float = Z95,
) -> Lift:
    """The lift of a lesson from its tasks' outcomes and the baseline's. ValueError on impossible counts."""
    if not (0 <= successes <= tasks and 0 <= baseline_successes <= baseline_tasks):
        raise ValueError(f"{successes}/{tasks} with, {baseline_successes}/{baseline_tasks} without")
    a0, b0 = baseline_successes + 1.0, baseline_tasks - baseline_successes + 1.0
    p0 = a0 / (a0 + b0)
    a, b = prior_tasks * p0 + successes, prior_tasks * (1 - p0) + tasks - successes
    mean = a / (a + b) - p0
    sd = math.sqrt(_beta_variance(a, b) + _beta_variance(a0, b0))
    low, high = mean - z * sd, mean + z * sd
    if tasks < min_tasks:
        verdict = NOT_ENOUGH
    elif low > 0:
        verdict = HELPS
    elif high < 0:
        verdict = HARMS
    else:
        verdict = UNCLEAR
    return Lift(tasks, successes, baseline_tasks, baseline_successes, mean, low, high, verdict)


def baseline(
    lesson: tuple[int, int], holdout: tuple[int, int], others: tuple[int, int], *, min_tasks: int
) -> tuple[int, int]:
    """The comparable tasks without a lesson, as (tasks, successes): the holdout arm when it has at least
    `min_tasks`, otherwise the scope's other tasks (`others`, the tasks served memory) less the lesson's."""
    if holdout[0] >= min_tasks:
        return holdout
    tasks = max(0, others[0] - lesson[0])
    return tasks, min(tasks, max(0, others[1] - lesson[1]))


def share_of(lesson_count: int, used_reported: bool) -> float:
    """A lesson's share of a task's outcome: all of it when the agent said it used the lesson, otherwise an
    equal share with the other lessons it was given (the outcome is theirs together)."""
    return 1.0 if used_reported or lesson_count <= 1 else 1.0 / lesson_count


def after_outcome(
    base: float, *, before: Lift, after: Lift, share: float, gain: float, cap: float, rules: Rules
) -> float:
    """A lesson's base confidence after one outcome: moved by its share of the change in the lift's
    estimate (so, summed over its outcomes, start + gain × share × lift), never past `cap` (the self cap
    until verified), and never under the retrieval floor by outcomes unless the lift is below zero at 95%:
    a lesson leaves retrieval on outcomes only with the verdict that sends it to a person."""
    moved = base + share * gain * (after.mean - before.mean)
    if after.verdict != HARMS:
        moved = max(moved, min(base, rules.retrieve_at_least))
    return clamp(min(moved, max(base, cap)), rules)
