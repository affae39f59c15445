"""The Maintenance page and the archived entry page, as each role sees them through the real URLs."""

import datetime

import pytest
from django.test import Client
from django.urls import reverse
from kombu.exceptions import OperationalError as BrokerOperationalError

from curation import tasks
from curation.models import TaskRun
from curation import sweeps
from curation.sweeps import run_sweep
from tests.factories import AS_OF, client_for, days_before, make_entry

pytestmark = pytest.mark.django_db

URL = "/maintenance/"


@pytest.fixture
def queued(monkeypatch):
    """What "Run now" handed to the broker (the real worker is exercised in test_tasks_worker.py)."""
    sent = []
    for name, task in tasks.TASKS.items():
        monkeypatch.setattr(task, "apply_async", lambda *a, _name=name, **kw: sent.append((_name, kw["kwargs"])))
    return sent


def test_url_name():
    assert reverse("curation:maintenance") == URL
    assert reverse("curation:maintenance-run", args=["decay"]) == "/maintenance/decay/run/"


def test_auditor_reads_the_runs_but_cannot_start_one(auditor):
    make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    run_sweep("archive", as_of=AS_OF)
    page = client_for(auditor).get(URL)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/maintenance/"' in html  # the nav link
    for name in sweeps.TASK_NAMES:
        assert f'id="task-{name}"' in html
    assert "Run archive now" not in html
    assert "Only leads can start a task now." in html
    run = TaskRun.objects.get(task="archive")
    row = html[html.index(f"#{run.pk}") :]
    assert "succeeded" in row[:400] and "<td>1</td>" in row[:600] and "command" in row[:800]
    assert "cron 20 2 * * * UTC" in html  # the archive schedule from CELERY_BEAT_SCHEDULE


def test_lead_sees_run_buttons_and_skipped_runs(lead):
    TaskRun.objects.create(
        task="decay",
        as_of=AS_OF,
        state=TaskRun.State.SKIPPED,
        error="another decay run held the lock; this one did nothing",
    )
    html = client_for(lead).get(URL).content.decode()
    assert 'href="/maintenance/"' in html  # the nav link
    assert html.count('class="primary">Run ') == len(sweeps.TASK_NAMES)
    assert "skipped (another run held the lock)" in html
    assert "another decay run held the lock; this one did nothing" in html


def test_a_detection_run_that_ran_out_of_its_slice_says_where_the_pass_continues(lead, settings):
    settings.CURATION = {**settings.CURATION, "DETECTION_SLICE_SECONDS": 0}
    _, second = (make_entry(scope=f"acme/s{i}", last_verified_at=days_before(1)) for i in range(2))
    make_entry(scope="acme/s2", last_verified_at=days_before(1))
    run, _ = run_sweep("conflicts", as_of=AS_OF, batch_size=2)
    html = client_for(lead).get(URL).content.decode()
    row = html[html.index(f"#{run.pk}") :]
    assert f"The pass continues after entry #{second.pk} in the next run." in row[:1200]
    run_sweep("conflicts", as_of=AS_OF, batch_size=2)
    html = client_for(lead).get(URL).content.decode()
    assert html.count("The pass continues after entry") == 1  # the second run finished the pass


def test_page_queries_are_bounded(lead, django_assert_max_num_queries):
    for name in sweeps.TASK_NAMES:
        for _ in range(8):
            TaskRun.objects.create(task=name, as_of=AS_OF)
    client = client_for(lead)
    client.get(URL)
    with django_assert_max_num_queries(len(sweeps.TASK_NAMES) + 6):
        html = client.get(URL).content.decode()
    assert html.count('class="run run-running"') == 5 * len(sweeps.TASK_NAMES)  # the 5 latest of each


def test_reviewer_and_nobody_are_refused(reviewer, nobody):
    for user in (reviewer, nobody):
        client = client_for(user)
        assert client.get(URL).status_code == 403
        assert 'href="/maintenance/"' not in client.get("/review/candidates/").content.decode()


