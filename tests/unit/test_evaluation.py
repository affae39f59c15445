"""The statistics of holdout evaluation and the arm of a task, as pure functions, against published
values (Newcombe 1998: the Wilson interval's Table I and the hybrid score difference's Table II)."""

import random

import pytest

from curation.rules.evaluation import (
    HOLDOUT,
    MEMORY,
    RULES_ONLY,
    RULES_WORDS,
    Rate,
    assign_arm,
    compare,
    difference_interval,
    holdout_setting,
    points,
    task_position,
    wilson,
)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
    ],
)
def test_wilson_interval(successes, n, low, high):
    got = wilson(successes, n)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_without_observations_is_none_and_refuses_impossible_counts():
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(11, 10)


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        ((56, 70), (48, 80), 0.0524, 0.3339),
        ((9, 10), (3, 10), 0.1705, 0.8090),
        ((6, 7), (2, 7), 0.0582, 0.8062),
        ((5, 56), (0, 29), -0.0381, 0.1926),
        ((0, 10), (0, 20), -0.1611, 0.2775),
        ((0, 10), (0, 10), -0.2775, 0.2775),
        ((10, 10), (0, 20), 0.6791, 1.0),
        ((10, 10), (0, 10), 0.6075, 1.0),
    ],
)
def test_difference_of_proportions_interval(a, b, low, high):
    d, got_low, got_high = difference_interval(Rate(*a), Rate(*b))
    assert d == pytest.approx(a[0] / a[1] - b[0] / b[1])
    assert (got_low, got_high) == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_difference_needs_both_arms():
    assert difference_interval(Rate(5, 10), Rate(0, 0)) is None


@pytest.mark.parametrize(
    ("memory", "holdout", "verdict", "text"),
    [
        ((700, 1000), (600, 1000), "helps", "memory helps: +10.0 points, 95% CI +5.8 to +14.1, 2,000 tasks"),
        ((550, 1000), (650, 1000), "hurts", "memory hurts: -10.0 points"),
        ((610, 1000), (600, 1000), "no_difference", "no measurable difference: +1.0 points"),
        (
            (20, 29),
            (10, 30),
            "not_enough",
            "not enough tasks yet: 29 with memory, 30 in the holdout (30 in each needed)",
        ),
        ((0, 0), (0, 0), "not_enough", "not enough tasks yet: 0 with memory, 0 in the holdout"),
    ],
)
def test_the_verdict_in_plain_words(memory, holdout, verdict, text):
    comparison = compare(Rate(*memory), Rate(*holdout), min_tasks=30)
    assert comparison.verdict == verdict
    assert comparison.text.startswith(text)


def test_points_are_signed_and_zero_is_plain():
    assert (points(0.079), points(-0.004), points(0.0), points(-0.0004)) == ("+7.9", "-0.4", "0.0", "0.0")


def test_the_longest_covering_prefix_wins():
    fractions = {"acme": (0.1, 0.0), "acme/billing-api": (0.3, 0.1), "acme/billing-api-v2": (0.5, 0.0)}
    assert holdout_setting("acme/billing-api/container", fractions) == ("acme/billing-api", 0.3, 0.1)
    assert holdout_setting("acme/billing-api-v2", fractions) == ("acme/billing-api-v2", 0.5, 0.0)
    assert holdout_setting("acme/web", fractions) == ("acme", 0.1, 0.0)
    assert holdout_setting("globex", fractions) == ("", 0.0, 0.0)


def test_a_task_always_lands_in_the_same_arm():
    tasks = [f"task-{random.Random(7).random()}-{i}" for i in range(500)]
    first = [assign_arm("acme", t, 0.2) for t in tasks]
    assert first == [assign_arm("acme", t, 0.2) for t in tasks]
    assert task_position("acme", "task-1") == task_position("acme", "task-1")
    assert task_position("acme", "task-1") != task_position("globex", "task-1")  # each prefix draws anew


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.25, 0.5])
def test_the_holdout_share_over_10000_tasks_is_close_to_the_fraction(fraction):
    arms = [assign_arm("acme/billing-api", f"task-{i}", fraction) for i in range(10_000)]
    share = arms.count(HOLDOUT) / len(arms)
    # Three standard deviations of a binomial share: a hash that is not uniform fails this.
    assert abs(share - fraction) < 3 * (fraction * (1 - fraction) / 10_000) ** 0.5


def test_the_rules_only_share_follows_the_holdout_share():
    arms = [assign_arm("acme", f"task-{i}", 0.2, 0.3) for i in range(10_000)]
    assert abs(arms.count(HOLDOUT) / 10_000 - 0.2) < 3 * (0.2 * 0.8 / 10_000) ** 0.5
    assert abs(arms.count(RULES_ONLY) / 10_000 - 0.3) < 3 * (0.3 * 0.7 / 10_000) ** 0.5
    # Adding a rules-only share moves no task into or out of the holdout.
    assert [a == HOLDOUT for a in arms] == [assign_arm("acme", f"task-{i}", 0.2) == HOLDOUT for i in range(10_000)]


def test_the_verdict_names_the_arm_it_compares():
    comparison = compare(Rate(700, 1000), Rate(600, 1000), min_tasks=30, words=RULES_WORDS)
    assert comparison.text.startswith("people's rules only help: +10.0 points")
    assert compare(Rate(1, 2), Rate(0, 0), min_tasks=30, words=RULES_WORDS).text.startswith(
        "not enough tasks yet: 2 with people's rules only, 0 in the holdout"
    )


def test_no_task_reference_or_no_fraction_means_memory():
    assert assign_arm("acme", "", 0.5) == MEMORY
    assert all(assign_arm("acme", f"task-{i}", 0.0) == MEMORY for i in range(1000))
