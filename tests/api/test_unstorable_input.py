"""Text no database stores (a NUL character, a lone surrogate) and lengths at the columns' edges: each
a 422 naming the field, on both databases, with nothing written."""

import pytest

from curation.models import Entry, Event, Evidence, Retrieval, SkillTrial
from curation.services.tokens import create_agent_token
from tests.factories import Agent, api_candidate, nominated

pytestmark = pytest.mark.django_db

# A lone surrogate can only come in as a JSON escape: json.dumps would refuse to write one.
SURROGATE_CANDIDATE = (
    '{"kind": "failure_lesson", "scope": "acme/billing-api/container", "signal": "self", '
    '"trigger": "x\\udfffy", "content": "Confirm the root."}'
)


def nothing_written():
    return (
        not Entry.objects.exists()
        and not Event.objects.filter(entry__isnull=False).exists()
        and not Evidence.objects.exists()
    )


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"trigger": "a\x00b"}, "trigger"),
        ({"content": "a\x00b"}, "content"),
        ({"source_task": "task\x00"}, "source_task"),
        ({"conditions": ["con\x00fig"]}, "conditions[0]"),
        ({"evidence": [{"kind": "tool_output", "signal": "external", "excerpt": "x\x00"}]}, "evidence[0].excerpt"),
        ({"evidence": [{"kind": "tool_output", "signal": "external", "excerpt": "x\udfff"}]}, "evidence[0].excerpt"),
        ({"trigger": "x\ud800y"}, "trigger"),
    ],
)
def test_a_submission_with_unstorable_text_is_a_422_naming_the_field(agent, overrides, field):
    body = api_candidate(**overrides)
    # ensure_ascii (json.dumps' default) writes a surrogate as its escape, as a client would send it
    response = agent.post("candidates", body)
    assert response.status_code == 422, response.content
    assert field in response.json()["errors"]
    assert nothing_written()


def test_a_lone_surrogate_escape_in_the_raw_body_is_a_422(agent):
    response = agent.post("candidates", SURROGATE_CANDIDATE)
    assert response.status_code == 422
    assert response.json()["errors"] == {
        "trigger": ["Must be valid Unicode text (it holds a lone surrogate such as \\udfff)."]
    }
    assert nothing_written()


def test_one_unstorable_item_refuses_the_whole_batch_by_its_place(agent):
    good, bad = api_candidate(), api_candidate(trigger="Another\x00trigger")
    response = agent.post("candidates/batch", {"candidates": [good, bad]})
    assert response.status_code == 422
    assert response.json()["errors"] == {"candidates[1].trigger": ["Must not contain NUL characters."]}
    assert nothing_written()


@pytest.mark.parametrize(
    "params, field",
    [
        ({"q": "a\x00b"}, "q"),
        ({"task_ref": "task\x00"}, "task_ref"),
        ({"scope": "acme/billing-api\x00"}, "scope"),
    ],
)
def test_a_retrieval_with_a_nul_in_a_parameter_is_a_422(agent, params, field):
    response = agent.get("memory", **{"scope": "acme/billing-api", **params})
    assert response.status_code == 422
    assert field in response.json()["errors"]
    assert not Retrieval.objects.exists()


def test_a_nul_in_the_path_is_a_422(agent):
    response = agent.client.get("/api/v1/skills/a%00b", **agent.headers())
    assert response.status_code == 422 and "path" in response.json()["errors"]


def test_evidence_and_feedback_bodies_are_checked_too(agent, approved):
    entry = approved()
    response = agent.post(
        f"entries/{entry.pk}/evidence",
        {"kind": "tool_output", "signal": "external", "excerpt": "ok", "task_ref": "t\x00"},
    )
    assert response.status_code == 422 and "task_ref" in response.json()["errors"]
    response = agent.post("feedback", {"retrieval_id": "\x00", "outcome": "success"})
    assert response.status_code == 422 and "retrieval_id" in response.json()["errors"]
    assert not Evidence.objects.filter(entry=entry, task_ref__startswith="t").exists()


def skill_agent():
    proposal = nominated()
    token, key = create_agent_token(name="trial-agent", scopes=[proposal.scope])
    return proposal, Agent(key, token)


@pytest.mark.parametrize(
    "task_ref, field", [("r" * 256, "task_ref"), ("task\x00", "task_ref"), ("t\udfff", "task_ref")]
)
def test_a_trial_with_a_bad_task_ref_is_a_422(reviewer, task_ref, field):
    proposal, agent = skill_agent()
    response = agent.post(f"skills/{proposal.slug}/trials", {"outcome": "success", "task_ref": task_ref})
    assert response.status_code == 422
    assert field in response.json()["errors"]
    assert not SkillTrial.objects.exists()


@pytest.mark.parametrize("length", [180, 200, 255])
def test_a_source_task_up_to_its_column_is_stored_as_sent(agent, length):
    response = agent.submit(source_task="t" * length)
    assert response.status_code == 201
    assert Entry.objects.get(pk=response.json()["id"]).source_task == "t" * length


def test_a_source_task_over_its_column_is_a_422_with_the_length_sent(agent):
    response = agent.submit(source_task="t" * 256)
    assert response.status_code == 422
    assert response.json()["errors"]["source_task"] == ["At most 255 characters (this has 256)."]
    assert nothing_written()
