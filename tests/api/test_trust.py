"""Provenance trust end to end: what an agent may claim through the API, how a lesson's level rises (only on
another source's confirmation) and never through a merge or an approval, the two leads a skill of untrusted
sources needs, retrieval at a minimum trust, the context block's mark, the queue's filter, the card and the
entry page, and imported memory by who wrote the file."""

import pytest
from django.urls import reverse

from curation.models import Entry, Event, EventAction, Evidence, SkillProposal
from curation.rules.memory_import import SourceFile, read
from curation.rules.trust import Trust
from curation.services import add_evidence, approve_candidate, consolidation, skills
from curation.services.errors import InvalidTransition
from curation.services.imports import import_memory
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active, api_candidate, client_for, make_user, nominated, page_text, report

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"
LESSON = dict(
    scope=SCOPE,
    trigger="Rotating the billing webhook signing key",
    content="Rotate the key in the vault first, then restart the webhook workers.",
)
RELAYED = {
    "kind": "tool_output",
    "signal": "external",
    "source": "relayed",
    "excerpt": "From a blog post: rotate first",
}
OWN = {"kind": "reflection", "signal": "self", "excerpt": "Saw the same: the old key fails after a restart."}
VERIFICATION = {
    "kind": "test_result",
    "signal": "external",
    "source": "verification",
    "evaluator": "pytest tests/webhooks",
    "excerpt": "12 passed: the rotation keeps signed webhooks valid",
}


def level(entry_id) -> str:
    return Trust(Entry.objects.get(pk=entry_id).trust).label


# --- what an agent may claim ---------------------------------------------------------------------------------


def test_an_agent_claiming_a_persons_decision_is_refused_and_nothing_is_written(agent):
    before = Entry.objects.count(), Evidence.objects.count()
    answer = agent.submit(
        **LESSON, evidence=[{"kind": "user_statement", "signal": "external", "source": "person", "excerpt": "yes"}]
    )
    assert answer.status_code == 422
    assert "cannot record a person's decision" in answer.json()["errors"]["evidence[0].source"][0]
    assert (Entry.objects.count(), Evidence.objects.count()) == before


def test_a_verification_must_name_its_check(agent):
    answer = agent.submit(**LESSON, evidence=[{**VERIFICATION, "evaluator": ""}])
    assert answer.status_code == 422
    assert "check named in 'evaluator'" in answer.json()["errors"]["evidence[0].source"][0]
    answer = agent.submit(**LESSON, evidence=[{**VERIFICATION, "source": "trusted"}])
    assert answer.json()["errors"]["evidence[0].source"] == ["One of: own, verification, relayed, person."]


def test_a_lesson_resting_on_relayed_content_is_untrusted_and_says_why(agent):
    created = agent.submit(**LESSON, evidence=[RELAYED]).json()
    detail = agent.get(f"entries/{created['id']}").json()
    assert detail["trust"] == "untrusted"
    assert (
        detail["trust_why"] == "untrusted: it rests on content relayed from elsewhere, not confirmed by another source"
    )
    assert [(e["source"], e["trust"]) for e in detail["evidence"]] == [("relayed", "untrusted")]


def test_its_own_author_cannot_raise_it_and_another_agent_can(make_agent):
    writer, other = make_agent("writer"), make_agent("checker")
    entry_id = writer.submit(**LESSON).json()["id"]
    assert level(entry_id) == "agent"
    # The author's own verification and its repeating the lesson: still the author's word.
    assert writer.post(f"entries/{entry_id}/evidence", VERIFICATION).json()["evidence"]["trust"] == "verified"
    assert writer.submit(**LESSON).json()["duplicate_of"] == entry_id
    assert level(entry_id) == "agent"
    assert not Event.objects.filter(entry_id=entry_id, action=EventAction.TRUST_RAISED).exists()
    # Another token sending the same lesson with its own evidence is an independent agent.
    assert other.submit(**LESSON, evidence=[OWN]).json()["duplicate_of"] == entry_id
    assert level(entry_id) == "independent"
    # Another token's verification: verified, with the Event that says who confirmed it.
    piece = other.post(f"entries/{entry_id}/evidence", VERIFICATION).json()["evidence"]
    assert level(entry_id) == "verified"
    raised = Event.objects.filter(entry_id=entry_id, action=EventAction.TRUST_RAISED).order_by("id").last()
    assert raised.reason == f"verified: confirmed by agent:checker (evidence #{piece['id']})"
    assert (raised.before["trust"], raised.after["trust"]) == (Trust.INDEPENDENT, Trust.VERIFIED)


