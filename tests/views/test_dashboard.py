"""The dashboard at /: queue sizes and ages, entries by state, the confidence histogram, due rechecks,
open conflicts, flagged candidates and the last run of each background task, in a fixed number of queries."""

import datetime

import pytest
from django.utils import timezone

from curation import services
from curation.selectors import dashboard as board_reads
from curation.models import Entry, TaskRun
from curation.services import conflicts
from tests.factories import active, candidate_data, client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer):
    now = timezone.now()
    old = services.create_candidate(
        data=candidate_data(trigger="Oldest waiting"), actor_label="agent:ci", at=now - datetime.timedelta(days=3)
    )
    services.create_candidate(
        data=candidate_data(trigger="Token in the text", content="Use token: abcdef123456 to log in"),
        actor_label="agent:ci",
    )
    deferred = services.create_candidate(data=candidate_data(trigger="Deferred"), actor_label="agent:ci")
    services.defer_candidate(deferred.pk, actor=reviewer, expected_version=1)
    a = active(
        reviewer,
        scope="acme/billing-api",
        trigger="Merging a feature branch",
        content="Always rebase.",
        conditions=[],
        confidence=0.82,
    )
    b = active(
        reviewer,
        scope="acme/billing-api",
        trigger="Merging feature branches",
        content="Never rebase.",
        conditions=[],
        confidence=0.35,
    )
    conflicts.detect_conflicts_for(b)
    due = active(
        reviewer,
        scope="acme/web",
        trigger="Review me",
        review_by=(now - datetime.timedelta(days=1)).date(),
        confidence=0.55,
    )
    rejected = services.create_candidate(data=candidate_data(trigger="Wrong"), actor_label="agent:ci")
    services.reject_candidate(rejected.pk, actor=reviewer, expected_version=1, reason="wrong")
    TaskRun.objects.create(
        task="decay",
        state="succeeded",
        as_of=now,
        started_at=now - datetime.timedelta(hours=2),
        rows_examined=10,
        rows_changed=1,
    )
    TaskRun.objects.create(
        task="decay", state="failed", as_of=now, started_at=now - datetime.timedelta(hours=1), error="lock timeout"
    )
    TaskRun.objects.create(task="revive", state="succeeded", as_of=now, started_at=now, rows_examined=4)
    return {"old": old, "a": a, "b": b, "due": due, "now": now}


def test_dashboard_numbers(world, lead):
    board = board_reads.dashboard(lead)
    candidates, conflict_q, proposals, skill_q, forget_q = board.queues
    assert (candidates.count, conflict_q.count, proposals.count, skill_q.count) == (2, 1, 0, 0)  # deferred: not waiting
    assert candidates.oldest == Entry.objects.get(pk=world["old"].pk).queued_at
    assert dict(board.by_state) == {
        "pending": 3,
        "active": 3,
        "rejected": 1,
        "archived": 0,
        "superseded": 0,
        "retired": 0,
    }
    assert [bar.n for bar in board.histogram] == [0, 0, 0, 1, 0, 1, 0, 0, 1, 0]
    assert board.histogram_max == 1 and board.histogram[3].height == board_reads.HISTOGRAM_HEIGHT
    assert [e.pk for e in board.due_rechecks] == [world["due"].pk] and board.due_count == 1
    assert [c.entry_b_id for c in board.open_conflicts] == [world["b"].pk]
    assert [e.trigger for e in board.flagged] == ["Token in the text"] and board.flagged_count == 1
    assert [(r.task, r.state) for r in board.task_runs] == [("decay", "failed"), ("revive", "succeeded")]


def test_dashboard_query_count_is_fixed(world, lead, reviewer, django_assert_max_num_queries):
    # 22: the user's scope grants and permissions (whether they see what waits for a lead), then 19.
    with django_assert_max_num_queries(22):
        board_reads.dashboard(lead)
    for i in range(10):  # more of everything: the same number of queries
        active(reviewer, scope=f"acme/s{i}", trigger=f"Merging branch {i}", content="Never rebase.", conditions=[])
        services.create_candidate(data=candidate_data(trigger=f"Waiting {i}"), actor_label="agent:ci")
    with django_assert_max_num_queries(20):  # the permissions are cached on the user now
        board_reads.dashboard(lead)


def test_the_page(world, lead, django_assert_max_num_queries):
    client = client_for(lead)
    client.get("/")
    with django_assert_max_num_queries(25):  # session, user, permissions, and the 20 of the selector
        response = client.get("/")
    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="queue-candidates"' in page and "oldest 3" in page and "days ago" in page
    assert "<svg" in page and 'data-n="1"' in page and "retrieved from 0.5" in page
    assert "Review me" in page and "Token in the text" in page and "lock timeout" in page
    [conflict] = board_reads.dashboard(lead).open_conflicts
    assert f'href="/review/conflicts/{conflict.pk}/"' in page


def test_scopes_limit_what_the_dashboard_counts(world):
    web_only = make_user("wes", "reviewer", scopes=["acme/web"])
    board = board_reads.dashboard(web_only)
    assert [q.count for q in board.queues] == [0, 0, 0, 0, 0]
    assert dict(board.by_state)["active"] == 1 and [e.pk for e in board.due_rechecks] == [world["due"].pk]


def test_anonymous_and_roleless(client, nobody):
    assert client.get("/")["Location"].startswith("/accounts/login/")
    assert client_for(nobody).get("/").status_code == 403


def test_empty_dashboard(lead):
    page = client_for(lead).get("/").content.decode()
    assert "nothing waiting" in page and "No background task has run yet." in page and "No open conflicts." in page


def test_histogram_bars_edges():
    bars, top = board_reads.histogram_bars({9: 4, 0: 2})
    assert top == 4 and bars[9].height == board_reads.HISTOGRAM_HEIGHT and bars[0].height == 60
    assert bars[9].y == 0 and bars[5].height == 0
    assert board_reads.histogram_bars({})[1] == 0
