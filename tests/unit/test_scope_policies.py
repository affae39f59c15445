"""The rules of settings per scope prefix, without a database: one resolution (the longest prefix; a lead's
row over the setting of its prefix), the server's settings as values, and where a two-reviewer rule and an
automatic admission policy govern the same scopes."""

import pytest
from django.core.exceptions import ValidationError

from curation.rules import scope_policies as rules
from curation.rules.scope_policies import ADMISSION, HOLDOUT, REVIEW

TWO, ONE = {"approvals": 2}, {"approvals": 1}
AUTO = {"name": "gate", "mode": "auto", "evaluator": "ci", "threshold": 0.8}
ALL, MANUAL, NONE = ({"name": n, "mode": n, "evaluator": "", "threshold": None} for n in ("all", "manual", "none"))


def test_the_longest_prefix_wins_and_a_row_replaces_the_setting_of_its_prefix():
    policies = rules.in_force({"acme": TWO, "globex": TWO}, [("acme/sandbox", ONE), ("globex", ONE)])
    assert policies == {"acme": TWO, "acme/sandbox": ONE, "globex": ONE}
    assert rules.resolve(policies, "acme/sandbox/ci") == ("acme/sandbox", ONE)
    assert rules.resolve(policies, "acme/sandbox-2") == ("acme", TWO)
    assert rules.resolve(policies, "initech") is None
    assert [rules.approvals_required(s, policies) for s in ("acme/web", "acme/sandbox", "globex/x", "x")] == [
        2,
        1,
        1,
        1,
    ]


def test_the_servers_settings_as_values():
    assert rules.review_defaults(["acme/", " globex ", ""]) == {"acme": TWO, "globex": TWO}
    assert rules.holdout_defaults({"acme": 0.2}, {"acme": 0.1, "globex": 0.3}) == {
        "acme": {"fraction": 0.2, "rules_only": 0.1},
        "globex": {"fraction": 0.0, "rules_only": 0.3},
    }
    assert rules.admission_defaults({"acme": {"name": "all", "mode": "all"}}) == {"acme": ALL}
    with pytest.raises(ValidationError):
        rules.admission_defaults({"acme": {"name": "x", "mode": "sometimes"}})


def test_each_kind_in_words():
    assert rules.describe(REVIEW, "acme", ONE) == "Candidates under acme now need 1 approval."
    assert rules.describe(HOLDOUT, "acme", {"fraction": 0.1, "rules_only": 0.25}) == (
        "Holdout of acme: 10% of its tasks get no memory, 25% people's rules only."
    )
    assert rules.describe(ADMISSION, "acme", AUTO) == (
        "Candidates under acme: auto: approve when ci scored at least 0.8, else reject (signed policy:gate)."
    )


@pytest.mark.parametrize(
    "reviews, admissions, pairs",
    [
        ({"acme": TWO}, {"acme": AUTO}, [("acme", "acme")]),
        ({"acme": TWO}, {"acme/billing-api": ALL}, [("acme", "acme/billing-api")]),  # the policy under the rule
        ({"acme/billing-api": TWO}, {"acme": AUTO}, [("acme/billing-api", "acme")]),  # the rule under the policy
        ({"acme": TWO}, {"acme": MANUAL}, []),
        ({"acme": TWO}, {"acme": NONE}, []),  # it only rejects
        ({"acme": TWO, "acme/sandbox": ONE}, {"acme/sandbox": ALL}, []),  # one reviewer there
        ({"acme": TWO, "acme/sandbox": ONE}, {"acme": ALL}, [("acme", "acme")]),
        ({"acme/billing-api": TWO}, {"acme": AUTO, "acme/billing-api": MANUAL}, []),  # people decide there
        (
            {"acme/billing-api": TWO},
            {"acme": AUTO, "acme/billing-api/ci": ALL},
            [("acme/billing-api", "acme"), ("acme/billing-api", "acme/billing-api/ci")],
        ),
        ({"acme": TWO}, {"acme-other": ALL, "globex": ALL}, []),
    ],
)
def test_where_a_two_reviewer_rule_meets_an_automatic_policy(reviews, admissions, pairs):
    assert rules.two_reviewer_overlaps(reviews, admissions) == pairs


def test_the_warning_names_only_what_the_lead_just_set():
    reviews, admissions = {"acme": TWO, "globex": TWO}, {"acme/ops": ALL, "globex": AUTO}
    [warning] = rules.precedence_warnings(ADMISSION, "acme/ops", reviews, admissions)
    assert warning.startswith(
        "Candidates under acme need two reviewers, and admission policy policy:all (all) of acme/ops"
    )
    assert "the two-reviewer rule wins" in warning
    assert len(rules.precedence_warnings(REVIEW, "globex", reviews, admissions)) == 1
    assert rules.precedence_warnings(HOLDOUT, "acme", reviews, admissions) == []
