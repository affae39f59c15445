"""The learning dashboard (/learning/), the leads' Holdout page and the one-click recheck: who may see and
do what, within their scopes; the figures a user reads; a query count that does not grow with retrievals."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from curation.models import Entry, Event, EventAction, Kind, QueueReason, ScopePolicy
from curation.services.tokens import create_agent_token
from curation.services.usage import record_feedback, record_retrieval
from tests.factories import active, client_for, make_user, page_text, set_holdout

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"


@pytest.fixture
def token(db):
    return create_agent_token(name="sim", scopes=["acme", "globex"])[0]


def run_tasks(token, *, scope=SCOPE, arm="memory", entries=(), successes=0, failures=0, prefix="t"):
    """Tasks through the services the API calls: a retrieval in an arm, then its outcome."""
    for i, outcome in enumerate(["success"] * successes + ["failure"] * failures):
        retrieval = record_retrieval(
            token=token,
            scope=scope,
            query="",
            task_ref=f"{prefix}-{arm}-{i}",
            entries=list(entries) if arm == "memory" else [],
            arm=arm,
        )
        record_feedback(token=token, retrieval_id=retrieval.pk, outcome=outcome)


@pytest.fixture
def world(reviewer, token):
    helpful = active(reviewer, scope=SCOPE, trigger="Rotate the webhook key first", confidence=0.9, signal="external")
    harmful = active(reviewer, scope=SCOPE, trigger="Skip the migration check", confidence=0.9, signal="external")
    run_tasks(token, arm="holdout", successes=30, failures=30, prefix="h")
    run_tasks(token, entries=[helpful], successes=38, failures=2, prefix="good")
    run_tasks(token, entries=[harmful], successes=0, failures=2, prefix="bad")  # failures move it: keep it short
    # Failed outcomes sent both back for a recheck; a reviewer kept them (as confirm would, without the Events).
    Entry.objects.filter(pk__in=[helpful.pk, harmful.pk]).update(queued_at=None, queue_reason="")
    run_tasks(token, scope="globex/web", arm="holdout", successes=5, failures=5, prefix="g")
    return helpful, harmful


@pytest.mark.parametrize("role", ["reviewer", "lead", "auditor"])
def test_readers_see_the_dashboard(world, role, settings):
    settings.CURATION_EVALUATION = {**settings.CURATION_EVALUATION, "LESSON_MIN_RETRIEVALS": 20}
    user = make_user(f"u-{role}", role)
    response = client_for(user).get("/learning/")
    assert response.status_code == 200
    text = page_text(response)
    assert "Is memory helping?" in text
    assert "<code>acme/billing-api</code>" in text and "<code>globex/web</code>" in text
    assert "Rotate the webhook key first" in text  # a lesson that helps: 95% against the holdout's 50%
    assert ("Send back for recheck" in text) == (role != "auditor")
    assert ("Holdout settings" in text) == (role == "lead")


def test_nobody_and_anonymous_are_refused(world, nobody, client):
    assert client_for(nobody).get("/learning/").status_code == 403
    assert client.get("/learning/").status_code == 302


def test_a_scoped_reviewer_sees_only_their_scopes(world, scoped_reviewer):
    text = page_text(client_for(scoped_reviewer).get("/learning/"))
    assert "acme/billing-api" in text and "globex" not in text
    assert client_for(scoped_reviewer).get("/learning/", {"scope": "globex"}).status_code == 404


def test_bad_filters_answer_422_naming_the_field(lead):
    response = client_for(lead).get("/learning/", {"scope": "../etc", "days": "30"})
    assert response.status_code == 422 and "scope:" in page_text(response)
    response = client_for(lead).get("/learning/", {"days": "12"})
    assert response.status_code == 422 and "days:" in page_text(response)


def test_lessons_that_hurt_and_recurring_failures_are_listed(world, lead, settings, token):
    settings.CURATION_EVALUATION = {
        **settings.CURATION_EVALUATION,
        "LESSON_MIN_RETRIEVALS": 2,
        "RECURRING_MIN_FAILURES": 2,
    }
    helpful, harmful = world
    text = page_text(client_for(lead).get("/learning/", {"scope": "acme"}))
    hurt = text.split('id="lessons-hurt"')[1].split("</table>")[0]
    assert f"#{harmful.pk}</a>" in hurt and f"#{helpful.pk}</a>" not in hurt
    failures = text.split('id="failures"')[1]
    assert f"#{harmful.pk}</a>" in failures
    assert "globex" not in text.split('id="scopes"')[1].split("</section>")[0]  # the focus is acme


def test_human_corrections_per_week(world, lead, reviewer):
    for i in range(3):
        active(reviewer, scope=SCOPE, kind=Kind.HUMAN_CORRECTION, trigger=f"Correction {i}", signal="external")
    text = page_text(client_for(lead).get("/learning/"))
    weeks = text.split('id="weeks"')[1].split("</table>")[0]
    assert weeks.rstrip().endswith("<td>3</td></tr></tbody>")  # this week's row, the last


def test_the_query_count_does_not_grow_with_retrievals(world, lead, reviewer, token):
    client = client_for(lead)
    client.get("/learning/")
    with CaptureQueriesContext(connection) as few:
        assert client.get("/learning/").status_code == 200
    others = [
        active(reviewer, scope=f"acme/team-{i}", trigger=f"Lesson {i}", signal="external", confidence=0.9)
        for i in range(5)
    ]
    for i, entry in enumerate(others):
        run_tasks(token, scope=f"acme/team-{i}", entries=[entry], successes=25, prefix=f"more{i}")
        run_tasks(token, scope=f"acme/team-{i}", arm="holdout", successes=5, failures=20, prefix=f"more{i}")
    with CaptureQueriesContext(connection) as many:
        assert client.get("/learning/").status_code == 200
    assert len(many) == len(few) <= 12


def test_a_reviewer_sends_a_lesson_back_for_recheck(world, reviewer):
    helpful, _ = world
    helpful.refresh_from_db()
    response = client_for(reviewer).post(
        f"/learning/entries/{helpful.pk}/recheck/",
        {"version": helpful.version, "scope": "acme", "days": "30"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/learning/?scope=acme&days=30"
    assert f"Entry #{helpful.pk} is back in the candidates queue for a recheck." in page_text(response)
    helpful.refresh_from_db()
    assert helpful.queue_reason == QueueReason.RECHECK_REQUESTED and helpful.queued_at is not None
    assert helpful.status == "active"
    event = Event.objects.filter(entry=helpful).latest("id")
    assert event.action == EventAction.QUEUE_RECHECK and event.actor == reviewer
    # From the candidates queue a reviewer confirms or retires it, as any recheck.
    assert helpful.pk in [e.pk for e in Entry.objects.filter(queue_reason__startswith="recheck")]


def test_recheck_refuses_a_stale_version_an_auditor_and_other_scopes(world, reviewer, auditor):
    helpful, _ = world
    helpful.refresh_from_db()
    stale = client_for(reviewer).post(
        f"/learning/entries/{helpful.pk}/recheck/", {"version": helpful.version - 1}, follow=True
    )
    assert "changed since this page was loaded" in page_text(stale)
    assert Entry.objects.get(pk=helpful.pk).queued_at is None
    assert (
        client_for(auditor).post(f"/learning/entries/{helpful.pk}/recheck/", {"version": helpful.version}).status_code
        == 403
    )
    outsider = make_user("olga", "reviewer", scopes=["globex"])
    assert (
        client_for(outsider).post(f"/learning/entries/{helpful.pk}/recheck/", {"version": helpful.version}).status_code
        == 404
    )


def test_only_leads_open_the_holdout_page(reviewer, auditor, lead):
    assert client_for(reviewer).get("/policies/").status_code == 403
    assert client_for(auditor).get("/policies/").status_code == 403
    assert client_for(reviewer).post("/policies/holdout/", {"prefix": "acme", "fraction": "0.1"}).status_code == 403
    assert client_for(lead).get("/policies/").status_code == 200
    assert 'id="holdout"' in page_text(client_for(lead).get("/policies/"))
    moved = client_for(lead).get("/learning/holdout/")  # the old page's address, bookmarked
    assert (moved.status_code, moved["Location"]) == (301, "/policies/#holdout")


def test_a_lead_sets_a_holdout_with_its_event(lead):
    response = client_for(lead).post(
        "/policies/holdout/", {"prefix": "acme/billing-api", "fraction": "10%"}, follow=True
    )
    assert "Holdout of acme/billing-api: 10% of its tasks get no memory." in page_text(response)
    setting = ScopePolicy.objects.get(kind="holdout", prefix="acme/billing-api")
    assert setting.value["fraction"] == 0.1
    client_for(lead).post("/policies/holdout/", {"prefix": "acme/billing-api", "fraction": "0.2"})
    events = list(Event.objects.filter(scope_policy=setting).order_by("id"))
    assert [e.action for e in events] == [EventAction.HOLDOUT_SET] * 2
    assert events[1].before == {"prefix": "acme/billing-api", "fraction": 0.1, "rules_only": 0.0, "version": 1}
    assert events[1].after == {"prefix": "acme/billing-api", "fraction": 0.2, "rules_only": 0.0, "version": 2}
    assert events[1].actor == lead


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"prefix": "acme/../x", "fraction": "0.1"}, "prefix"),
        ({"prefix": "acme", "fraction": "0.9"}, "fraction"),
        ({"prefix": "acme", "fraction": "lots"}, "fraction"),
        ({"prefix": "", "fraction": "0.1"}, "prefix"),
        ({"prefix": "acme", "fraction": "0.1", "rules_only": "-1"}, "rules_only"),
        ({"prefix": "acme", "fraction": "0.3", "rules_only": "0.3"}, "rules_only"),
    ],
)
def test_bad_holdout_input_answers_422_and_writes_nothing(lead, data, field):
    response = client_for(lead).post("/policies/holdout/", data)
    assert response.status_code == 422
    assert f'id="holdout-{field}-error"' in page_text(response)
    assert not ScopePolicy.objects.exists() and not Event.objects.filter(action="holdout_set").exists()


def test_a_scoped_lead_sets_holdouts_only_within_their_scopes(db):
    scoped = make_user("lou", "lead", scopes=["acme"])
    response = client_for(scoped).post("/policies/holdout/", {"prefix": "globex", "fraction": "0.1"})
    assert response.status_code == 403 and "within your scopes" in page_text(response)  # as every kind answers
    assert not ScopePolicy.objects.exists()
    set_holdout("globex/web", 0.3)
    assert "globex/web" not in page_text(client_for(scoped).get("/policies/"))


def test_lessons_show_their_lift_and_verdict_and_sort_by_the_evidence(world, lead, reviewer, token, settings):
    """Per lesson: tasks with it and without, the lift with its interval and the rule's verdict; the harm
    list ranks by the evidence (the interval's upper end), not by the raw success rate."""
    settings.CURATION_EVALUATION = {**settings.CURATION_EVALUATION, "LESSON_MIN_RETRIEVALS": 2}
    clear = active(reviewer, scope=SCOPE, trigger="Force-push the release branch", confidence=0.9, signal="external")
    hunch = active(reviewer, scope=SCOPE, trigger="Disable the retry budget", confidence=0.9, signal="external")
    run_tasks(token, entries=[clear], successes=2, failures=18, prefix="clear")  # 10%, over 20 tasks
    run_tasks(token, entries=[hunch], failures=3, prefix="hunch")  # 0%, over 3 tasks: little evidence
    text = page_text(client_for(lead).get("/learning/", {"scope": "acme"}))
    hurt = text.split('id="lessons-hurt"')[1].split("</table>")[0]
    assert "<th scope=\"col\">Tasks with it</th><th scope=\"col\">Tasks without</th>" in hurt
    assert "Lift (95%)" in hurt and "Verdict" in hurt
    assert hurt.index(f"#{clear.pk}</a>") < hurt.index(f"#{hunch.pk}</a>")
    row = hurt.split(f"#{clear.pk}</a>")[1].split("</tr>")[0]
    assert "10.0%" in row and "of 20" in row and "of 60" in row  # with it; the holdout, without it
    assert ">harms</td>" in row and re.search(r"-\d+\.\d <span class=\"ci\">\(-\d+\.\d to -\d+\.\d\)", row)
    assert ">not enough tasks</td>" in hurt.split(f"#{hunch.pk}</a>")[1].split("</tr>")[0]
