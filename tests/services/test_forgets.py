"""Forget requests: filing, declining, approving (retire, purge everywhere, publish, tombstone), each with
its Events; and the tombstone refusing the same lesson again, exactly or as a paraphrase."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from curation import services
from curation.models import (
    ConsolidationProposal,
    Entry,
    Event,
    EventAction,
    Evidence,
    ForgetRequest,
    ReleasedEntry,
    Retrieval,
    Status,
    Tombstone,
)
from curation.selectors import forgets as reads
from curation.selectors.releases import published_number, released_entries
from curation.services.errors import Forgotten, InvalidTransition
from curation.sweeps.consolidation import sweep_consolidation
from curation.services.forgets import approve_forget_request, decline_forget_request, file_forget_request
from curation.services.submissions import submit_batch, submit_candidate
from curation.services.tokens import create_agent_token
from curation.services.usage import record_retrieval
from curation.sweeps import run_sweep
from tests.factories import active, candidate_data, database_dump, make_user, publish_pending

pytestmark = pytest.mark.django_db

TRIGGER = "Deploying the payroll service on Fridays"
CONTENT = "Always page Marguerite Okonkwo before deploying payroll, she holds the rollback keys."
EXCERPT = "Marguerite Okonkwo confirmed she holds the payroll rollback keys"
PARAPHRASE = {
    "trigger": "When deploying payroll service on a Friday",
    "content": "Page Marguerite Okonkwo before any payroll deploy: she holds rollback keys.",
}
FORGOTTEN_WORDS = ("Marguerite", "Okonkwo", "payroll rollback keys")


@pytest.fixture
def lesson(lead):
    entry = active(
        lead,
        trigger=TRIGGER,
        content=CONTENT,
        scope="acme/payroll",
        evidence=[{"kind": "user_statement", "signal": "external", "excerpt": EXCERPT}],
    )
    publish_pending()
    return entry


@pytest.fixture
def token(db):
    token, _ = create_agent_token(name="payroll-agent", scopes=["acme/payroll"])
    return token


def test_a_reviewer_files_a_request_with_its_event(reviewer, lesson):
    request = file_forget_request(entry_id=lesson.pk, reason="The user asked us to forget this", actor=reviewer)
    assert (request.state, request.scope, request.requested_by_label) == ("open", "acme/payroll", "rita")
    event = Event.objects.get(forget_request=request)
    assert (event.action, event.actor_label, event.entry_id) == (EventAction.FORGET_FILED, "rita", lesson.pk)
    assert reads.forget_count(reviewer) == (1, False)


def test_an_agent_files_for_its_user_within_its_scopes(token, lesson):
    request = file_forget_request(entry_id=lesson.pk, reason="user: forget what I said about payroll", token=token)
    assert request.requested_by_token == token and request.requested_by_label == "agent:payroll-agent"
    other, _ = create_agent_token(name="web-agent", scopes=["acme/web"])
    with pytest.raises(Entry.DoesNotExist):
        file_forget_request(entry_id=lesson.pk, reason="x", token=other)
    with pytest.raises(PermissionDenied):
        file_forget_request(text="anything at all here", scope="acme/payroll", reason="x", token=other)


def test_filing_refuses_bad_input_naming_the_field(reviewer, auditor, lesson):
    with pytest.raises(ValidationError) as exc:
        file_forget_request(entry_id=lesson.pk, reason="  ", actor=reviewer)
    assert "reason" in exc.value.message_dict
    with pytest.raises(ValidationError) as exc:
        file_forget_request(entry_id=lesson.pk, text="also a text", scope="acme", reason="r", actor=reviewer)
    assert "entry_id" in exc.value.message_dict
    with pytest.raises(ValidationError) as exc:
        file_forget_request(text="a text to match", reason="r", actor=reviewer)
    assert "scope" in exc.value.message_dict
    with pytest.raises(PermissionDenied):
        file_forget_request(entry_id=lesson.pk, reason="r", actor=auditor)
    assert not ForgetRequest.objects.exists()


def test_only_a_lead_decides_and_a_decline_keeps_the_lesson(reviewer, lead, lesson):
    request = file_forget_request(entry_id=lesson.pk, reason="please", actor=reviewer)
    with pytest.raises(PermissionDenied):
        approve_forget_request(request.pk, actor=reviewer)
    with pytest.raises(ValidationError):
        decline_forget_request(request.pk, actor=lead, reason="")
    declined = decline_forget_request(request.pk, actor=lead, reason="It is a team rule, not personal data")
    assert declined.state == "declined" and declined.decided_by == lead
    assert Event.objects.filter(forget_request=request, action=EventAction.FORGET_DECLINED).exists()
    assert Entry.objects.get(pk=lesson.pk).content == CONTENT
    with pytest.raises(InvalidTransition):
        approve_forget_request(request.pk, actor=lead)


def test_approval_retires_purges_publishes_and_leaves_a_tombstone(reviewer, lead, lesson, token):
    duplicate = active(
        lead,
        scope="acme/payroll",
        trigger="Before a payroll deploy on a Friday",
        content="Page Marguerite Okonkwo first; she holds the payroll rollback keys.",
    )
    publish_pending()
    record_retrieval(
        token=token,
        scope="acme/payroll",
        query="Marguerite Okonkwo payroll",
        task_ref="t-1",
        entries=[lesson],
        memory_version=published_number(),
    )
    request = file_forget_request(
        entry_id=lesson.pk, reason="The user asked us to forget a colleague named in it", actor=reviewer
    )
    card = reads.forget_card(lead, request.pk)
    assert duplicate.pk in [e.pk for e, _ in card.suggestions]
    before = published_number()

    outcome = approve_forget_request(request.pk, actor=lead, duplicate_ids=[duplicate.pk], note="approved")

    marker = f"[forgotten: request #{request.pk}]"
    for entry in Entry.objects.filter(pk__in=[lesson.pk, duplicate.pk]):
        assert (entry.status, entry.trigger, entry.content, entry.conditions) == (Status.RETIRED, marker, marker, [])
        assert Event.objects.filter(entry=entry, action=EventAction.FORGOTTEN, actor=lead).exists()
    assert outcome.version.number == published_number() == before + 1
    assert not released_entries(published_number()).filter(entry_id__in=[lesson.pk, duplicate.pk]).exists()
    assert set(ReleasedEntry.objects.filter(entry_id=lesson.pk).values_list("content", flat=True)) == {marker}
    assert Evidence.objects.get(entry=lesson).excerpt == marker
    assert Retrieval.objects.get().query == marker
    request.refresh_from_db()
    assert (request.state, request.forgotten_ids, request.published_version) == (
        "approved",
        [lesson.pk, duplicate.pk],
        outcome.version.number,
    )
    assert set(Event.objects.filter(forget_request=request).values_list("action", flat=True)) == {
        EventAction.FORGET_FILED,
        EventAction.FORGET_APPROVED,
        EventAction.FORGET_PURGE,
        EventAction.FORGET_RECEIPT,
    }
    assert Tombstone.objects.filter(request=request).count() == 2
    dump = database_dump()
    for words in FORGOTTEN_WORDS:
        assert words not in dump


@pytest.mark.parametrize(
    "lesson_text", [{"trigger": TRIGGER, "content": CONTENT}, PARAPHRASE], ids=["exact", "paraphrase"]
)
def test_the_tombstone_holds_the_lesson_again(reviewer, lead, lesson, token, lesson_text):
    request = file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    with pytest.raises(Forgotten) as exc:  # a person in the console is told (no agent's guesses to answer)
        services.create_candidate(data=candidate_data(scope="acme/payroll/eu", **lesson_text), actor_label="agent:ci")
    assert exc.value.as_json()["status"] == "forgotten" and exc.value.request_id == request.pk
    submission = submit_candidate(data=candidate_data(scope="acme/payroll", **lesson_text), token=token)
    assert submission.as_json()["status"] == Status.PENDING  # what the agent is told
    held = Entry.objects.get(pk=submission.entry.pk)
    assert (held.status, held.held_by_id) == (Status.REJECTED, request.pk)
    # Another project's lesson with the same words is not this one.
    other = services.create_candidate(
        data=candidate_data(scope="globex/payroll", **lesson_text), actor_label="agent:ci"
    )
    assert (other.status, other.held_by_id) == (Status.PENDING, None)


def test_a_batch_holds_the_lesson_in_the_scopes_above_and_below_the_tombstone_and_only_there(reviewer, lead, lesson):
    request = file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    token, _ = create_agent_token(name="fleet-agent", scopes=["acme", "globex"])

    def held_in(scopes, *others):
        items = [candidate_data(scope=scope, trigger=TRIGGER, content=CONTENT) for scope in scopes]
        results = submit_batch(items=items + [candidate_data(scope=scope) for scope in others], token=token)
        assert all(r["ok"] and r["status"] == Status.PENDING for r in results)  # every answer alike
        held = dict(Entry.objects.filter(pk__in=[r["id"] for r in results]).values_list("pk", "held_by_id"))
        assert all(held[r["id"]] is None for r in results[len(scopes) :])  # other lessons in those scopes come in
        return [scopes[r["index"]] for r in results[: len(scopes)] if held[r["id"]] == request.pk]

    # The tombstone (acme/payroll) lies below "acme" and above "acme/payroll/eu"; each alone in its batch.
    assert held_in(["acme", "acme/billing", "globex/payroll"], "acme") == ["acme"]
    assert held_in(["acme/payroll/eu", "globex/payroll/eu"], "acme/payroll") == ["acme/payroll/eu"]


def test_an_unrelated_lesson_in_the_scope_still_comes_in(reviewer, lead, lesson):
    approve_forget_request(file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer).pk, actor=lead)
    entry = services.create_candidate(data=candidate_data(scope="acme/payroll"), actor_label="agent:ci")
    assert entry.status == Status.PENDING


def test_a_text_request_forgets_the_ticked_entries_and_the_text(reviewer, lead, lesson):
    request = file_forget_request(
        text="Marguerite Okonkwo holds the payroll rollback keys",
        scope="acme/payroll",
        reason="GDPR request",
        actor=reviewer,
    )
    assert lesson.pk in [e.pk for e, _ in reads.forget_card(lead, request.pk).suggestions]
    approve_forget_request(request.pk, actor=lead, duplicate_ids=[lesson.pk])
    request.refresh_from_db()
    assert request.match_text == request.marker
    assert Tombstone.objects.filter(request=request, entry__isnull=True).exists()
    assert "Okonkwo" not in database_dump()


def test_sweeps_never_propose_a_forgotten_lesson_again(reviewer, lead, lesson):
    # Two more restatements that were not ticked, in a scope the approving lead does not see (an active one
    # the lead sees must be ticked): the consolidation sweep would merge them.
    one = active(lead, scope="acme", **PARAPHRASE)
    two = active(lead, scope="acme", trigger=PARAPHRASE["trigger"] + " evening", content=PARAPHRASE["content"])
    payroll_lead = make_user("paula", "lead", scopes=["acme/payroll"])
    approve_forget_request(
        file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer).pk, actor=payroll_lead
    )
    sweep_consolidation()
    assert not ConsolidationProposal.objects.filter(entries__in=[one, two]).exists()


def test_a_scoped_reviewer_cannot_see_or_name_another_scope(lead, lesson):
    outsider = make_user("otto", "reviewer", scopes=["acme/web"])
    with pytest.raises(Entry.DoesNotExist):
        file_forget_request(entry_id=lesson.pk, reason="r", actor=outsider)
    request = file_forget_request(entry_id=lesson.pk, reason="r", actor=lead)
    with pytest.raises(ForgetRequest.DoesNotExist):
        reads.forget_card(outsider, request.pk)


def test_a_rollback_to_a_version_before_the_forget_does_not_bring_it_back(reviewer, lead, lesson):
    from curation.selectors.releases import retrieve_released, version_diff
    from curation.services.releases import rollback_version

    before = published_number()
    assert released_entries(before).filter(entry_id=lesson.pk).exists()
    approve_forget_request(file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer).pk, actor=lead)
    rollback_version(before, actor=lead, reason="a bad release")
    assert published_number() == before
    assert not released_entries(before).filter(entry_id=lesson.pk).exists()
    assert lesson.pk not in [
        r.entry.pk for r in retrieve_released(before, scopes=["acme/payroll"], q="payroll", k=5, min_confidence=0.0)
    ]
    assert not version_diff(before, before + 1)


def test_an_entry_forgotten_as_a_duplicate_closes_no_other_request_by_surprise(reviewer, lead, lesson):
    other = active(lead, scope="acme/payroll", **PARAPHRASE)
    first = file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer)
    second = file_forget_request(entry_id=other.pk, reason="user asked too", actor=reviewer)
    approve_forget_request(first.pk, actor=lead, duplicate_ids=[other.pk])
    with pytest.raises(InvalidTransition, match="forgotten meanwhile"):
        approve_forget_request(second.pk, actor=lead)
    assert decline_forget_request(second.pk, actor=lead, reason="done with #%d" % first.pk).state == "declined"
    assert Tombstone.objects.filter(entry=other).count() == 1


def test_open_conflicts_and_proposals_of_a_forgotten_entry_are_closed(reviewer, lead, lesson):
    from curation.models import Conflict

    contrary = active(
        lead,
        scope="acme/payroll",
        trigger=TRIGGER,
        content="Never page Marguerite Okonkwo before deploying payroll, she holds no keys.",
    )
    twin = active(lead, scope="acme/payroll", trigger=TRIGGER, content=CONTENT + " Then wait.")
    sweep_consolidation()
    run_sweep("conflicts")
    conflicts = [c for c in Conflict.objects.filter(state="open") if lesson.pk in (c.entry_a_id, c.entry_b_id)]
    proposals = list(ConsolidationProposal.objects.filter(state="open", entries=lesson))
    assert conflicts and proposals
    # Both repeat the forgotten lesson by its tombstone: an active match the lead sees is ticked, or approval refuses.
    approve_forget_request(
        file_forget_request(entry_id=lesson.pk, reason="user asked", actor=reviewer).pk,
        actor=lead,
        duplicate_ids=[contrary.pk, twin.pk],
    )
    assert all(
        Conflict.objects.get(pk=c.pk).state == "resolved"
        for c in conflicts
        if lesson.pk in (c.entry_a_id, c.entry_b_id)
    )
    assert all(ConsolidationProposal.objects.get(pk=p.pk).state == "dismissed" for p in proposals)
    assert Event.objects.filter(action=EventAction.CONSOLIDATION_DISMISSED).count() == len(proposals)
    assert contrary and twin


def test_the_forgotten_entry_keeps_no_vector_and_no_task_words(lead, reviewer):
    """An embedding can be turned back into an approximation of the text, and the source task is an
    agent's words: both go with the lesson (the write path wrote neither before)."""
    entry = active(
        lead,
        scope="acme/payroll",
        trigger="Deploying payroll",
        content="Page Dana first.",
        embedding=[0.1, 0.2, 0.3],
        source_task="payroll deploy with Dana",
    )
    assert Entry.objects.get(pk=entry.pk).embedding == [0.1, 0.2, 0.3]
    request = file_forget_request(entry_id=entry.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    row = Entry.objects.get(pk=entry.pk)
    assert (row.embedding, row.source_task) == (None, request.marker)
