"""Agents read the published memory version: which one, pinned versions, and the export's scopes."""

from curation.models import Retrieval
from curation.selectors import releases as reads
from curation.services import skills
from curation.services.releases import publish_version, rollback_version
from tests.factories import nominated, publish_pending, report


def _ids(response):
    return [e["id"] for e in response.json()["entries"]]


def test_an_approval_reaches_agents_only_when_published(agent, approved, lead):
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", boundary="b")
    before = agent.retrieve()
    assert before.json()["memory_version"] == 1 and _ids(before) == []

    publish_version(actor=lead, summary="billing")
    after = agent.retrieve()
    assert after.json()["memory_version"] == 2 and _ids(after) == [entry.pk]
    assert Retrieval.objects.get(pk=after.json()["retrieval_id"]).memory_version == 2


def test_a_pinned_version_answers_the_same_after_a_new_publish(agent, approved, lead):
    agent.publish_first = False
    first = approved(scope="acme/billing-api", boundary="b", trigger="First lesson about containers")
    publish_version(actor=lead, summary="v2")
    second = approved(scope="acme/billing-api", boundary="b", trigger="Second lesson about invoices")
    publish_version(actor=lead, summary="v3")
    assert sorted(_ids(agent.retrieve())) == sorted([first.pk, second.pk])
    pinned = agent.retrieve(version=2)
    assert pinned.json()["memory_version"] == 2 and _ids(pinned) == [first.pk]
    searched = agent.post("memory/search", {"scope": "acme/billing-api", "version": 2})
    assert [e["id"] for e in searched.json()["entries"]] == [first.pk]
    missing = agent.retrieve(version=99)
    assert missing.status_code == 404 and "No memory version 99" in missing.json()["error"]


def test_a_rollback_is_what_agents_read_next(agent, approved, lead):
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", boundary="b")
    publish_version(actor=lead, summary="v2")
    rollback_version(1, actor=lead, reason="bad release")
    response = agent.retrieve()
    assert response.json()["memory_version"] == 1 and entry.pk not in _ids(response)


def test_skills_say_which_version(agent):
    body = agent.get("skills").json()
    assert "memory_version" in body and body["skills"] == []


def test_the_export_holds_only_the_tokens_scopes(make_agent, approved, lead):
    billing = approved(scope="acme/billing-api", boundary="b", trigger="Billing only lesson")
    web = approved(scope="acme/web", boundary="b", trigger="Web only lesson")
    publish_version(actor=lead, summary="both")
    agent = make_agent(scopes=("acme/billing-api",))
    body = agent.get("export").json()
    text = "\n".join(body["files"].values())
    assert body["memory_version"] == 2
    assert f"#{billing.pk} When billing only lesson" in text and "Web only lesson" not in text
    assert f"#{web.pk}" not in text
    assert agent.get("export", scope="acme/web").status_code == 403
    # `scope=` with no value is a bad scope, not the whole export: leaving the parameter out is.
    empty = agent.get("export", scope="")
    assert empty.status_code == 422 and "scope" in empty.json()["errors"]


def test_the_export_of_an_unknown_version_is_a_404(agent):
    assert agent.get("export", version=5).status_code == 404


def test_an_approved_skill_reaches_agents_when_published_and_withholds_its_sources(agent, lead):
    agent.publish_first = False
    proposal = nominated()
    report(proposal, ["success"] * 5)
    publish_pending()  # the source entry as released before the skill
    skills.approve_skill(proposal.pk, actor=lead, expected_version=1)
    assert agent.get("skills").json()["skills"] == []  # pending: a skill approval waits for a lead
    [change] = [c for c in reads.pending_changes() if c.is_skill]
    assert change.kind == "added" and change.cause.action == "skill_approved"

    version = publish_version(actor=lead, summary="the skill", acknowledge=True)
    listed = agent.get("skills").json()
    assert listed["memory_version"] == version.number and [s["slug"] for s in listed["skills"]] == [proposal.slug]
    assert agent.get("skills", version=version.number - 1).json()["skills"] == []
    released = reads.released_entries(version.number).values_list("entry_id", flat=True)
    assert proposal.nominated_entry_id not in released  # the skill replaces its source in this version
    assert proposal.nominated_entry_id in reads.released_entries(version.number - 1).values_list("entry_id", flat=True)
