"""POST /api/v1/feedback: the confidence arithmetic, counters, rechecks and idempotency."""

import datetime

import pytest
from django.utils import timezone

from curation.models import Entry, Event, Feedback, QueueReason, Status
from tests.factories import publish_pending

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def steps_rule(settings):
    """These pin the design notes' rule (+0.05 / -0.2), which stays selectable as OUTCOME_RULE "steps";
    the default rule, judged against the baseline, is pinned in test_feedback_lift.py."""
    settings.CURATION = {**settings.CURATION, "OUTCOME_RULE": "steps"}


def _retrieve(agent, **params):
    body = agent.retrieve(scope="acme/billing-api", **params).json()
    return body["retrieval_id"], [e["id"] for e in body["entries"]]


def test_success_adds_the_step_reverifies_and_counts(agent, approved):
    entry = approved(
        scope="acme/billing-api",
        signal="external",
        confidence=0.7,
        evidence=[{"kind": "test_result", "signal": "external", "excerpt": "green"}],
    )
    Entry.objects.filter(pk=entry.pk).update(last_verified_at=timezone.now() - datetime.timedelta(days=10))
    retrieval_id, ids = _retrieve(agent)
    response = agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "success", "utility": 0.9})
    assert response.status_code == 200
    body = response.json()
    assert body["recorded"] is True
    # Before: 0.7 decayed over the ten days since its verification; after: re-verified at 0.75.
    assert body["entries"] == [
        {
            "id": entry.pk,
            "confidence_before": round(0.7 * 0.95 ** (10 / 30), 4),
            "confidence": 0.75,
            "queued_for_recheck": False,
        }
    ]
    entry.refresh_from_db()
    assert entry.base_confidence == pytest.approx(0.75) and entry.confidence == pytest.approx(0.75)
    assert (entry.hit_count, entry.utility_n) == (1, 1) and entry.utility_sum == pytest.approx(0.9)
    assert timezone.now() - entry.last_verified_at < datetime.timedelta(minutes=1)
    assert Event.objects.filter(entry=entry, action="outcome_success").count() == 1


def test_success_never_passes_the_self_cap_without_external_evidence(agent, approved):
    entry = approved(scope="acme/billing-api", signal="self", confidence=0.84)
    retrieval_id, _ = _retrieve(agent)
    agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "success"})
    entry.refresh_from_db()
    assert entry.base_confidence == pytest.approx(0.85)
    assert entry.utility_sum == pytest.approx(1.0)  # no utility given: a success counts as 1


def test_failure_subtracts_and_sends_the_entry_back_for_a_recheck(agent, approved):
    entry = approved(scope="acme/billing-api", signal="external", confidence=0.8)
    retrieval_id, _ = _retrieve(agent, task_ref="task-501")
    body = agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "failure", "utility": 0.1}).json()
    assert body["entries"][0]["confidence"] == pytest.approx(0.6)
    assert body["entries"][0]["queued_for_recheck"] is True
    entry.refresh_from_db()
    assert entry.status == Status.ACTIVE  # it stays active until a reviewer decides
    assert entry.queue_reason == QueueReason.RECHECK_FAILURE and entry.queued_at is not None
    event = Event.objects.get(entry=entry, action="outcome_failure")
    assert "failed" in event.reason and "task-501" in event.reason and "recheck" in event.reason
    assert event.actor_label == "agent:billing-agent"


def test_failure_never_goes_below_the_floor(agent, approved, settings):
    entry = approved(scope="acme/billing-api", signal="external", confidence=0.1)
    retrieval_id, _ = _retrieve(agent, min_confidence=0.05)  # raised to the retrieval floor...
    assert _ == []  # ...so a 0.1 entry is not even handed out
    settings.CURATION = {**settings.CURATION, "FAILURE_STEP": 0.6}  # one failure takes more than it has
    Entry.objects.filter(pk=entry.pk).update(base_confidence=0.55)
    publish_pending(written_directly=[entry])  # a plain UPDATE: no service marked it for the next release
    retrieval_id, ids = _retrieve(agent)
    agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "failure"})
    entry.refresh_from_db()
    assert entry.base_confidence == pytest.approx(0.05)


def test_used_limits_the_entries_that_get_the_outcome(agent, approved):
    first = approved(scope="acme/billing-api", trigger="First situation", content="First lesson.")
    second = approved(scope="acme/billing-api", trigger="Second situation", content="Second lesson here.")
    retrieval_id, ids = _retrieve(agent)
    assert set(ids) == {first.pk, second.pk}
    body = agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "success", "used": [second.pk]}).json()
    assert [e["id"] for e in body["entries"]] == [second.pk]
    first.refresh_from_db()
    assert first.hit_count == 0


def test_a_repeat_changes_nothing_and_says_so(agent, approved):
    entry = approved(scope="acme/billing-api", signal="external", confidence=0.8)
    retrieval_id, _ = _retrieve(agent)
    agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "failure"})
    entry.refresh_from_db()
    state = (entry.base_confidence, entry.hit_count, entry.version)
    repeat = agent.post("feedback", {"retrieval_id": retrieval_id, "outcome": "success"})
    assert repeat.status_code == 200
    assert repeat.json()["recorded"] is False and "already recorded" in repeat.json()["message"]
    entry.refresh_from_db()
    assert (entry.base_confidence, entry.hit_count, entry.version) == state
    assert Feedback.objects.get().outcome == "failure"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"outcome": "success"}, "retrieval_id"),
        ({"retrieval_id": "RID", "outcome": "meh"}, "outcome"),
        ({"retrieval_id": "RID", "outcome": "success", "utility": 1.5}, "utility"),
        ({"retrieval_id": "RID", "outcome": "success", "utility": True}, "utility"),
        ({"retrieval_id": "RID", "outcome": "success", "used": [424242]}, "used"),
        ({"retrieval_id": "RID", "outcome": "success", "used": "all"}, "used"),
    ],
)
def test_bad_feedback_is_422_and_changes_nothing(agent, approved, body, field):
    approved(scope="acme/billing-api")
    retrieval_id, _ = _retrieve(agent)
    body = {k: (retrieval_id if v == "RID" else v) for k, v in body.items()}
    response = agent.post("feedback", body)
    assert response.status_code == 422 and field in response.json()["errors"]
    assert not Feedback.objects.exists()


def test_unknown_or_foreign_retrieval_is_404(agent, make_agent, approved):
    approved(scope="acme/billing-api")
    retrieval_id, _ = _retrieve(agent)
    other = make_agent("other-agent", scopes=["acme/billing-api"])
    assert other.post("feedback", {"retrieval_id": retrieval_id, "outcome": "success"}).status_code == 404
    assert agent.post("feedback", {"retrieval_id": "not-a-uuid", "outcome": "success"}).status_code == 404
    assert not Feedback.objects.exists()
