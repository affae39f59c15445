"""`Idempotency-Key` on submissions: a retried request gets its first answer again and writes nothing
more; the answer is kept in the database for IDEMPOTENCY_KEEP_HOURS."""

import datetime
import json

import pytest

from curation.rules import config
from curation.models import Entry, Event, Evidence, IdempotentAnswer
from curation.services.idempotency import clean_key
from tests.factories import Agent, api_candidate, run_together

EVIDENCE = [{"kind": "tool_output", "signal": "external", "excerpt": "exit 0 after the fix", "task_ref": "task-1"}]


def submit(agent, key, **overrides):
    return agent.post("candidates", api_candidate(evidence=EVIDENCE, **overrides), HTTP_IDEMPOTENCY_KEY=key)


@pytest.mark.django_db
def test_a_retry_gets_the_first_answer_and_writes_nothing(agent):
    first = submit(agent, "retry-1")
    again = submit(agent, "retry-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and first.json()["created"] is True
    assert again["Idempotent-Replayed"] == "true" and not first.has_header("Idempotent-Replayed")
    assert Entry.objects.count() == 1 and Evidence.objects.count() == 1
    assert Event.objects.filter(entry__isnull=False).count() == 1
    other = submit(agent, "retry-2")  # a new key is a new request: the duplicate answer, its evidence added
    assert other.json()["created"] is False and Evidence.objects.count() == 2


@pytest.mark.django_db
def test_a_batch_retry_gets_the_first_answer(agent):
    body = {"candidates": [api_candidate(trigger=f"Batch trigger {i}", content=f"Lesson {i}.") for i in range(3)]}
    first = agent.post("candidates/batch", body, HTTP_IDEMPOTENCY_KEY="batch-1")
    again = agent.post("candidates/batch", body, HTTP_IDEMPOTENCY_KEY="batch-1")
    assert again.json() == first.json() and first.json()["created"] == 3
    assert Entry.objects.count() == 3


@pytest.mark.django_db
def test_the_key_is_the_tokens_own(agent, make_agent):
    other = make_agent("other-agent")
    assert submit(agent, "shared-key").json()["created"] is True
    answer = submit(other, "shared-key")
    assert answer.json()["created"] is False and not answer.has_header("Idempotent-Replayed")


@pytest.mark.django_db
def test_the_same_key_for_another_request_is_a_422(agent):
    submit(agent, "reused")
    response = submit(agent, "reused", trigger="A different lesson altogether")
    assert response.status_code == 422 and "Idempotency-Key" in response.json()["errors"]
    assert Entry.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "é" * 3, "k" * 256])
def test_a_malformed_key_is_a_422(agent, key):
    response = agent.post("candidates", api_candidate(), HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 422 and "Idempotency-Key" in response.json()["errors"]
    assert not Entry.objects.exists()


@pytest.mark.django_db
def test_a_refusal_is_not_kept(agent):
    assert submit(agent, "fix-and-retry", trigger="").status_code == 422
    assert submit(agent, "fix-and-retry").status_code == 201


@pytest.mark.django_db
def test_the_answer_is_kept_for_its_hours_then_the_key_is_free(agent, settings):
    first = submit(agent, "old-key")
    stored = IdempotentAnswer.objects.get(key=clean_key("old-key"))
    assert "old-key" not in str(IdempotentAnswer.objects.values().get())  # only its hash is kept
    assert (stored.status, stored.answer) == (201, first.json())  # in the database: it outlives a restart
    hours = config.IDEMPOTENCY_KEEP_HOURS.value
    IdempotentAnswer.objects.filter(pk=stored.pk).update(
        created_at=stored.created_at - datetime.timedelta(hours=hours, minutes=1)
    )
    later = submit(agent, "old-key")
    assert later.json()["created"] is False and not later.has_header("Idempotent-Replayed")
    assert IdempotentAnswer.objects.filter(key=clean_key("old-key")).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_same_key_sent_at_once_is_answered_once(agent):
    agents = [Agent(agent.key, agent.token) for _ in range(5)]
    responses = run_together([lambda a=a: submit(a, "at-once") for a in agents])
    assert [getattr(r, "status_code", r) for r in responses] == [201] * 5
    assert len({json.dumps(r.json(), sort_keys=True) for r in responses}) == 1
    assert Entry.objects.count() == 1 and Evidence.objects.count() == 1
