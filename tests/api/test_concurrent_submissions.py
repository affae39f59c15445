"""Submissions released together, by real threads on their own connections: on SQLite (a file, as the
embedded default runs) writers wait their turn instead of answering 500 "database is locked"; on both
databases one lesson sent many times at once is one entry, and every other answer names it."""

import threading
import time

import pytest
from django.db import connection, transaction

from curation import services
from curation.models import Entry, Event, Evidence
from tests.factories import Agent, api_candidate, candidate_data, run_together

pytestmark = pytest.mark.django_db(transaction=True)


def evidence(task: str) -> list[dict]:
    return [{"kind": "tool_output", "signal": "external", "excerpt": f"seen in {task}", "task_ref": task}]


def test_twenty_identical_submissions_at_once_make_one_entry(agent):
    agents = [Agent(agent.key, agent.token) for _ in range(20)]  # a client each: one connection per thread
    responses = run_together([lambda a=a, i=i: a.submit(evidence=evidence(f"task-{i}")) for i, a in enumerate(agents)])
    assert [getattr(r, "status_code", r) for r in responses] == [201] * 20
    answers = [r.json() for r in responses]
    (entry,) = Entry.objects.all()
    assert sorted(a["created"] for a in answers) == [False] * 19 + [True]
    assert {a["id"] for a in answers} == {entry.pk}
    assert {a["duplicate_of"] for a in answers if not a["created"]} == {entry.pk}
    assert Evidence.objects.filter(entry=entry).count() == 20  # every submission's evidence is kept
    assert Event.objects.filter(entry=entry, action="resubmit").count() == 19


def test_the_same_batch_sent_five_times_at_once_makes_each_entry_once(agent):
    batch = {
        "candidates": [
            api_candidate(trigger=f"Trigger number {i} of the batch", content=f"Lesson {i}.") for i in range(5)
        ]
    }
    agents = [Agent(agent.key, agent.token) for _ in range(5)]
    responses = run_together([lambda a=a: a.post("candidates/batch", batch) for a in agents])
    assert [getattr(r, "status_code", r) for r in responses] == [200] * 5
    assert Entry.objects.count() == 5
    assert sum(r.json()["created"] for r in responses) == 5
    assert sum(r.json()["duplicates"] for r in responses) == 20
    ids = {tuple(item["id"] for item in r.json()["results"]) for r in responses}
    assert len(ids) == 1  # every answer names the same five entries


def test_different_submissions_at_once_are_all_written(agent):
    agents = [Agent(agent.key, agent.token) for _ in range(10)]
    responses = run_together(
        [
            lambda a=a, i=i: a.submit(trigger=f"Concurrent trigger {i}", content=f"Lesson {i}.")
            for i, a in enumerate(agents)
        ]
    )
    assert [getattr(r, "status_code", r) for r in responses] == [201] * 10
    assert Entry.objects.count() == 10


def test_a_submission_while_a_sweep_holds_the_write_lock_waits_for_it(agent, reviewer):
    """A sweep writes a batch in one transaction; a submission that arrives meanwhile is written after it."""
    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    agent.submit(trigger="A first submission", content="Marks the token used: the next one writes only its lesson.")
    holding = threading.Event()

    def sweep_batch():
        with transaction.atomic():
            services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
            holding.set()
            time.sleep(1.0)
        return "written"

    def submission():
        holding.wait(10)
        return agent.submit(trigger="Submitted during the sweep", content="Another lesson.")

    swept, response = run_together([sweep_batch, submission])
    assert swept == "written"
    assert getattr(response, "status_code", response) == 201
    assert Entry.objects.count() == 3


def test_sqlite_writes_ahead_waits_for_the_lock_and_takes_it_at_begin():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's locking settings (PostgreSQL locks rows)")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == 20_000
    assert connection.transaction_mode == "IMMEDIATE"
