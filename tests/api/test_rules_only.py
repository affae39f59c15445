"""The optional third arm, people's rules only: a share of tasks served only human corrections and
preferences, so a team compares no memory, people's rules and curated experience."""

import pytest

from curation.rules.evaluation import RULES_ONLY, assign_arm
from curation.models import Entry, OutcomeTally, Retrieval, ScopePolicy
from tests.factories import client_for, page_text, set_holdout

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"


def _task_in(arm: str) -> str:
    return next(f"task-{i}" for i in range(10_000) if assign_arm(SCOPE, f"task-{i}", 0.2, 0.3) == arm)


@pytest.fixture
def three_arms(db):
    return set_holdout(SCOPE, 0.2, 0.3)


def test_a_rules_only_task_gets_only_what_people_wrote(agent, approved, three_arms):
    lesson = approved(
        scope=SCOPE,
        kind="failure_lesson",
        signal="external",
        confidence=0.8,
        trigger="Editing config in the container",
        content="Back up the config file before editing it.",
    )
    correction = approved(
        scope=SCOPE,
        kind="human_correction",
        signal="external",
        confidence=0.9,
        trigger="Editing config: never in production",
    )
    body = agent.post("memory/search", {"scope": SCOPE, "q": "config", "task_ref": _task_in(RULES_ONLY)}).json()
    assert body["arm"] == "rules-only"
    assert [e["id"] for e in body["entries"]] == [correction.pk] and lesson.content not in body["context"]
    assert Retrieval.objects.get(pk=body["retrieval_id"]).arm == "rules-only"
    # Its outcome is a real use of the correction: it counts on the entry, and in its arm's tally.
    agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "success"})
    assert Entry.objects.get(pk=correction.pk).hit_count == 1
    assert OutcomeTally.objects.get(scope=SCOPE, arm="rules-only").tasks == 1
    memory = agent.post("memory/search", {"scope": SCOPE, "q": "config", "task_ref": _task_in("memory")}).json()
    assert memory["arm"] == "memory" and {e["id"] for e in memory["entries"]} == {lesson.pk, correction.pk}


def test_the_dashboard_and_the_api_show_the_third_arm(agent, approved, three_arms, lead):
    approved(scope=SCOPE, kind="preference", signal="external", confidence=0.9, trigger="Config style")
    tasks = [f"t-{i}" for i in range(1000) if assign_arm(SCOPE, f"t-{i}", 0.2, 0.3) == RULES_ONLY][:3]
    for task in tasks:
        body = agent.retrieve(scope=SCOPE, task_ref=task).json()
        assert body["arm"] == "rules-only"
        agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "success"})
    figures = agent.get("evaluation", scope=SCOPE).json()["windows"]["30"]
    assert figures["rules_only"]["rules_only"]["tasks"] == 3
    assert figures["rules_only"]["text"].startswith("not enough tasks yet: 3 with people's rules only")
    text = page_text(client_for(lead).get("/learning/"))
    assert "People's rules only (human corrections and preferences) against the holdout" in text
    assert 'id="rules-verdict-30"' in text and "series-rules_only" in text


def test_a_lead_sets_the_rules_only_share(lead):
    response = client_for(lead).post(
        "/policies/holdout/", {"prefix": SCOPE, "fraction": "0.1", "rules_only": "20%"}, follow=True
    )
    assert "10% of its tasks get no memory, 20% people&#x27;s rules only." in page_text(response)
    assert ScopePolicy.objects.get(kind="holdout", prefix=SCOPE).value == {"fraction": 0.1, "rules_only": 0.2}


def test_settings_may_set_the_rules_only_share(agent, approved, settings):
    settings.CURATION_EVALUATION = {**settings.CURATION_EVALUATION, "RULES_ONLY_FRACTIONS": {"acme": 0.5}}
    task = next(f"task-{i}" for i in range(1000) if assign_arm("acme", f"task-{i}", 0.0, 0.5) == RULES_ONLY)
    assert agent.retrieve(scope=SCOPE, task_ref=task).json()["arm"] == "rules-only"
