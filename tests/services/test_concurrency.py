"""Two reviewers decide the same entry at the same moment: one wins, the other is told, nothing is lost."""

import threading

import pytest
from django.db import OperationalError, connection, transaction

from curation import services
from curation.models import Entry, Event, Status
from curation.services import StaleDecision
from tests.factories import candidate_data, make_user


def test_two_reviewers_loaded_the_same_version(make_candidate, reviewer, second_reviewer):
    """The sequential form, on every database: both saw version 1, the second is told what happened."""
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    with pytest.raises(StaleDecision) as exc:
        services.reject_candidate(entry.pk, actor=second_reviewer, expected_version=1, reason="wrong")
    assert "rita (approve)" in str(exc.value)
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE
    assert list(Event.objects.filter(entry=entry).values_list("action", flat=True).order_by("id")) == [
        "submit",
        "approve",
    ]


@pytest.mark.django_db(transaction=True)
def test_truly_concurrent_decisions(on_postgres):
    """Real threads and connections on PostgreSQL, released at the same instant by a barrier."""
    first, second = make_user("one", "reviewer"), make_user("two", "reviewer")
    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    barrier = threading.Barrier(2)
    results = {}

    def decide(user, call):
        try:
            barrier.wait()
            call(user)
            results[user.username] = "won"
        except StaleDecision as exc:
            results[user.username] = str(exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(
            target=decide, args=(first, lambda u: services.approve_candidate(entry.pk, actor=u, expected_version=1))
        ),
        threading.Thread(
            target=decide,
            args=(second, lambda u: services.reject_candidate(entry.pk, actor=u, expected_version=1, reason="no")),
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(v == "won" for v in results.values()) == [False, True]
    winner = next(name for name, v in results.items() if v == "won")
    loser_message = next(v for v in results.values() if v != "won")
    assert f"{winner} (" in loser_message and "Nothing of yours was saved" in loser_message
    fresh = Entry.objects.get(pk=entry.pk)
    assert fresh.version == 2 and fresh.status == (Status.ACTIVE if winner == "one" else Status.REJECTED)
    assert Event.objects.filter(entry=entry).count() == 2


def _in_the_middle_of_a_batch(monkeypatch, call):
    """Run `call` on its own connection while a batch is at its near-duplicate lookup (its new entries
    written, its transaction open), the first time only; what it returned, or raised, is in the list."""
    from curation.services import submissions

    original, seen = submissions.similar_active_entries_many, []

    def meanwhile(*args, **kwargs):
        if not seen:
            thread = threading.Thread(target=lambda: seen.append(_on_its_own_connection(call)))
            thread.start()
            thread.join(10)
        return original(*args, **kwargs)

    monkeypatch.setattr(submissions, "similar_active_entries_many", meanwhile)
    return seen


def _on_its_own_connection(call):
    """`call(cursor)` in a transaction of this thread's own connection, waiting at most 2 s for a lock: what it
    returned, or the OperationalError of the lock it could not get."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")
            return call(cursor)
    except OperationalError as exc:
        return exc
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_batch_holding_the_lessons_it_repeats_lets_others_refer_to_them(on_postgres):
    """A batch locks the live entries its items repeat (it adds their evidence, may raise their trust) until it
    commits. Another batch's rows that only refer to such an entry (its evidence, Events, links) take
    a key share at their commit: it must not wait, or two batches repeating each other's lessons deadlock."""
    from curation.services.submissions import _live_by_fingerprint

    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    answers = {}

    def refer(cursor):
        cursor.execute("SELECT id FROM curation_entry WHERE id = %s FOR KEY SHARE", [entry.pk])
        return cursor.fetchone()[0]

    with transaction.atomic():
        held = _live_by_fingerprint({(entry.scope, entry.fingerprint)})
        assert [e.pk for e in held.values()] == [entry.pk]
        other = threading.Thread(target=lambda: answers.update(referred=_on_its_own_connection(refer)))
        other.start()
        other.join(10)
    assert answers == {"referred": entry.pk}


@pytest.mark.django_db(transaction=True)
def test_a_batch_locks_the_lessons_it_repeats_only_once_the_rest_is_written(on_postgres, monkeypatch):
    """Two batches repeating one lesson (agents send popular lessons again all the time) wait for each other
    only for its evidence and their commits, not for each other's whole batch: while a batch writes its new
    entries and looks for their near duplicates, another may lock the lesson it repeats."""
    from curation.services.submissions import submit_batch
    from tests.factories import agent_token

    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    token = agent_token("batch-agent", scopes=["acme"])

    def lock_it(cursor):
        cursor.execute("SELECT id FROM curation_entry WHERE id = %s FOR NO KEY UPDATE", [entry.pk])
        return cursor.fetchone()[0]

    seen = _in_the_middle_of_a_batch(monkeypatch, lock_it)
    fresh = candidate_data(trigger="Rotating the billing-api signing key", content="Rotate it on a Monday.")
    answers = submit_batch(items=[candidate_data(), fresh], token=token)
    assert seen == [entry.pk]  # not a lock timeout
    assert [(a["ok"], a["created"], a["id"] == entry.pk) for a in answers] == [(True, False, True), (True, True, False)]
    assert Event.objects.filter(entry=entry, action="resubmit").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_lesson_rejected_while_a_batch_repeats_it_is_submitted_again_as_new(on_postgres, monkeypatch):
    """The lesson a batch repeats is rejected by a reviewer while the batch is under way: the batch, finding at
    its lock that the lesson is no longer live, is written again from a fresh read, and the item becomes a new
    candidate instead of evidence for a rejected entry."""
    from curation.services.submissions import submit_batch
    from tests.factories import agent_token

    reviewer = make_user("rita", "reviewer")
    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    token = agent_token("batch-agent", scopes=["acme"])

    def reject_it(cursor):
        return services.reject_candidate(entry.pk, actor=reviewer, expected_version=1, reason="wrong").status

    seen = _in_the_middle_of_a_batch(monkeypatch, reject_it)
    (answer,) = submit_batch(items=[candidate_data()], token=token)
    assert seen == [Status.REJECTED]  # the reviewer did not wait for the batch
    assert answer["ok"] and answer["created"] and answer["id"] != entry.pk and answer["status"] == "pending"
    assert not Event.objects.filter(entry=entry, action="resubmit").exists()
    assert Entry.objects.get(pk=entry.pk).status == Status.REJECTED


@pytest.mark.django_db
def test_a_batch_whose_repeated_lesson_keeps_moving_is_written_item_by_item(monkeypatch):
    """Moved again on the second try (a lesson rejected, archived or forgotten twice in a batch's time): the batch
    is written item by item, each item as a single submission writes it, so nothing is lost or written twice."""
    from curation.services import submissions
    from tests.factories import agent_token

    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    token = agent_token("batch-agent", scopes=["acme"])
    tries = []

    def moved(duplicates, read):
        tries.append(len(duplicates))
        raise submissions.RepeatedLessonMoved

    monkeypatch.setattr(submissions, "_locked_again", moved)
    fresh = candidate_data(trigger="Rotating the billing-api signing key", content="Rotate it on a Monday.")
    answers = submissions.submit_batch(items=[candidate_data(), fresh], token=token)
    assert tries == [1, 1]  # the batch, then its one retry; then each item on its own
    assert [(a["ok"], a["created"], a["id"] == entry.pk) for a in answers] == [(True, False, True), (True, True, False)]
    assert Event.objects.filter(entry=entry, action="resubmit").count() == 1
    assert Entry.objects.filter(trigger=fresh["trigger"]).count() == 1