def test_anonymous_is_sent_to_log_in():
    response = Client().get(URL)
    assert response.status_code == 302 and "/login" in response["Location"]


def test_lead_runs_a_task_now(lead, queued):
    response = client_for(lead).post("/maintenance/revive/run/", follow=True)
    assert response.status_code == 200
    assert "Queued revive as of" in response.content.decode()
    [(name, kwargs)] = queued
    assert name == "revive" and kwargs["triggered_by"] == "lead:lena" and kwargs["as_of"]


def test_only_leads_run_tasks(auditor, reviewer, queued):
    for user in (auditor, reviewer):
        assert client_for(user).post("/maintenance/decay/run/").status_code == 403
    assert queued == []


def test_run_needs_post_and_a_known_task(lead, queued):
    client = client_for(lead)
    assert client.get("/maintenance/decay/run/").status_code == 405
    assert client.post("/maintenance/vacuum/run/").status_code == 404
    assert queued == []


def test_run_needs_the_csrf_token(lead, queued):
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    assert client.post("/maintenance/decay/run/").status_code == 403
    assert queued == []


def test_broker_down_is_a_message_not_a_500(lead, monkeypatch):
    def down(*args, **kwargs):
        raise BrokerOperationalError("Connection refused")

    monkeypatch.setattr(tasks.TASKS["decay"], "apply_async", down)
    response = client_for(lead).post("/maintenance/decay/run/", follow=True)
    assert response.status_code == 200
    assert "Could not reach the task queue: decay was not started." in response.content.decode()


def test_entry_page_says_when_and_why_it_was_archived(reviewer):
    entry = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    html = client_for(reviewer).get(f"/entries/{entry.pk}/").content.decode()
    assert 'id="entry-archived"' not in html
    run_sweep("archive", as_of=AS_OF)
    html = client_for(reviewer).get(f"/entries/{entry.pk}/").content.decode()
    assert 'id="entry-status">archived' in html
    assert "Archived 2026-12-01 02:00 UTC: decayed." in html
    assert "lifecycle:archive" in html and "decayed: confidence 0.257 is below 0.3" in html  # the timeline event


@pytest.mark.parametrize(
    "fields, task, label",
    [
        ({"retrieval_count": 4, "utility_sum": 0.4, "utility_n": 4}, "low_utility", "recheck: low utility"),
        (
            {"review_by": (AS_OF - datetime.timedelta(days=2)).date(), "last_verified_at": days_before(5)},
            "review_due",
            "recheck: review date passed",
        ),
    ],
)
def test_rechecks_appear_in_the_candidates_queue(reviewer, fields, task, label):
    entry = make_entry(**fields)
    queue = client_for(reviewer).get("/review/candidates/").content.decode()
    assert entry.trigger not in queue
    run_sweep(task, as_of=AS_OF)
    queue = client_for(reviewer).get("/review/candidates/").content.decode()
    assert entry.trigger in queue and label in queue


def test_each_sweep_explains_its_thresholds_in_words_with_the_settings(lead, settings):
    settings.CURATION = {
        **settings.CURATION,
        "ARCHIVE_BELOW": 0.2,
        "LOW_UTILITY_MIN_RETRIEVALS": 4,
        "SCOPE_CAPACITY": {"acme/web": 150},
    }
    page = client_for(lead).get(reverse("curation:maintenance")).content.decode()
    assert "Archives an active entry when its confidence has decayed below 0.2" in page
    assert "Archives an entry retrieved at least 4 times whose average reported usefulness is below 0.4" in page
    assert "acme/web at most 150 active entries" in page
    assert "that agents never retrieved in the last 30 days" in page
    assert page.count('class="thresholds"') == len(sweeps.TASK_NAMES)
    for word in ("alpha", "beta", "§", "CURATION["):
        assert word not in page
