"""The default outcome rule through the feedback path (services.usage.record_feedback): each lesson judged
against the tasks without it, charged for what it did, and harm sent to a person with the figures."""

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from curation.models import Entry, Event, Evidence, LessonTally, QueueReason, Status
from curation.rules.trust import Trust
from curation.services.tokens import create_agent_token
from curation.services.usage import record_feedback, record_retrieval
from tests.factories import active, client_for, page_text

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"


@pytest.fixture
def token(db):
    return create_agent_token(name="sim", scopes=["acme"])[0]


def run_tasks(token, outcomes, *, entries=(), used=None, prefix="t"):
    """Tasks of SCOPE through the services the API calls: a retrieval, then its outcome. Answers the last."""
    result = None
    for i, outcome in enumerate(outcomes):
        retrieval = record_retrieval(
            token=token, scope=SCOPE, query="", task_ref=f"{prefix}-{i}", entries=list(entries)
        )
        result = record_feedback(token=token, retrieval_id=retrieval.pk, outcome=outcome, used=used)
    return result


def shuffled(successes, failures, seed=0):
    outcomes = ["success"] * successes + ["failure"] * failures
    random.Random(seed).shuffle(outcomes)
    return outcomes


def test_a_neutral_lesson_under_a_strict_evaluator_stays_where_it_started(token, reviewer):
    """30% of tasks fail with or without the lesson: after 100 outcomes it is where it started (the design
    notes' rule would have taken it to the floor and out of retrieval after two failures)."""
    lesson = active(reviewer, scope=SCOPE, trigger="Retry the flaky upload once", confidence=0.7)
    run_tasks(token, shuffled(70, 30, seed=1), prefix="without")  # given no lesson
    run_tasks(token, shuffled(70, 30, seed=2), entries=[lesson], prefix="with")
    lesson.refresh_from_db()
    assert lesson.base_confidence == pytest.approx(0.7, abs=0.01)
    assert lesson.status == Status.ACTIVE and lesson.queued_at is None
    assert lesson.hit_count == 100 and lesson.utility_n == 100


def test_a_harmful_lesson_goes_to_a_person_with_the_figures(token, reviewer):
    lesson = active(reviewer, scope=SCOPE, trigger="Skip the schema check", confidence=0.7)
    run_tasks(token, shuffled(70, 30), prefix="without")
    result = run_tasks(token, ["failure"] * 12, entries=[lesson], prefix="with")
    lesson.refresh_from_db()
    assert lesson.queue_reason == QueueReason.RECHECK_HARMFUL and lesson.queued_at is not None
    assert lesson.status == Status.ACTIVE  # a person decides; agents keep reading it until then
    sent = [e for e in Event.objects.filter(entry=lesson).order_by("pk") if "sent back" in e.reason]
    assert len(sent) == 1  # one card, when the verdict turned
    assert "0/" in sent[0].reason and "tasks with it succeeded, 70/100 without" in sent[0].reason
    assert "95% -" in sent[0].reason
    assert result.changes[0]["lift"]["verdict"] == "harms"
    # The reviewer's queue shows the card and why it is there.
    text = page_text(client_for(reviewer).get("/review/candidates/"))
    assert f"#{lesson.pk}" in text and "tasks with it do worse than without" in text
    # ...with the figures on the card itself: tasks with it, tasks without, the interval.
    assert "Why it is back:" in text and "tasks with it succeeded, 70/100 without" in text and "95% -" in text
    card = page_text(client_for(reviewer).get(f"/review/candidates/{lesson.pk}/"))
    assert "Why it is back:" in card and "70/100 without" in card


def test_a_helpful_lesson_is_verified_and_may_pass_the_self_cap(token, reviewer):
    lesson = active(reviewer, scope=SCOPE, trigger="Pin the client version", confidence=0.7, signal="self")
    run_tasks(token, shuffled(50, 50), prefix="without")
    run_tasks(token, ["success"] * 30, entries=[lesson], prefix="with")
    lesson.refresh_from_db()
    assert lesson.base_confidence > 0.85  # the self cap, passed once the outcomes verified it
    evidence = Evidence.objects.get(entry=lesson, kind=Evidence.EvidenceKind.TASK_OUTCOME)
    assert evidence.signal == "external" and evidence.excerpt.startswith("verified by outcomes: lift +")
    assert lesson.queued_at is None
    # The server's own verdict is a verification; reported by agent:sim, not the lesson's author, it confirms.
    assert (evidence.source, evidence.trust, lesson.trust) == ("verification", Trust.VERIFIED, Trust.VERIFIED)
    raised = [e for e in Event.objects.filter(entry=lesson) if "trust verified: confirmed by agent:sim" in e.reason]
    assert len(raised) == 1 and (raised[0].before["trust"], raised[0].after["trust"]) == (Trust.AGENT, Trust.VERIFIED)


def test_charged_for_what_it_did(token, reviewer):
    """`used` charges only the lessons named; without it each lesson given gets its share."""
    first = active(reviewer, scope=SCOPE, trigger="First situation", confidence=0.7)
    second = active(reviewer, scope=SCOPE, trigger="Second situation", confidence=0.7)
    run_tasks(token, shuffled(70, 30), prefix="without")
    run_tasks(token, ["failure"], entries=[first, second], used=[first.pk], prefix="named")
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.base_confidence < 0.7 and second.base_confidence == 0.7 and second.hit_count == 0
    tally = LessonTally.objects.get(entry=second)
    assert (tally.tasks, tally.charged_tasks) == (1, 0)  # given, not charged
    alone = active(reviewer, scope=SCOPE, trigger="Third situation", confidence=0.7)
    run_tasks(token, ["failure"], entries=[alone], prefix="alone")
    alone_drop = 0.7 - Entry.objects.get(pk=alone.pk).base_confidence
    run_tasks(token, ["failure"], entries=[second, alone], prefix="shared")
    second.refresh_from_db()
    shared = Event.objects.filter(entry=second).latest("pk").reason
    assert "its share 0.50" in shared
    # Its first failure at half a share moved it half as far as the lone lesson's first (the same tallies).
    assert 0.7 - second.base_confidence == pytest.approx(alone_drop / 2, rel=0.05)


def test_outcomes_alone_never_take_a_lesson_out_of_retrieval_without_a_card(token, reviewer):
    lesson = active(reviewer, scope=SCOPE, trigger="Reviewed lesson near the floor", confidence=0.53)
    run_tasks(token, shuffled(70, 30), prefix="without")
    run_tasks(token, ["failure"] * 5, entries=[lesson], prefix="with")  # too few tasks for a verdict
    lesson.refresh_from_db()
    assert lesson.base_confidence == pytest.approx(0.5) and lesson.queued_at is None


def test_an_outcome_reads_a_bounded_number_of_queries(token, reviewer):
    lessons = [active(reviewer, scope=SCOPE, trigger=f"Lesson {i}", confidence=0.7) for i in range(6)]
    run_tasks(token, shuffled(7, 3), prefix="without")

    def one(entries, prefix):
        retrieval = record_retrieval(token=token, scope=SCOPE, query="", task_ref=prefix, entries=entries)
        with CaptureQueriesContext(connection) as queries:
            record_feedback(token=token, retrieval_id=retrieval.pk, outcome="failure")
        return len(queries)

    assert one(lessons[:1], "one") == one(lessons, "six")
