"""A forget's receipt: after the purge every surface is searched for the forgotten text's distinctive
tokens and the result is an Event on the request; a residue names where it is (never the text) and
reopens the request for a lead, who closes it again with a note."""

import json
import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from curation.models import (
    Entry,
    Event,
    EventAction,
    Evidence,
    ForgetRequest,
    IdempotentAnswer,
    MemoryVersion,
    SkillProposal,
)
from curation.selectors.releases import published_number
from curation.services.errors import InvalidTransition
from curation.services.forget_receipt import close_reopened
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.releases import publish_version
from curation.services.tokens import create_agent_token
from curation.services.usage import record_retrieval
from tests.factories import active, nominated, publish_pending

pytestmark = pytest.mark.django_db

TOKEN = "FORGETMEAXOLOTL-4242"
LESSON = dict(
    scope="acme/payroll",
    trigger="Rotating the payroll signing key",
    content=f"Run rotate-keys with {TOKEN} and then restart the signer before noon.",
)
ELSEWHERE = "globex/web"


@pytest.fixture
def lesson(lead):
    entry = active(lead, **LESSON)
    publish_pending()
    return entry


@pytest.fixture
def filed(lesson, reviewer):
    return file_forget_request(entry_id=lesson.pk, reason="The user asked us to forget it", actor=reviewer)


def receipt_of(request) -> Event:
    return Event.objects.get(forget_request=request, action=EventAction.FORGET_RECEIPT)


def test_a_purge_that_reaches_everything_gets_a_receipt_of_zero_residues(lead, filed):
    outcome = approve_forget_request(filed.pk, actor=lead)

    receipt = receipt_of(filed)
    match = re.fullmatch(r"0 residues in ([\d,]+) places checked \(([\d,]+) rows scanned\)", receipt.reason)
    assert match, receipt.reason
    after = receipt.after
    assert int(match[1].replace(",", "")) == after["places"] == sum(after["places_by_surface"].values()) > 20
    assert int(match[2].replace(",", "")) == after["rows_scanned"] > 0
    assert after["residues"] == [] and after["tokens"] >= 1
    assert set(after["places_by_surface"]) == {
        "stored columns",
        "API search, one per version",
        "SKILL.md rendered",
        "exports rendered",
    }
    assert after["places_by_surface"]["API search, one per version"] == MemoryVersion.objects.count()
    assert (receipt.actor, outcome.receipt.clean) == (lead, True)
    filed.refresh_from_db()
    assert filed.state == ForgetRequest.State.APPROVED
    assert not Event.objects.filter(forget_request=filed, action=EventAction.FORGET_REOPENED).exists()


def _other_entry(lead):
    return active(
        lead,
        scope=ELSEWHERE,
        trigger="Caching the landing page",
        content="Purge the CDN after a deploy.",
        boundary="Only for the public site.",
    )


def _plant_evidence_task_ref(lead, lesson):
    entry = _other_entry(lead)
    evidence = Evidence.objects.create(
        entry=entry,
        kind="task_outcome",
        signal="external",
        excerpt="worked",
        task_ref=f"ticket {TOKEN}",
        observed_at=entry.created_at,
    )
    return {"curation_evidence.task_ref": evidence.pk}


def _plant_other_entry(lead, lesson):
    # Quoted by another lesson in the same scope, published: the API's search and the export serve it.
    entry = active(
        lead,
        scope=LESSON["scope"],
        trigger="Signing payroll files",
        content=f"The signer needs {TOKEN.lower()} loaded first.",
    )
    publish_pending()
    return {
        "curation_entry.content": entry.pk,
        f"API search at versions {published_number()}-": entry.pk,
        "curation_releasedentry.content": None,
        "export of version": None,
    }


def _plant_retrieval_query(lead, lesson):
    token, _ = create_agent_token(name="web-agent", scopes=[ELSEWHERE])
    retrieval = record_retrieval(
        token=token,
        scope=ELSEWHERE,
        query=f"how to use {TOKEN}",
        task_ref="t-9",
        entries=[],
        memory_version=published_number(),
    )
    return {"curation_retrieval.query": str(retrieval.pk)}


def _plant_other_request_reason(lead, lesson):
    other = file_forget_request(
        text="some other lesson to forget", scope=ELSEWHERE, actor=lead, reason=f"it mentions {TOKEN} too"
    )
    return {"curation_forgetrequest.reason": other.pk}


def _plant_skill(lead, lesson):
    skill = nominated(scope="acme/payroll/signer", trigger="Restarting the signer")
    SkillProposal.objects.filter(pk=skill.pk).update(
        status=SkillProposal.Status.APPROVED,
        decided_at=lesson.created_at,
        steps=f"1. Load {TOKEN}.\n2. Restart the signer.",
    )
    return {"curation_skillproposal.steps": skill.pk, "SKILL.md of skills": skill.pk}


def _plant_stored_answer(lead, lesson):
    token, _ = create_agent_token(name="ingest-agent", scopes=[ELSEWHERE])
    answer = IdempotentAnswer.objects.create(
        token=token, key="k-1", request_hash="0" * 64, status=201, answer={"trigger": f"use {TOKEN}"}
    )
    return {"curation_idempotentanswer.answer": answer.pk}


