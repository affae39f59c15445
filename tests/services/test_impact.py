"""A candidate's impact before approval: the scope's recent retrievals replayed with it, and the memory tests it
would turn; nothing of the replay is kept."""

import pytest

from curation import services
from curation.models import Entry, ReleasedEntry
from curation.services.impact import candidate_impact
from curation.services.memory_tests import create_memory_test
from curation.services.releases import publish_version
from curation.services.tokens import create_agent_token
from curation.services.usage import record_retrieval
from tests.factories import active, candidate_data, make_user

SCOPE = "acme/billing-api"
KEY = dict(trigger="Rotating the webhook signing key", content="Rotate the webhook signing key in the vault first.")


@pytest.fixture
def scene(lead, reviewer):
    published = active(reviewer, scope=SCOPE, **KEY)
    publish_version(actor=lead, summary="v2")
    token, _ = create_agent_token(name="billing-agent", scopes=["acme/billing-api"], actor=lead)
    asked = record_retrieval(
        token=token, scope=f"{SCOPE}/container", query="webhook signing key", task_ref="", entries=[published]
    )
    record_retrieval(token=token, scope="acme/web", query="webhook signing key", task_ref="", entries=[])  # elsewhere
    candidate = services.create_candidate(
        data=candidate_data(
            scope=SCOPE,
            trigger="Rotating the webhook signing key twice",
            content="After rotating the webhook signing key, restart the webhook workers.",
            confidence=0.9,
        ),
        actor_label="agent:ci",
    )
    return published, asked, candidate


def test_the_recent_retrievals_it_would_reach_and_the_tests_it_turns(scene, lead, reviewer):
    published, asked, candidate = scene
    turned = create_memory_test(
        data={
            "scope": SCOPE,
            "name": "one key lesson",
            "query": "webhook signing key",
            "k": "5",
            "budget_tokens": "500",
            "expectations": f"absent #{candidate.pk}",
        },
        actor=lead,
    )
    rows = ReleasedEntry.objects.count()

    impact = candidate_impact(candidate.pk, user=reviewer)

    assert impact.replayed == 1  # the acme/web retrieval does not read this scope
    [reached] = impact.reached
    assert reached.retrieval == asked and reached.rank in (1, 2) and reached.of == 2
    [test] = impact.turned
    assert (test.test, test.passed_before, test.passed_after) == (turned, True, False)
    assert test.failures[0].startswith(f"#{candidate.pk} is received")
    assert ReleasedEntry.objects.count() == rows  # the replay's row went with its transaction
    assert Entry.objects.get(pk=candidate.pk).status == "pending"


def test_outside_the_readers_scopes_or_not_a_candidate_it_is_unknown(scene):
    published, _, candidate = scene
    with pytest.raises(Entry.DoesNotExist):
        candidate_impact(candidate.pk, user=make_user("sid", "reviewer", scopes=["acme/web"]))
    with pytest.raises(Entry.DoesNotExist):
        candidate_impact(published.pk, user=make_user("ted", "reviewer"))
