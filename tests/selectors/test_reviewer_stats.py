"""The reviewers' page's numbers, from Events: decisions per window, agreement from the second decisions on
first approvals, and the median gap between a reviewer's consecutive decisions with pauses left out."""

import datetime

import pytest

from curation import services
from curation.rules import clock
from curation.rules.scope_policies import REVIEW
from curation.selectors import reviewer_stats
from curation.services.scope_policies import set_scope_policy
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_decisions_windows_and_median_time(make_candidate, reviewer, django_assert_max_num_queries):
    now = clock.now()
    start = now - datetime.timedelta(days=1)
    # Gaps of 10, 20 and 60 seconds, then a 2-hour pause (not a decision's time); one decision 10 days ago.
    moments = [
        start,
        start + datetime.timedelta(seconds=10),
        start + datetime.timedelta(seconds=30),
        start + datetime.timedelta(seconds=90),
        start + datetime.timedelta(hours=2),
        now - datetime.timedelta(days=10),
    ]
    for i, moment in enumerate(moments):
        entry = make_candidate(trigger=f"Lesson number {i} for the timing")
        services.reject_candidate(entry.pk, actor=reviewer, expected_version=1, reason="no", at=moment)
    with django_assert_max_num_queries(8):
        [rita] = reviewer_stats(reviewer, now=now)
    week, month = rita.windows[7], rita.windows[30]
    assert (rita.name, week.decisions, month.decisions) == ("rita", 5, 6)
    assert week.by_action == {"rejected": 5}
    assert week.median_seconds == pytest.approx(20, abs=0.01)  # SQLite counts in fractions of a day
    assert week.agreement_rate is None and week.paired == 0


def test_agreement_counts_for_both_reviewers(make_candidate, lead, reviewer, second_reviewer):
    set_scope_policy(REVIEW, data={"prefix": "acme", "approvals": 2}, actor=lead)
    agreed = make_candidate(scope="acme/web", trigger="Both approve this one")
    services.approve_candidate(agreed.pk, actor=reviewer, expected_version=1)
    services.approve_candidate(agreed.pk, actor=second_reviewer, expected_version=2)
    disputed = make_candidate(scope="acme/web", trigger="They disagree on this one")
    services.approve_candidate(disputed.pk, actor=second_reviewer, expected_version=1)
    services.reject_candidate(disputed.pk, actor=reviewer, expected_version=2, reason="too broad")
    alone = make_candidate(scope="acme/web", trigger="Only one approval so far")
    services.approve_candidate(alone.pk, actor=reviewer, expected_version=1)
    stats = {r.name: r.windows[7] for r in reviewer_stats(lead)}
    assert (stats["rita"].agreed, stats["rita"].disagreed) == (1, 1)
    assert (stats["rob"].agreed, stats["rob"].disagreed) == (1, 1)
    assert stats["rita"].agreement_rate == pytest.approx(0.5)
    assert stats["rita"].decisions == 3 and stats["rob"].decisions == 2
    assert "lena" not in stats  # setting a rule is not a decision on a candidate


def test_a_reader_limited_to_scopes_counts_only_decisions_there(make_candidate, reviewer):
    start = clock.now() - datetime.timedelta(hours=1)
    for i, scope in enumerate(["acme/web", "acme/web", "acme/web", "globex/api"]):
        entry = make_candidate(scope=scope, trigger=f"Lesson {i} somewhere")
        services.reject_candidate(
            entry.pk,
            actor=reviewer,
            expected_version=1,
            reason="no",
            at=start + datetime.timedelta(seconds=[0, 10, 40, 41][i]),
        )
    web_auditor = make_user("wes", "auditor", scopes=["acme/web"])
    [rita] = reviewer_stats(web_auditor)
    assert rita.windows[7].decisions == 3
    assert rita.windows[7].median_seconds == pytest.approx(20, abs=0.01)  # 10 and 30, not the 1 s in globex
    [everyone] = reviewer_stats(reviewer)
    assert everyone.windows[7].decisions == 4
