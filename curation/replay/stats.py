"""The replay's statistics as pure functions."""

from __future__ import annotations

import math


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def sd(values) -> float:
    """The sample standard deviation (0 for a single value)."""
    values = list(values)
    if len(values) < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def ols_slope(xs, ys) -> float | None:
    """The least-squares slope of ys on xs (None without spread in xs)."""
    xs, ys = list(xs), list(ys)
    if len(xs) < 2:
        return None
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def running_rate(successes) -> list[float]:
    """The success rate after each step."""
    out, total = [], 0
    for i, ok in enumerate(successes, start=1):
        total += bool(ok)
        out.append(total / i)
    return out