def _plant_version_summary(lead, lesson):
    _other_entry(lead)
    version = publish_version(actor=lead, summary=f"Signer notes ({TOKEN})", acknowledge=True)
    return {"curation_memoryversion.summary": version.pk, f"export of version {version.number}": "MEMORY.md"}


PLANTED = {
    "evidence task ref": _plant_evidence_task_ref,
    "another entry": _plant_other_entry,
    "retrieval query": _plant_retrieval_query,
    "another request's reason": _plant_other_request_reason,
    "skill": _plant_skill,
    "stored API answer": _plant_stored_answer,
    "version summary": _plant_version_summary,
}


@pytest.mark.parametrize("surface", PLANTED)
def test_a_residue_the_purge_does_not_reach_is_named_and_reopens_the_request(lead, lesson, filed, surface):
    expected = PLANTED[surface](lead, lesson)

    outcome = approve_forget_request(filed.pk, actor=lead)

    receipt = receipt_of(filed)
    found = {r["place"]: r["ids"] for r in receipt.after["residues"]}
    for place, row in expected.items():
        matching = [p for p in found if p.startswith(place)]
        assert matching, (place, found)
        if row is not None:
            assert row in found[matching[0]], (place, found)
    assert not outcome.receipt.clean
    assert re.match(r"[1-9]\d* residues? in [\d,]+ places checked", receipt.reason), receipt.reason
    assert TOKEN.casefold() not in (receipt.reason + json.dumps(receipt.after)).casefold()  # where, never what
    filed.refresh_from_db()
    assert filed.state == ForgetRequest.State.REOPENED
    reopened = Event.objects.get(forget_request=filed, action=EventAction.FORGET_REOPENED)
    assert reopened.before == {"state": "approved"} and reopened.after["state"] == "reopened"
    assert set(reopened.after["places"]) == set(found)


def test_words_other_lessons_use_too_are_not_residues(lead, reviewer):
    for n in range(5):
        active(
            lead,
            scope=f"{ELSEWHERE}/{n}",
            trigger=f"Tuning PostgreSQL number {n}",
            content=f"Raise work_mem on PostgreSQL for report {n}.",
        )
    entry = active(
        lead,
        scope="acme/payroll",
        trigger="Payroll exports on PostgreSQL",
        content=f"Export payroll from PostgreSQL with {TOKEN} at month end.",
    )
    publish_pending()
    request = file_forget_request(entry_id=entry.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    assert receipt_of(request).after["residues"] == []


def test_a_lead_closes_a_reopened_request_with_a_note(lead, reviewer, lesson, filed):
    planted = _plant_evidence_task_ref(lead, lesson)
    approve_forget_request(filed.pk, actor=lead)
    residues = receipt_of(filed).after["residues"]
    assert residues == [
        {"place": "curation_evidence.task_ref", "ids": [planted["curation_evidence.task_ref"]], "count": 1}
    ]
    with pytest.raises(PermissionDenied):
        close_reopened(filed.pk, actor=reviewer, note="done")
    with pytest.raises(ValidationError) as exc:
        close_reopened(filed.pk, actor=lead, note="  ")
    assert "note" in exc.value.message_dict

    closed = close_reopened(filed.pk, actor=lead, note="the ticket reference was renamed")

    assert closed.state == ForgetRequest.State.APPROVED
    event = Event.objects.get(forget_request=filed, action=EventAction.FORGET_RESIDUE_CLOSED)
    assert (event.actor, event.reason, event.after) == (lead, "the ticket reference was renamed", {"state": "approved"})
    with pytest.raises(InvalidTransition):
        close_reopened(filed.pk, actor=lead, note="again")


def test_the_receipt_of_a_forgotten_entry_s_own_evidence_task_ref(lead, reviewer):
    # The entry's own evidence names the token in its task ref: the purge rewrites it with the entry's own
    # rows, and the receipt, which searches that column, finds nothing left.
    entry = active(
        lead,
        **LESSON,
        evidence=[
            {"kind": "user_statement", "signal": "external", "excerpt": "the user said so", "task_ref": f"TASK-{TOKEN}"}
        ],
    )
    request = file_forget_request(entry_id=entry.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    receipt = receipt_of(request)
    assert receipt.after["residues"] == [] and receipt.reason.startswith("0 residues in ")
    assert entry.evidence.get().task_ref == request.marker
    assert Entry.objects.get(pk=entry.pk).content == request.marker


def test_a_lesson_with_nothing_distinctive_says_so(lead, reviewer):
    entry = active(lead, scope="acme/payroll", trigger="tabs", content="use tabs", boundary="", conditions=[])
    request = file_forget_request(entry_id=entry.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    receipt = receipt_of(request)
    assert receipt.reason == "nothing distinctive to search for in the forgotten text: 0 places checked"
    assert (receipt.after["tokens"], receipt.after["places"]) == (0, 0)
