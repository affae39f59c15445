"""POST /api/v1/memory-tests/run: the tests of the token's scopes, run on the published version or a pinned one."""

from curation.models import Event, EventAction
from curation.services.memory_tests import create_memory_test
from curation.services.releases import publish_version


def a_test(lead, scope, expectations, name="lesson"):
    return create_memory_test(
        data={
            "scope": scope,
            "name": name,
            "query": "Editing config files",
            "k": "5",
            "budget_tokens": "500",
            "expectations": expectations,
        },
        actor=lead,
    )


def test_an_agent_runs_the_tests_of_its_scopes(agent, approved, lead):
    entry = approved(scope="acme/billing-api/container")
    publish_version(actor=lead, summary="v2")
    passing = a_test(lead, "acme/billing-api/container", f"top #{entry.pk}", name="has it")
    failing = a_test(lead, "acme/billing-api", f"top #{entry.pk}", name="not asked below")  # reads only its ancestors
    elsewhere = a_test(lead, "acme/web", "top #1")
    agent.publish_first = False

    response = agent.post("memory-tests/run", {})

    assert response.status_code == 200
    body = response.json()
    assert (body["memory_version"], body["passed"], body["failed"]) == (2, 1, 1)
    by_test = {r["memory_test"]: r for r in body["results"]}
    assert set(by_test) == {passing.pk, failing.pk}  # not the other scope's
    assert by_test[passing.pk]["received"] == [entry.pk] and by_test[passing.pk]["failures"] == []
    assert by_test[failing.pk]["failures"] == [f"#{entry.pk} is not among the lessons received"]
    run = Event.objects.get(memory_test=passing, action=EventAction.MEMORY_TEST_PASSED)
    assert (run.actor_label, run.memory_version.number) == ("agent:billing-agent", 2)
    assert not Event.objects.filter(memory_test=elsewhere, action__startswith="memory_test_p").exists()


def test_a_scope_a_version_and_bad_input(agent, approved, lead):
    a_test(lead, "acme/billing-api", "top #1")
    agent.publish_first = False
    only = agent.post("memory-tests/run", {"scope": "acme/billing-api/container", "version": 1}).json()
    assert (only["memory_version"], only["results"]) == (1, [])  # the test is asked above that scope
    assert agent.post("memory-tests/run", {"scope": "acme/web"}).status_code == 403
    assert agent.post("memory-tests/run", {"version": 7}).status_code == 404
    bad = agent.post("memory-tests/run", {"scope": "../etc"})
    assert bad.status_code == 422 and "scope" in bad.json()["errors"]
    assert agent.post("memory-tests/run", {"k": 3}).status_code == 422
    # null is the field left out; an empty scope, a scope as a number or a version as a list is refused.
    assert agent.post("memory-tests/run", {"scope": None, "version": None}).json()["memory_version"] == 1
    for body, field in (({"scope": ""}, "scope"), ({"version": [1]}, "version"), ({"scope": 7}, "scope")):
        refused = agent.post("memory-tests/run", body)
        assert refused.status_code == 422 and field in refused.json()["errors"], body
