"""The outcome rule's arithmetic (lift.py): a lesson judged against the baseline, not against zero."""

import random

import pytest

from curation.rules import lifecycle, lift

PRIOR, MIN_TASKS = 20, 10


@pytest.fixture
def rules():
    return lifecycle.rules()


def estimate(tasks, successes, base_tasks=10_000, base_successes=7_000):
    return lift.estimate(tasks, successes, base_tasks, base_successes, prior_tasks=PRIOR, min_tasks=MIN_TASKS)


def test_the_lift_is_the_shrunk_difference_from_the_baseline():
    # Baseline 7,000 of 10,000 (p0 = 7001/10002); 20 of 40 with the lesson: (20 - 40 p0) / (40 + 20).
    p0 = 7001 / 10002
    found = estimate(40, 20)
    assert found.mean == pytest.approx((20 - 40 * p0) / 60)
    assert found.low < found.mean < found.high
    assert found.verdict == lift.HARMS  # -13.3 points, the interval wholly below zero
    # No outcomes: no lift; a handful moves it little (2 failures: -2.3 points, not -70).
    assert estimate(0, 0).mean == pytest.approx(0)
    assert estimate(2, 0).mean == pytest.approx(-2 * p0 / 22)
    assert estimate(2, 0).verdict == lift.NOT_ENOUGH


def test_the_verdicts_need_the_interval_wholly_on_one_side_and_enough_tasks():
    assert estimate(9, 0).verdict == lift.NOT_ENOUGH
    assert estimate(10, 7).verdict == lift.UNCLEAR
    assert estimate(200, 190).verdict == lift.HELPS
    assert estimate(200, 100).verdict == lift.HARMS
    helps = estimate(200, 190)
    assert helps.text.startswith(f"lift +{helps.mean * 100:.1f} points (95% +")
    assert "190/200 tasks with it succeeded, 7000/10000 without" in helps.text


def test_impossible_counts_are_refused():
    with pytest.raises(ValueError):
        estimate(3, 4)
    with pytest.raises(ValueError):
        lift.estimate(1, 0, 5, 6, prior_tasks=PRIOR, min_tasks=MIN_TASKS)


def test_the_baseline_is_the_holdout_when_it_has_enough_tasks_else_the_other_tasks():
    assert lift.baseline((10, 5), (40, 30), (500, 300), min_tasks=10) == (40, 30)
    assert lift.baseline((10, 5), (9, 9), (500, 300), min_tasks=10) == (490, 295)
    assert lift.baseline((10, 5), (0, 0), (8, 8), min_tasks=10) == (0, 0)  # never negative


def test_a_lesson_given_with_others_gets_its_share_unless_the_agent_said_it_used_it():
    assert lift.share_of(6, used_reported=False) == pytest.approx(1 / 6)
    assert lift.share_of(6, used_reported=True) == 1.0
    assert lift.share_of(1, used_reported=False) == 1.0


def test_a_failure_at_the_baseline_rate_costs_nothing_on_average(rules):
    """One outcome of a lesson that has done exactly as the baseline: success at p0, failure otherwise; the
    expected move is zero, where the design notes' rule moves it by 0.7 x 0.05 - 0.3 x 0.2 = -0.025."""
    base_tasks, base_successes = 10_000, 7_000
    p0 = (base_successes + 1) / (base_tasks + 2)
    before = lift.estimate(0, 0, base_tasks, base_successes, prior_tasks=PRIOR, min_tasks=MIN_TASKS)

    def moved(success):
        after = lift.estimate(1, int(success), base_tasks, base_successes, prior_tasks=PRIOR, min_tasks=MIN_TASKS)
        return lift.after_outcome(0.7, before=before, after=after, share=1.0, gain=1.0, cap=0.85, rules=rules) - 0.7

    assert p0 * moved(True) + (1 - p0) * moved(False) == pytest.approx(0, abs=1e-12)
    assert moved(False) == pytest.approx(-p0 / 21)  # a failure: -3.3 points, not -20
    steps = 0.7 * (lifecycle.after_success(0.7, has_external_support=False, rules=rules) - 0.7) + 0.3 * (
        lifecycle.after_failure(0.7, rules) - 0.7
    )
    assert steps == pytest.approx(-0.025)