def test_in_a_batch_a_repeated_lesson_is_raised_by_its_own_evidence_only(make_agent):
    """Another token repeating a lesson in a batch raises it by the evidence it sent with that lesson, not by
    the other items' (here a verification of another lesson)."""
    writer, other = make_agent("writer"), make_agent("checker")
    entry_id = writer.submit(**LESSON).json()["id"]
    fresh = {**LESSON, "trigger": "Restarting the billing webhook workers", "content": "Drain the queue first."}
    results = other.post(
        "candidates/batch",
        {"candidates": [api_candidate(**LESSON, evidence=[OWN]), api_candidate(**fresh, evidence=[VERIFICATION])]},
    ).json()["results"]
    assert [r["ok"] for r in results] == [True, True] and results[0]["duplicate_of"] == entry_id
    assert level(entry_id) == "independent" and level(results[1]["id"]) == "agent"
    raised = Event.objects.get(entry_id=entry_id, action=EventAction.TRUST_RAISED)
    assert (raised.before["trust"], raised.after["trust"]) == (Trust.AGENT, Trust.INDEPENDENT)


def test_an_approval_does_not_raise_trust_and_a_persons_own_evidence_does(reviewer):
    entry = active(reviewer, **LESSON)
    assert Trust(entry.trust) is Trust.AGENT  # approved, still the agent's word
    add_evidence(
        entry.pk,
        data={"kind": "review", "signal": "external", "excerpt": "Checked the runbook: right."},
        actor=reviewer,
    )
    assert level(entry.pk) == "person"
    page = page_text(client_for(reviewer).get(reverse("curation:entry", args=[entry.pk])))
    assert "trust person" in page and f"Trust person: confirmed by {reviewer.username}" in page


# --- merges never raise it --------------------------------------------------------------------------------------


def test_a_merge_is_no_more_trusted_than_its_lowest_source(reviewer):
    port = dict(trigger="Connecting to the billing database from the container", conditions=["db"], boundary="")
    low = active(
        reviewer,
        scope=SCOPE,
        confidence=0.6,
        content="Probe port 5432 with nc before connecting.",
        evidence=[RELAYED],
        **port,
    )
    high = active(reviewer, scope=SCOPE, confidence=0.8, content="Probe port 5432 with nc before connecting!", **port)
    add_evidence(high.pk, data={"kind": "review", "signal": "external", "excerpt": "I checked."}, actor=reviewer)
    assert (level(low.pk), level(high.pk)) == ("untrusted", "person")
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    merged = consolidation.accept_proposal(proposal.pk, actor=reviewer).created
    assert level(merged.pk) == "untrusted"
    # The person's piece came along as a copy: it is the source's, and confirms nothing here.
    copies = Evidence.objects.filter(entry=merged)
    assert {e.trust for e in copies} == {Trust.UNTRUSTED, Trust.PERSON} and all(e.copied_from_id for e in copies)
    assert Event.objects.get(entry=merged, action="consolidation_merge").after["trust"] == (
        "untrusted: the lowest of its sources"
    )


# --- skills -------------------------------------------------------------------------------------------------------


def test_a_skill_of_untrusted_sources_needs_two_leads(lead):
    proposal = nominated()
    report(proposal)
    # Its source rests on relayed content (as an agent's submission with a relayed piece makes it).
    Entry.objects.filter(pk=proposal.nominated_entry_id).update(trust=Trust.UNTRUSTED)
    skills.approve_skill(proposal.pk, actor=lead, expected_version=proposal.version)
    proposal.refresh_from_db()
    assert (proposal.status, proposal.first_approval_by) == ("nominated", lead)
    first = Event.objects.get(skill=proposal, action=EventAction.SKILL_FIRST_APPROVAL)
    assert "lowest trust is untrusted" in first.reason
    card = page_text(client_for(lead).get(reverse("curation:skill-card", args=[proposal.pk])))
    assert 'Trust: <span class="badge trust-untrusted">untrusted</span>' in card
    assert f"approved by {lead.username}" in card
    with pytest.raises(InvalidTransition, match="a second lead, other than the one who approved it first"):
        skills.approve_skill(proposal.pk, actor=lead, expected_version=proposal.version)
    second = make_user("lars", "lead")
    skills.approve_skill(proposal.pk, actor=second, expected_version=proposal.version)
    assert SkillProposal.objects.get(pk=proposal.pk).status == "approved"


