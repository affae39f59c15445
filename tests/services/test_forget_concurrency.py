"""A forget's approval and the writes that look at the tombstones, at the same moment, on PostgreSQL (real
threads, real connections, real commits): a write that looked before the approval began is waited for and
seen by it; a look made while the approval is being written is refused at once, and the submission that made
it waits for the approval and is then held by its tombstone. SQLite lets one writer at a time: no race."""

import threading
import time

import pytest
from django.db import connection, transaction
from django.urls import reverse

from curation import services
from curation.models import Entry, Event, EventAction, Status
from curation.selectors import forgets as reads
from curation.selectors.forgets import ForgetInProgress, tombstones_for
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.submissions import submit_candidate
from tests.factories import a_forget_being_approved, active, agent_token, candidate_data, client_for
from tests.services.test_forget_write_path import LESSON, PARAPHRASE, SCOPE  # the write path's lesson and its twin


def _in_thread(call, answers: dict, name: str) -> threading.Thread:
    def run():
        try:
            answers[name] = call()
        except Exception as exc:  # handed back to the test
            answers[name] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _approved_event(request) -> Event:
    return Event.objects.get(action=EventAction.FORGET_APPROVED, forget_request=request)


@pytest.mark.django_db(transaction=True)
def test_an_approval_waits_for_a_write_that_looked_at_the_tombstones_and_sees_what_it_wrote(
    on_postgres, reviewer, lead
):
    lesson = active(lead, scope=SCOPE, **LESSON)
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    looked, go_on, answers = threading.Event(), threading.Event(), {}

    def write_a_paraphrase():
        with transaction.atomic():
            assert tombstones_for([(SCOPE, PARAPHRASE["trigger"], PARAPHRASE["content"])]) == [None]
            looked.set()
            go_on.wait(10)  # the write's look is made; its insert and commit come later
            data = candidate_data(scope=SCOPE, **PARAPHRASE)
            return services.create_candidate(data=data, actor_label="agent:ci").pk

    writer = _in_thread(write_a_paraphrase, answers, "written")
    assert looked.wait(10)
    approval = _in_thread(lambda: approve_forget_request(request.pk, actor=lead), answers, "approved")
    approval.join(1.0)
    assert approval.is_alive(), "the approval must wait for the write that looked before it began"
    go_on.set()
    writer.join(10)
    approval.join(30)
    assert not approval.is_alive() and not isinstance(answers["approved"], Exception), answers
    # The approval read the paraphrase the write let through: listed as left matching (pending, kept out of
    # every release and refused by the write path), not missed.
    assert answers["written"] in _approved_event(request).after["left_matching"]
    assert Entry.objects.get(pk=answers["written"]).status == Status.PENDING


@pytest.mark.django_db(transaction=True)
def test_a_look_while_an_approval_is_written_is_refused_at_once_and_a_submission_waits_and_is_held(
    on_postgres, reviewer, lead, monkeypatch
):
    lesson = active(lead, scope=SCOPE, **LESSON)
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    token = agent_token("payroll-agent", scopes=[SCOPE])
    writing, go_on, answers = threading.Event(), threading.Event(), {}
    tombstones_of = reads.tombstones_of

    def paused(*args, **kwargs):  # the approval holds the lock and has read its entries: it pauses here
        writing.set()
        go_on.wait(10)
        return tombstones_of(*args, **kwargs)

    monkeypatch.setattr(reads, "tombstones_of", paused)
    approval = _in_thread(lambda: approve_forget_request(request.pk, actor=lead), answers, "approved")
    assert writing.wait(10)

    # A look inside a transaction does not wait (it may hold rows the approval needs): refused at once.
    started = time.monotonic()
    with pytest.raises(ForgetInProgress) as refused, transaction.atomic():
        tombstones_for([(SCOPE, PARAPHRASE["trigger"], PARAPHRASE["content"])])
    assert time.monotonic() - started < 1.0
    assert "being approved" in str(refused.value) and "Marguerite" not in str(refused.value)

    # An agent's submission waits for the approval, holding nothing, then meets its tombstone: held.
    data = candidate_data(scope=SCOPE, **PARAPHRASE)
    submission = _in_thread(lambda: submit_candidate(data=data, token=token), answers, "submitted")
    submission.join(1.0)
    assert submission.is_alive(), "the submission waits for the approval being written"
    go_on.set()
    approval.join(30)
    submission.join(30)
    assert not isinstance(answers["approved"], Exception) and not isinstance(answers["submitted"], Exception), answers
    held = Entry.objects.get(pk=answers["submitted"].entry.pk)
    assert (held.status, held.held_by_id) == (Status.REJECTED, request.pk)
    assert answers["submitted"].as_json()["status"] == Status.PENDING  # what the agent is told, as for any other


@pytest.mark.django_db(transaction=True)
def test_a_reviewers_approval_during_a_forgets_approval_answers_the_409_card_and_saves_nothing(on_postgres, reviewer):
    candidate = services.create_candidate(data=candidate_data(scope=SCOPE, **PARAPHRASE), actor_label="agent:ci")
    with a_forget_being_approved():
        response = client_for(reviewer).post(
            reverse("curation:candidate-approve", args=[candidate.pk]), {"version": 1}, HTTP_HX_REQUEST="true"
        )
    body = response.content.decode()
    assert response.status_code == 409
    assert f'id="card-{candidate.pk}"' in body and "being approved at this moment" in body
    fresh = Entry.objects.get(pk=candidate.pk)
    assert (fresh.status, fresh.version) == (Status.PENDING, 1)
    # Once the approval is written the same click goes through.
    response = client_for(reviewer).post(
        reverse("curation:candidate-approve", args=[candidate.pk]), {"version": 1}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and Entry.objects.get(pk=candidate.pk).status == Status.ACTIVE


def _waiting_for_the_forgetting_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = %s AND objid = %s",
            list(reads.FORGETTING_LOCK),
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_an_approvals_own_look_is_not_refused_while_a_second_approval_waits(on_postgres):
    """PostgreSQL refuses a shared lock to anyone, the holder of the exclusive one included, while another
    waits for it alone: the approval holding the lock reads its own looks without it."""
    holding, waiting, answers = threading.Event(), threading.Event(), {}

    def first_approval():
        with transaction.atomic(), reads.forgetting_alone():
            holding.set()
            waiting.wait(10)
            return tombstones_for([(SCOPE, LESSON["trigger"], LESSON["content"])])

    def second_approval():
        with transaction.atomic(), reads.forgetting_alone():
            return "went after"

    one = _in_thread(first_approval, answers, "one")
    assert holding.wait(10)
    other = _in_thread(second_approval, answers, "other")
    deadline = time.monotonic() + 10
    while not _waiting_for_the_forgetting_lock() and time.monotonic() < deadline:
        time.sleep(0.02)
    waiting.set()
    one.join(10)
    other.join(10)
    assert answers == {"one": [None], "other": "went after"}
