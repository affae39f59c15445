"""The skill promotion gates at their boundaries: first the pure rules of lifecycle.py, then
the nomination sweep on the same cases, so the SQL half of the gate and the rule agree."""

import pytest

from curation.rules import lifecycle
from curation.models import SkillProposal
from tests.factories import nominate, ready_entry

G = lifecycle.SkillGates(min_hits=10, min_avg_utility=0.8, recent_window=10, trials_required=5)


def facts(**overrides):
    values = {
        "kind": "procedure",
        "status": "active",
        "hit_count": 10,
        "utility_sum": 8.0,
        "utility_n": 10,
        "recent_outcomes": ["success"] * 10,
        "has_rollback_note": True,
        "open_conflicts": 0,
        "awaiting_recheck": False,
    }
    values.update(overrides)
    return values


def test_the_settings_are_the_gates(settings):
    assert lifecycle.skill_gates() == G
    settings.CURATION = {**settings.CURATION, "SKILL_MIN_HITS": 3, "SKILL_TRIALS_REQUIRED": 2}
    assert (lifecycle.skill_gates().min_hits, lifecycle.skill_gates().trials_required) == (3, 2)


@pytest.mark.parametrize(
    "overrides, reason",
    [
        ({}, None),
        ({"hit_count": 9}, "9 hits, 10 needed"),
        ({"hit_count": 10}, None),
        ({"utility_sum": 7.9}, "average utility 0.79, at least 0.8 needed"),
        ({"utility_sum": 0.8 * 10}, None),
        ({"utility_sum": 2.4, "utility_n": 3}, None),  # 2.4 / 3 = 0.7999999... counts as 0.8
        ({"utility_n": 0, "utility_sum": 0}, "no task outcome reported yet"),
        ({"recent_outcomes": ["success"] * 9 + ["failure"]}, "failed 10 uses ago"),
        ({"recent_outcomes": ["success"] * 10 + ["failure"]}, None),  # the 11th-last use is outside the window
        ({"recent_outcomes": ["failure"] + ["success"] * 9}, "failed 1 uses ago"),
        ({"kind": "failure_lesson"}, "not a procedure or a success pattern"),
        ({"kind": "success_pattern"}, None),
        ({"status": "archived"}, "it is archived"),
        ({"has_rollback_note": False}, "no rollback note"),
        ({"open_conflicts": 1}, "open conflict"),
        ({"awaiting_recheck": True}, "recheck"),
    ],
)
def test_nomination_gate_boundaries(overrides, reason):
    blockers = lifecycle.nomination_blockers(**facts(**overrides), gates=G)
    if reason is None:
        assert blockers == [] and lifecycle.is_nominable(**facts(**overrides), gates=G)
    else:
        assert len(blockers) == 1 and reason in blockers[0], blockers


@pytest.mark.parametrize(
    "outcomes, passes, label",
    [
        (["success"] * 5, True, "5 of 5 trials succeeded"),
        (["success"] * 4, False, "4 of 5 trials succeeded"),
        (["success"] * 6, True, "6 of 6 trials succeeded"),
        (["success"] * 4 + ["failure"], False, "4 of 5 trials succeeded"),
        (["success"] * 5 + ["failure"], False, "5 of 6 trials succeeded"),
        ([], False, "0 of 5 trials succeeded"),
    ],
)
def test_trial_progress(outcomes, passes, label):
    progress = lifecycle.trial_progress(outcomes, G)
    assert (progress.passes, progress.label) == (passes, label)


def test_approval_gate_says_what_is_missing():
    four = lifecycle.trial_progress(["success"] * 4, G)
    assert lifecycle.approval_blockers(progress=four, rollback="undo", steps="1. do") == [
        "4 of 5 trials reported: 1 more needed"
    ]
    failed = lifecycle.trial_progress(["success"] * 4 + ["failure"], G)
    [reason] = lifecycle.approval_blockers(progress=failed, rollback="undo", steps="1. do")
    assert reason.startswith("1 trial of this revision failed")
    five = lifecycle.trial_progress(["success"] * 5, G)
    assert lifecycle.approval_blockers(progress=five, rollback="undo", steps="1. do") == []
    assert lifecycle.approval_blockers(progress=five, rollback=" ", steps="", inactive_sources=[(7, "archived")]) == [
        "the draft has no rollback path",
        "the draft has no steps",
        "source entry #7 is now archived",
    ]


# --- the sweep agrees with the rule at every boundary -------------------------------------------------------

SWEEP_CASES = [
    # (entry fields, nominated?)
    ({"hits": 10}, True),
    ({"hits": 9}, False),
    ({"utility": 0.8}, True),
    ({"utility": 0.79}, False),
    ({"hits": 11, "outcomes": ["failure"] + ["success"] * 10}, True),  # failure as the 11th-last use
    ({"hits": 11, "outcomes": ["success", "failure"] + ["success"] * 9}, False),  # as the 10th-last
    ({"kind": "success_pattern"}, True),
    ({"kind": "fact"}, False),
    ({"content": "Run migrate from /srv/app."}, False),  # no rollback note
    ({"content": "Run migrate from /srv/app. Undo: migrate back to the previous migration."}, True),
    ({"status": "archived"}, False),
]


@pytest.mark.django_db
def test_the_sweep_nominates_exactly_the_cases_the_rule_passes():
    made = [
        (ready_entry(trigger=f"Case {i}: running migrations", **fields), expected)
        for i, (fields, expected) in enumerate(SWEEP_CASES)
    ]
    nominate()
    nominated = set(SkillProposal.objects.values_list("nominated_entry_id", flat=True))
    assert [(entry.pk in nominated) for entry, _ in made] == [expected for _, expected in made]