def _run(rules, *, success_rate, outcomes, share=1.0, start=0.7, seed=0):
    """A lesson's base after `outcomes` tasks succeeding at `success_rate`, against a 70% baseline."""
    rng = random.Random(seed)
    base, tasks, successes = start, 0, 0
    before = lift.estimate(0, 0, 10_000, 7_000, prior_tasks=PRIOR, min_tasks=MIN_TASKS)
    for _ in range(outcomes):
        tasks += 1
        successes += rng.random() < success_rate
        after = lift.estimate(tasks, successes, 10_000, 7_000, prior_tasks=PRIOR, min_tasks=MIN_TASKS)
        base = lift.after_outcome(
            base, before=before, after=after, share=share, gain=1.0, cap=lifecycle.cap_for(False, rules), rules=rules
        )
        before = after
    return base, before


def test_thirty_percent_baseline_failures_leave_a_neutral_lesson_where_it_started(rules):
    """A neutral lesson (70% success, as the baseline) under an evaluator failing 30% of tasks: over 300
    outcomes each, 400 such lessons end, on average, where they started. The design notes' rule takes every
    one to the floor."""
    finals = [_run(rules, success_rate=0.7, outcomes=300, seed=seed)[0] for seed in range(400)]
    assert sum(finals) / len(finals) == pytest.approx(0.7, abs=0.005)
    assert min(finals) >= rules.retrieve_at_least  # none left retrieval without a harm verdict
    base = 0.7
    rng = random.Random(0)
    for _ in range(300):
        base = (
            lifecycle.after_success(base, has_external_support=False, rules=rules)
            if rng.random() < 0.7
            else lifecycle.after_failure(base, rules)
        )
    assert base < rules.retrieve_at_least


def test_a_harmful_lesson_sinks_and_is_judged_harmful_a_helpful_one_rises_to_the_cap(rules):
    base, last = _run(rules, success_rate=0.3, outcomes=60)
    assert last.verdict == lift.HARMS and base < 0.5
    base, last = _run(rules, success_rate=0.98, outcomes=200)
    assert last.verdict == lift.HELPS and base == pytest.approx(lifecycle.cap_for(False, rules))


def test_its_share_scales_the_move(rules):
    whole, _ = _run(rules, success_rate=0.3, outcomes=30, seed=3)
    sixth, _ = _run(rules, success_rate=0.3, outcomes=30, seed=3, share=1 / 6)
    assert 0.7 - sixth == pytest.approx((0.7 - whole) / 6)


def test_outcomes_never_take_a_lesson_out_of_retrieval_without_the_harm_verdict(rules):
    before = estimate(9, 3)
    after = estimate(10, 3)
    assert after.verdict != lift.HARMS
    assert (
        lift.after_outcome(0.52, before=before, after=after, share=1.0, gain=10.0, cap=0.85, rules=rules)
        == rules.retrieve_at_least
    )
    assert (
        lift.after_outcome(0.45, before=before, after=after, share=1.0, gain=10.0, cap=0.85, rules=rules) == 0.45
    )  # under the floor already (decay): not lower by outcomes
    harmful = estimate(40, 10)
    assert (
        lift.after_outcome(0.52, before=estimate(39, 10), after=harmful, share=1.0, gain=10.0, cap=0.85, rules=rules)
        < rules.retrieve_at_least
    )


def test_the_rule_is_a_setting(settings):
    assert lift.lift_settings().rule == lift.LIFT
    settings.CURATION = {**settings.CURATION, "OUTCOME_RULE": "steps"}
    assert lift.lift_settings().rule == lift.STEPS
    settings.CURATION = {**settings.CURATION, "OUTCOME_RULE": "sometimes"}
    with pytest.raises(ValueError):
        lift.lift_settings()
