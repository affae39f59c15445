"""The holdout arm on the agent API: a held-out task gets no memory and says so, its outcome counts for the
comparison and moves no entry; GET /api/v1/evaluation answers the figures within the token's scopes."""

import pytest

from curation.rules.evaluation import HOLDOUT, MEMORY, assign_arm
from curation.models import Entry, Event, Feedback, LessonTally, OutcomeTally, Retrieval
from tests.factories import set_holdout

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"


def _task_in(arm: str, fraction: float = 0.5, prefix: str = SCOPE, start: int = 0) -> str:
    return next(f"task-{i}" for i in range(start, start + 10_000) if assign_arm(prefix, f"task-{i}", fraction) == arm)


@pytest.fixture
def half_held_out(db):
    return set_holdout(SCOPE, 0.5)


def test_a_holdout_task_gets_no_entries_an_empty_context_and_its_arm(agent, approved, half_held_out):
    approved(scope=SCOPE, signal="external", confidence=0.8)
    task = _task_in(HOLDOUT)
    body = agent.post("memory/search", {"scope": SCOPE, "q": "config", "task_ref": task}).json()
    assert body["arm"] == "holdout"
    assert body["entries"] == [] and body["context"] == ""
    retrieval = Retrieval.objects.get(pk=body["retrieval_id"])
    assert retrieval.arm == "holdout" and retrieval.entry_ids == [] and not retrieval.items.exists()
    # The same task again (a retry, its next step): the same arm.
    assert agent.post("memory/search", {"scope": SCOPE, "task_ref": task}).json()["arm"] == "holdout"


def test_a_memory_task_gets_memory_and_says_so(agent, approved, half_held_out):
    entry = approved(scope=SCOPE, signal="external", confidence=0.8)
    body = agent.retrieve(scope=SCOPE, task_ref=_task_in(MEMORY)).json()
    assert body["arm"] == "memory" and [e["id"] for e in body["entries"]] == [entry.pk] and body["context"]


def test_without_a_task_reference_every_read_gets_memory(agent, approved, half_held_out):
    approved(scope=SCOPE, signal="external", confidence=0.8)
    arms = {agent.retrieve(scope=SCOPE).json()["arm"] for _ in range(20)}
    assert arms == {"memory"}


def test_settings_fraction_applies_and_the_longest_prefix_wins(agent, approved, settings):
    approved(scope=SCOPE, signal="external", confidence=0.8)
    settings.CURATION_EVALUATION = {**settings.CURATION_EVALUATION, "HOLDOUT_FRACTIONS": {"acme": 0.5}}
    task = _task_in(HOLDOUT, prefix="acme")
    assert agent.retrieve(scope=SCOPE, task_ref=task).json()["arm"] == "holdout"
    set_holdout(SCOPE, 0.0)  # a lead turned it off for billing-api
    assert agent.retrieve(scope=SCOPE, task_ref=task).json()["arm"] == "memory"


def test_a_holdout_outcome_counts_and_changes_no_entry(agent, approved, half_held_out):
    entry = approved(scope=SCOPE, signal="external", confidence=0.8)
    before = Entry.objects.values().get(pk=entry.pk)
    events = Event.objects.filter(entry=entry).count()
    body = agent.post("memory/search", {"scope": SCOPE, "task_ref": _task_in(HOLDOUT)}).json()
    answer = agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "failure", "utility": 0.0})
    assert answer.status_code == 200
    assert answer.json() == {"recorded": True, "outcome": "failure", "arm": "holdout", "entries": []}
    assert Entry.objects.values().get(pk=entry.pk) == before  # confidence, utility, counters, queue: untouched
    assert Event.objects.filter(entry=entry).count() == events
    assert Feedback.objects.get(retrieval_id=body["retrieval_id"]).outcome == "failure"
    tally = OutcomeTally.objects.get(scope=SCOPE, arm="holdout")
    assert (tally.tasks, tally.successes) == (1, 0)
    assert not LessonTally.objects.exists()


def test_a_holdout_outcome_cannot_name_entries(agent, approved, half_held_out):
    entry = approved(scope=SCOPE, signal="external", confidence=0.8)
    body = agent.post("memory/search", {"scope": SCOPE, "task_ref": _task_in(HOLDOUT)}).json()
    answer = agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "success", "used": [entry.pk]})
    assert answer.status_code == 422 and "used" in answer.json()["errors"]


def test_memory_outcomes_are_tallied_per_arm_and_per_entry(agent, approved, half_held_out):
    entry = approved(scope=SCOPE, signal="external", confidence=0.8)
    for i, outcome in enumerate(["success", "success", "failure"]):
        body = agent.retrieve(scope=SCOPE, task_ref=_task_in(MEMORY, start=i * 100 + 1000)).json()
        assert agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": outcome}).status_code == 200
    tally = OutcomeTally.objects.get(scope=SCOPE, arm="memory")
    assert (tally.tasks, tally.successes) == (3, 2)
    lesson = LessonTally.objects.get(entry=entry)
    assert (lesson.tasks, lesson.successes) == (3, 2)
    # A repeated report changes nothing, in the tallies too.
    agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "success"})
    assert OutcomeTally.objects.get(scope=SCOPE, arm="memory").tasks == 3


def test_evaluation_answers_the_comparison_for_the_tokens_scope(agent, half_held_out):
    body = agent.get("evaluation", scope=SCOPE).json()
    assert body["scope"] == SCOPE and set(body["windows"]) == {"7", "30", "90"}
    assert body["windows"]["30"]["verdict"] == "not_enough"
    assert body["windows"]["30"]["text"].startswith("not enough tasks yet")
    assert len(body["weekly"]) == 13 and body["lessons"]["help"] == [] and body["recurring_failures"] == []


def test_evaluation_refuses_other_scopes_and_bad_parameters(agent, make_agent):
    assert agent.get("evaluation", scope="globex").status_code == 403
    missing = agent.get("evaluation")
    assert missing.status_code == 422 and "scope" in missing.json()["errors"]
    bad_days = agent.get("evaluation", scope=SCOPE, days="12")
    assert bad_days.status_code == 422 and "days" in bad_days.json()["errors"]
    assert agent.client.get("/api/v1/evaluation", {"scope": SCOPE}).status_code == 401


def test_evaluation_counts_only_the_tokens_scopes(agent, make_agent, half_held_out):
    other = make_agent(name="web-agent", scopes=("acme/web",))
    body = other.retrieve(scope="acme/web", task_ref="task-1").json()
    other.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": "success"})
    assert agent.get("evaluation", scope=SCOPE).json()["windows"]["30"]["tasks"] == 0
    assert other.get("evaluation", scope="acme/web").json()["windows"]["30"]["tasks"] == 1
