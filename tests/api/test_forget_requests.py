"""Agents file forget requests for their users (token-scoped), and a forgotten lesson submitted again,
exactly or as a paraphrase, is held: kept from every queue and read, and answered as any new candidate."""

import pytest

from curation import selectors
from curation.models import Entry, Event, EventAction, ForgetRequest, Status
from curation.services.forgets import approve_forget_request
from tests.factories import api_candidate

pytestmark = pytest.mark.django_db

LESSON = dict(
    scope="acme/billing-api",
    trigger="Rotating the billing webhook signing key",
    content="Ask Marguerite Okonkwo to approve the rotation; she owns the webhook signing key.",
)
PARAPHRASE = dict(
    scope="acme/billing-api/container",
    trigger="When rotating billing webhook signing keys",
    content="Marguerite Okonkwo owns the webhook signing key: ask her to approve any rotation.",
)


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
    response = agent.post(
        "forget-requests", {"text": "the colleague's phone rota", "scope": "acme/billing-api", "reason": "user request"}
    )
    assert response.status_code == 201 and ForgetRequest.objects.get().match_text == "the colleague's phone rota"


def test_scope_isolation(make_agent, lesson):
    other = make_agent(name="web-agent", scopes=["acme/web"])
    response = other.post("forget-requests", {"entry_id": lesson.pk, "reason": "r"})
    assert response.status_code == 404
    assert (
        other.post(
            "forget-requests", {"text": "some text here", "scope": "acme/billing-api", "reason": "r"}
        ).status_code
        == 403
    )
    assert not ForgetRequest.objects.exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"entry_id": 1}, "reason"),
        ({"reason": "r"}, "entry_id"),
        ({"entry_id": "one", "reason": "r"}, "entry_id"),
        ({"text": "a text to forget", "reason": "r"}, "scope"),
        ({"entry_id": 1, "reason": "r", "why": "x"}, "why"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(agent, lesson, body, field):
    body = {k: (lesson.pk if v == 1 and k == "entry_id" else v) for k, v in body.items()}
    response = agent.post("forget-requests", body)
    assert response.status_code == 422 and field in response.json()["errors"]


FRESH = dict(
    scope="acme/billing-api",
    trigger="Deploying the billing worker",
    content="Drain the invoice queue before the deploy; it refills within a minute.",
)
# What differs between any two candidates' answers: their ids and times, never their shape or states.
VARYING = {
    "id",
    "created_at",
    "updated_at",
    "trigger",
    "content",
    "scope",
    "conditions",
    "last_verified_at",
    "queued_at",
    "review_by",
    "source_task",
    "boundary",
    "recheck_when",
    "observed_at",
}


def _same_but_ids(a: dict, b: dict) -> dict:
    """The keys whose values differ between two answers, beyond what always varies."""
    assert a.keys() == b.keys()
    return {k: (a[k], b[k]) for k in a if k not in VARYING and a[k] != b[k]}


@pytest.mark.parametrize("again", [LESSON, PARAPHRASE], ids=["exact", "paraphrase"])
def test_a_forgotten_lesson_is_held_and_answered_as_any_new_candidate(agent, lead, reviewer, lesson, again):
    """No oracle: what the agent reads of a submission that repeats a forgotten lesson (its answer, the
    entry by id with its events, the same lesson sent again, a batch) is what it reads of a fresh one."""
    filed = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "user asked"}).json()
    approve_forget_request(filed["id"], actor=lead)
    request = ForgetRequest.objects.get()

    held, fresh = agent.submit(**again), agent.submit(**FRESH)
    assert (held.status_code, fresh.status_code) == (201, 201)
    held_body, fresh_body = held.json(), fresh.json()
    assert held_body["status"] == "pending" and held_body["created"] is True
    assert _same_but_ids(held_body, fresh_body) == {}

    # The row: born rejected, held by the request, with an Event that names it; in no reviewer's queue.
    row = Entry.objects.get(pk=held_body["id"])
    assert (row.status, row.held_by_id, row.queued_at) == (Status.REJECTED, request.pk, None)
    hold_event = Event.objects.get(entry=row, action=EventAction.FORGET_HELD)
    assert hold_event.forget_request_id == request.pk and f"#{request.pk}" in hold_event.reason
    assert row.pk not in {e.pk for e in selectors.candidate_queue(reviewer, selectors.QueueFilters()).items}
    assert not selectors.visible_entries(lead).filter(pk=row.pk).exists()

    # Read back by id: the pending candidate it was said to be, with the events any candidate has.
    held_view, fresh_view = agent.get(f"entries/{row.pk}").json(), agent.get(f"entries/{fresh_body['id']}").json()
    assert held_view["status"] == "pending" and held_view["in_queue"] is True
    assert held_view["trigger"] == fresh_view["trigger"] == ""  # agents read no candidate's text
    assert agent.get(f"entries/{lesson.pk}").json()["content"] == request.marker  # curated: read as it is
    # Its text is stored nowhere: the row and its evidence hold the request's marker.
    assert (row.trigger, row.content, row.embedding) == (request.marker, request.marker, None)
    assert {e.excerpt for e in row.evidence.all()} <= {request.marker}
    assert [e["action"] for e in held_view["events"]] == [e["action"] for e in fresh_view["events"]] == ["submit"]
    assert (
        _same_but_ids(
            {k: v for k, v in held_view.items() if k not in ("events", "evidence")},
            {k: v for k, v in fresh_view.items() if k not in ("events", "evidence")},
        )
        == {}
    )

    # Evidence added by id: answered alike (no candidate's evidence text is echoed), stored without its text.
    piece = {"kind": "tool_output", "signal": "external", "excerpt": "Okonkwo signed off again"}
    held_piece = agent.post(f"entries/{row.pk}/evidence", piece).json()["evidence"]
    fresh_piece = agent.post(f"entries/{fresh_body['id']}/evidence", piece).json()["evidence"]
    assert _same_but_ids(held_piece, fresh_piece) == {} and held_piece["excerpt"] == ""
    assert not row.evidence.filter(excerpt__contains="Okonkwo").exists()

    # Sent again: evidence for the one it repeats, as for a pending candidate.
    held_again, fresh_again = agent.submit(**again).json(), agent.submit(**FRESH).json()
    assert (held_again["created"], held_again["duplicate_of"]) == (False, row.pk)
    assert _same_but_ids({**held_again, "duplicate_of": 0}, {**fresh_again, "duplicate_of": 0}) == {}

    # A batch: every item ok, created, pending.
    batch = agent.post(
        "candidates/batch",
        {
            "candidates": [
                api_candidate(**{**again, "trigger": again["trigger"] + " again"}),
                api_candidate(**{**LESSON, "trigger": "Deploying billing", "content": "Run the smoke tests first."}),
            ]
        },
    ).json()
    assert [(r["ok"], r["status"], r["created"]) for r in batch["results"]] == [(True, "pending", True)] * 2
    assert batch["created"] == 2
    assert Entry.objects.filter(held_by=request).count() == 2


def test_a_forget_approved_between_the_look_and_the_insert_still_holds(agent, lead, lesson, monkeypatch):
    """The write path's own check catches what the submission's look missed (a forget approved in
    between): the submission is held all the same, never a 409 that would tell."""
    from curation.services import submissions

    filed = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "user asked"}).json()
    approve_forget_request(filed["id"], actor=lead)
    real, looks = submissions._holding_requests, []

    def stale_first_look(prepared):
        looks.append(len(prepared))
        return [None] * len(prepared) if len(looks) == 1 else real(prepared)

    monkeypatch.setattr(submissions, "_holding_requests", stale_first_look)
    answer = agent.submit(**LESSON)
    assert answer.status_code == 201 and answer.json()["status"] == "pending"
    assert Entry.objects.get(pk=answer.json()["id"]).held_by_id == filed["id"]
    looks.clear()
    batch = agent.post(
        "candidates/batch", {"candidates": [api_candidate(**{**LESSON, "trigger": LESSON["trigger"] + "!"})]}
    )
    assert batch.json()["results"][0]["ok"] is True
    assert Entry.objects.get(pk=batch.json()["results"][0]["id"]).held_by_id == filed["id"]
