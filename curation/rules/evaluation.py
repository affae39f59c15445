"""Does memory help? The holdout arm of a task and the statistics of the comparison, as pure functions.

A task (its `task_ref`) lands in the holdout arm, which gets no memory, when a hash of the scope prefix
and the task reference falls under the prefix's holdout fraction: the same task always lands in the same
arm, so a retry or a task's later steps are served alike. The success rates of the two arms get Wilson
95% intervals, and their difference Newcombe's interval built from them (the hybrid score method), which
keeps its coverage near 95% at small counts and rates near 0 or 1, where the textbook (Wald) interval
does not."""

from __future__ import annotations

import datetime
import hashlib
import math
from dataclasses import dataclass

from curation.rules import access

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
MEMORY, HOLDOUT, RULES_ONLY = "memory", "holdout", "rules-only"
# What the rules-only arm is served: what people wrote or agreed to, none of the agents' own experience.
RULES_KINDS = ("human_correction", "preference")


# --- the arm of a task -----------------------------------------------------------------------------------


def holdout_setting(scope: str, fractions: dict[str, tuple[float, float]]) -> tuple[str, float, float]:
    """The longest prefix in `fractions` (prefix -> (holdout, rules-only) fractions) covering `scope`, and
    its fractions; ("", 0.0, 0.0) when none does."""
    best = access.governing_prefix(fractions, scope) or ""
    holdout, rules_only = fractions[best] if best else (0.0, 0.0)
    return best, float(holdout), float(rules_only)


def task_position(prefix: str, task_ref: str) -> float:
    """Where a task falls in [0, 1), the same on every server and every run."""
    digest = hashlib.sha256(f"{prefix}\n{task_ref}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_arm(prefix: str, task_ref: str, fraction: float, rules_only: float = 0.0) -> str:
    """holdout for `fraction` of the tasks under `prefix`, rules-only for the next `rules_only`, memory for
    the rest. A read without a task reference gets memory: with nothing to keep its steps together, a task
    could be split over the arms, and its one outcome would count for an arm that served only part of it."""
    if not task_ref or fraction + rules_only <= 0:
        return MEMORY
    position = task_position(prefix, task_ref)
    if position < fraction:
        return HOLDOUT
    return RULES_ONLY if position < fraction + rules_only else MEMORY


# --- intervals -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    successes: int
    tasks: int

    @property
    def value(self) -> float | None:
        return self.successes / self.tasks if self.tasks else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.successes, self.tasks)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion; None without observations."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def difference_interval(a: Rate, b: Rate, z: float = Z95) -> tuple[float, float, float] | None:
    """The difference a - b of two independent proportions and its interval (Newcombe's hybrid score
    method from the two Wilson intervals); None when either has no observations."""
    if not a.tasks or not b.tasks:
        return None
    pa, pb = a.value, b.value
    la, ua = wilson(a.successes, a.tasks, z)
    lb, ub = wilson(b.successes, b.tasks, z)
    d = pa - pb
    return d, d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2), d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)


# --- the verdict ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    memory: Rate
    holdout: Rate
    difference: tuple[float, float, float] | None
    verdict: str  # helps, hurts, no_difference, not_enough
    text: str

    @property
    def tasks(self) -> int:
        return self.memory.tasks + self.holdout.tasks

    def as_json(self, treatment: str = "memory") -> dict:
        def rate(r: Rate) -> dict:
            interval = r.interval
            return {
                "tasks": r.tasks,
                "successes": r.successes,
                "success_rate": _round(r.value),
                "ci95": [_round(x) for x in interval] if interval else None,
            }

        d = self.difference
        return {
            "tasks": self.tasks,
            treatment: rate(self.memory),
            "holdout": rate(self.holdout),
            "difference": {"points": _round(d[0] * 100, 2), "ci95": [_round(d[1] * 100, 2), _round(d[2] * 100, 2)]}
            if d
            else None,
            "verdict": self.verdict,
            "text": self.text,
        }


def _round(value, places: int = 4):
    return None if value is None else round(value, places)


def points(value: float) -> str:
    """+7.9 / -0.4: a difference of proportions in percentage points, signed."""
    shown = round(value * 100, 1)
    return f"{shown:+.1f}" if shown else "0.0"


# How a comparison names its treated arm: (subject, verb when it helps, verb when it hurts, the arm's tasks).
MEMORY_WORDS = ("memory", "helps", "hurts", "with memory")
RULES_WORDS = ("people's rules only", "help", "hurt", "with people's rules only")


def compare(memory: Rate, holdout: Rate, *, min_tasks: int, words=MEMORY_WORDS) -> Comparison:
    """The comparison of the arms in plain words: memory (or the arm `words` names) helps or hurts when the
    difference's 95% interval lies wholly above or below zero; too few tasks in an arm, and it says so."""
    subject, helps, hurts, tasks_with = words
    total = memory.tasks + holdout.tasks
    if memory.tasks < min_tasks or holdout.tasks < min_tasks:
        return Comparison(
            memory,
            holdout,
            difference_interval(memory, holdout),
            "not_enough",
            f"not enough tasks yet: {memory.tasks:,} {tasks_with}, {holdout.tasks:,} in the holdout "
            f"({min_tasks:,} in each needed)",
        )
    d, low, high = difference_interval(memory, holdout)
    figures = f"{points(d)} points, 95% CI {points(low)} to {points(high)}, {total:,} tasks"
    if low > 0:
        return Comparison(memory, holdout, (d, low, high), "helps", f"{subject} {helps}: {figures}")
    if high < 0:
        return Comparison(memory, holdout, (d, low, high), "hurts", f"{subject} {hurts}: {figures}")
    return Comparison(memory, holdout, (d, low, high), "no_difference", f"no measurable difference: {figures}")


def week_start(day: datetime.date) -> datetime.date:
    """The Monday of the week a day lies in: the weekly chart's buckets."""
    return day - datetime.timedelta(days=day.weekday())
