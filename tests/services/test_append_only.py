"""Evidence and events are append-only; on PostgreSQL the database itself refuses UPDATE and DELETE."""

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from curation.models import Event, Evidence, SkillTrial
from tests.factories import nominated, report

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry_with_history(make_candidate):
    return make_candidate(evidence=[{"kind": "tool_output", "signal": "external", "excerpt": "exit 0"}])


@pytest.mark.parametrize("model", [Event, Evidence])
def test_postgres_refuses_update_and_delete(on_postgres, entry_with_history, model):
    row = model.objects.filter(entry=entry_with_history).first()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        model.objects.filter(pk=row.pk).update(created_at=row.created_at)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE id = %s", [row.pk])
    assert model.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize("model", [Event, Evidence])
def test_inserts_still_work(on_postgres, entry_with_history, model):
    assert model.objects.filter(entry=entry_with_history).count() == 1


def test_postgres_refuses_to_rewrite_a_skill_trial(on_postgres):
    report(nominated(), ["success"])
    trial = SkillTrial.objects.get()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        SkillTrial.objects.filter(pk=trial.pk).update(outcome="failure")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        SkillTrial.objects.filter(pk=trial.pk).delete()
    assert SkillTrial.objects.get(pk=trial.pk).outcome == "success"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("migrates_back")
def test_events_gain_subjects_without_a_row_rewritten():
    """Migration 0014 changes the events table's schema only: the history written before it stays as it was
    (on PostgreSQL the append-only trigger would refuse any UPDATE), and an Event about a token alone fits."""
    before, after = [("curation", "0013_retrieved_entry_one_index")], [("curation", "0014_event_subjects_and_actions")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    entry = old.get_model("curation", "Entry").objects.create(
        kind="fact",
        scope="acme",
        trigger="t",
        content="c",
        signal="self",
        base_confidence=0.5,
        confidence=0.5,
        queued_at="2026-01-01T00:00:00Z",
    )
    kept = old.get_model("curation", "Event").objects.create(
        entry=entry, entry_label="#1 acme: t", actor_label="agent:ci", action="submit", after={"status": "pending"}
    )
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    Token, Event = new.get_model("curation", "AgentToken"), new.get_model("curation", "Event")  # as of 0014
    token = Token.objects.create(name="t", key_prefix="ma_", key_hash="0" * 64)
    event = Event.objects.get(pk=kept.pk)
    assert (event.entry_id, event.token_id, event.action, event.after) == (
        entry.pk,
        None,
        "submit",
        {"status": "pending"},
    )
    assert Event.objects.create(token_id=token.pk, entry_label="agent:t", actor_label="lena", action="token_created")


# --- the one exception: a forget's purge -------------------------------------------------------------------


def _forgotten(make_candidate):
    from curation.services.forgets import approve_forget_request, file_forget_request
    from tests.factories import make_user

    lead = make_user("lena", "lead")
    entry = make_candidate(
        content="Ask Marguerite Okonkwo for the payroll rollback keys before deploying.",
        evidence=[
            {
                "kind": "user_statement",
                "signal": "external",
                "excerpt": "Marguerite Okonkwo holds the payroll rollback keys",
            }
        ],
    )
    request = file_forget_request(entry_id=entry.pk, reason="the user asked", actor=lead)
    approve_forget_request(request.pk, actor=lead)
    return entry, request


def test_a_plain_update_is_refused_even_with_a_purge_under_way_elsewhere(on_postgres, make_candidate):
    """The trigger lets through only an UPDATE of text columns while the transaction's own purge setting
    names a request; a plain UPDATE, or one that changes anything else, is refused."""
    entry, request = _forgotten(make_candidate)
    event = Event.objects.filter(entry=entry).first()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        Event.objects.filter(pk=event.pk).update(reason="rewritten")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL memoryadmin.forget_purge = %s", [str(request.pk)])
            cursor.execute("UPDATE curation_event SET action = 'approve' WHERE id = %s", [event.pk])
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL memoryadmin.forget_purge = %s", [str(request.pk)])
            cursor.execute("DELETE FROM curation_evidence WHERE entry_id = %s", [entry.pk])
    # The setting is transaction-local: the purge left nothing behind for later statements.
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(current_setting('memoryadmin.forget_purge', true), '')")
        assert cursor.fetchone()[0] == ""


def test_a_forget_purges_the_history_and_the_purge_is_in_it(on_postgres, make_candidate):
    entry, request = _forgotten(make_candidate)
    marker = f"[forgotten: request #{request.pk}]"
    assert Evidence.objects.get(entry=entry).excerpt == marker
    assert all(
        "Okonkwo" not in str((e.before, e.after, e.reason, e.entry_label)) for e in Event.objects.filter(entry=entry)
    )
    submitted = Event.objects.get(entry=entry, action="submit")
    assert submitted.after["content"] == marker and submitted.after["conditions"] == []
    purge = Event.objects.get(forget_request=request, action="forget_purge")
    assert purge.after["history"] >= 3 and marker in purge.reason


def test_the_purge_function_refuses_a_request_that_is_not_approved(on_postgres, make_candidate):
    from curation.services.forgets import file_forget_request
    from tests.factories import make_user

    entry = make_candidate()
    request = file_forget_request(entry_id=entry.pk, reason="r", actor=make_user("lena", "lead"))
    with pytest.raises(DatabaseError, match="not approved"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT curation_forget_purge(%s, %s, %s, %s)", [request.pk, ["Confirm the repository root"], [], []]
            )
    assert "Confirm the repository root" in Event.objects.get(entry=entry, action="submit").after["content"]
