"""Agents file forget requests for their users (token-scoped), and a forgotten lesson submitted again,
exactly or as a paraphrase, is answered 409 with the request and its day, never the text."""

import pytest

from curation.models import ForgetRequest
from curation.services.forgets import approve_forget_request
from tests.factories import api_candidate

pytestmark = pytest.mark.django_db

LESSON = dict(scope="acme/billing-api", trigger="Rotating the billing webhook signing key",
              content="Ask Marguerite Okonkwo to approve the rotation; she owns the webhook signing key.")
PARAPHRASE = dict(scope="acme/billing-api/container", trigger="When rotating billing webhook signing keys",
                  content="Marguerite Okonkwo owns the webhook signing key: ask her to approve any rotation.")


@pytest.fixture
def lesson(approved):
    return approved(**LESSON)


def test_an_agent_files_a_request_and_gets_its_id(agent, lesson):
    response = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "The user asked to forget it"})
    assert response.status_code == 201
    body = response.json()
    request = ForgetRequest.objects.get(pk=body["id"])
    assert body == {"id": request.pk, "state": "open", "entry_id": lesson.pk, "scope": "acme/billing-api"}
    assert request.requested_by_label == "agent:billing-agent"


def test_a_text_request_in_the_tokens_scope(agent):
    response = agent.post("forget-requests", {"text": "the colleague's phone rota", "scope": "acme/billing-api",
                                              "reason": "user request"})
    assert response.status_code == 201 and ForgetRequest.objects.get().match_text == "the colleague's phone rota"


def test_scope_isolation(make_agent, lesson):
    other = make_agent(name="web-agent", scopes=["acme/web"])
    response = other.post("forget-requests", {"entry_id": lesson.pk, "reason": "r"})
    assert response.status_code == 404
    assert other.post("forget-requests", {"text": "some text here", "scope": "acme/billing-api",
                                          "reason": "r"}).status_code == 403
    assert not ForgetRequest.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"entry_id": 1}, "reason"),
    ({"reason": "r"}, "entry_id"),
    ({"entry_id": "one", "reason": "r"}, "entry_id"),
    ({"text": "a text to forget", "reason": "r"}, "scope"),
    ({"entry_id": 1, "reason": "r", "why": "x"}, "why"),
])
def test_bad_input_is_a_422_naming_the_field(agent, lesson, body, field):
    body = {k: (lesson.pk if v == 1 and k == "entry_id" else v) for k, v in body.items()}
    response = agent.post("forget-requests", body)
    assert response.status_code == 422 and field in response.json()["errors"]


@pytest.mark.parametrize("again", [LESSON, PARAPHRASE], ids=["exact", "paraphrase"])
def test_a_forgotten_lesson_is_refused_at_ingest(agent, lead, lesson, again):
    filed = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "user asked"}).json()
    approve_forget_request(filed["id"], actor=lead)
    response = agent.submit(**again)
    assert response.status_code == 409
    body = response.json()
    assert (body["status"], body["request_id"]) == ("forgotten", filed["id"])
    assert body["forgotten_on"] == ForgetRequest.objects.get().decided_at.date().isoformat()
    assert "Okonkwo" not in response.content.decode()
    batch = agent.post("candidates/batch", {"candidates": [
        api_candidate(**again), api_candidate(**{**LESSON, "trigger": "Deploying billing",
                                                 "content": "Run the smoke tests first."})]}).json()
    refused = batch["results"][0]
    assert (refused["status"], refused["refusal"], refused["request_id"]) == (409, "forgotten", filed["id"])
    assert batch["results"][1]["ok"] and batch["created"] == 1
