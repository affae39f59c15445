"""A scope with '.' or '..' segments is refused with a 422 that says why, wherever the agent API takes
one: a submission (alone or in a batch), a retrieval, the skills filter; and by the token command."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from curation.models import AgentToken, Entry

pytestmark = pytest.mark.django_db

WHY = "may not be '.' or '..', nor start or end with '.'"
DOTTED = ["acme/../globex", "acme/./billing-api", "acme/billing-api/..", "./acme/billing-api", ".acme"]


@pytest.mark.parametrize("scope", DOTTED)
def test_a_submission_to_a_dotted_scope_is_422(agent, scope):
    response = agent.submit(scope=scope)
    assert response.status_code == 422 and WHY in response.json()["errors"]["scope"][0]
    batch = agent.post(
        "candidates/batch",
        {"candidates": [{"scope": scope, "kind": "fact", "trigger": "t", "content": "c", "signal": "self"}]},
    ).json()
    assert batch["results"][0]["status"] == 422 and WHY in str(batch["results"][0])
    assert not Entry.objects.exists()


@pytest.mark.parametrize("scope", DOTTED)
def test_a_retrieval_or_skills_filter_with_a_dotted_scope_is_422(agent, scope):
    for response in (agent.retrieve(scope=scope), agent.get("skills", scope=scope)):
        assert response.status_code == 422 and WHY in response.json()["errors"]["scope"][0]


@pytest.mark.parametrize("scope", DOTTED)
def test_the_token_command_refuses_a_dotted_scope(scope):
    with pytest.raises(CommandError, match="nor start or end with"):
        call_command("create_agent_token", "dotted", "--scope", scope, stdout=StringIO(), stderr=StringIO())
    assert not AgentToken.objects.exists()