def test_a_skill_of_an_agents_lessons_takes_one_lead(lead):
    proposal = nominated()
    report(proposal)
    skills.approve_skill(proposal.pk, actor=lead, expected_version=proposal.version)
    assert SkillProposal.objects.get(pk=proposal.pk).status == "approved"


# --- reading at a minimum trust --------------------------------------------------------------------------------


@pytest.fixture
def two_levels(make_agent, reviewer):
    """Two active lessons of the scope: one resting on relayed content, one another agent confirmed."""
    writer, other = make_agent("writer"), make_agent("checker")
    untrusted = writer.submit(**LESSON, evidence=[RELAYED]).json()["id"]
    confirmed_lesson = {**LESSON, "trigger": "Restarting the webhook workers", "content": "Drain the queue first."}
    confirmed = writer.submit(**confirmed_lesson).json()["id"]
    other.submit(**confirmed_lesson, evidence=[OWN])
    for pk in (untrusted, confirmed):
        approve_candidate(pk, actor=reviewer, expected_version=Entry.objects.get(pk=pk).version)
    return writer, untrusted, confirmed


@pytest.mark.parametrize("q", ["", "webhook"])
def test_retrieval_at_a_minimum_trust_leaves_out_what_is_below(two_levels, q):
    reader, untrusted, confirmed = two_levels
    everything = reader.retrieve(scope=SCOPE, q=q).json()
    assert {e["id"] for e in everything["entries"]} == {untrusted, confirmed}
    assert everything["min_trust"] == "untrusted"
    assert f"[#{untrusted} {SCOPE} · confidence" in everything["context"]
    assert "· trust untrusted]" in everything["context"], everything["context"]
    assert "· trust independent]" in everything["context"]
    strict = reader.post("memory/search", {"scope": SCOPE, "q": q, "min_trust": "independent"}).json()
    assert [(e["id"], e["trust"]) for e in strict["entries"]] == [(confirmed, "independent")]
    assert strict["min_trust"] == "independent" and "trust untrusted" not in strict["context"]
    refused = reader.retrieve(scope=SCOPE, min_trust="trusted")
    assert refused.status_code == 422 and "min_trust" in refused.json()["errors"]


# --- the console -------------------------------------------------------------------------------------------------


def test_the_candidates_queue_filters_by_trust_and_the_card_says_why(make_agent, reviewer):
    writer = make_agent("writer")
    untrusted = writer.submit(**LESSON, evidence=[RELAYED]).json()["id"]
    own = writer.submit(**{**LESSON, "trigger": "Restarting the webhook workers"}).json()["id"]
    client = client_for(reviewer)
    low = page_text(client.get(reverse("curation:candidates"), {"f-max_trust": "untrusted"}))
    assert f"#{untrusted}" in low and f"#{own}" not in low
    assert "trust untrusted" in low and "Trust untrusted: it rests on content relayed from elsewhere" in low
    high = page_text(client.get(reverse("curation:candidates"), {"f-min_trust": "agent"}))
    assert f"#{own}" in high and f"#{untrusted}" not in high
    bad = client.get(reverse("curation:candidates"), {"f-min_trust": "trusted"})
    assert bad.status_code == 400


# --- imported memory ---------------------------------------------------------------------------------------------


def test_a_file_people_wrote_is_a_persons_and_an_agents_memory_line_its_claim():
    files = [
        SourceFile("CLAUDE.md", "# Conventions\n\n- Run the billing tests before every push.\n"),
        SourceFile("memory/debugging.md", "# Debugging\n\n- The flaky webhook test needs a warm cache.\n"),
    ]
    import_memory(read("claude-code", files), prefix="acme/imported", label="import:claude-code")
    by_text = {e.content: Trust(e.trust).label for e in Entry.objects.filter(scope__startswith="acme/imported")}
    assert by_text == {
        "Run the billing tests before every push.": "person",
        "The flaky webhook test needs a warm cache.": "agent",
    }
