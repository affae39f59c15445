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
        kind="fact", scope="acme", trigger="t", content="c", signal="self", base_confidence=0.5, confidence=0.5,
        queued_at="2026-01-01T00:00:00Z")
    kept = old.get_model("curation", "Event").objects.create(
        entry=entry, entry_label="#1 acme: t", actor_label="agent:ci", action="submit", after={"status": "pending"})
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    Token, Event = new.get_model("curation", "AgentToken"), new.get_model("curation", "Event")  # as of 0014
    token = Token.objects.create(name="t", key_prefix="ma_", key_hash="0" * 64)
    event = Event.objects.get(pk=kept.pk)
    assert (event.entry_id, event.token_id, event.action, event.after) == (entry.pk, None, "submit", {"status": "pending"})
    assert Event.objects.create(token_id=token.pk, entry_label="agent:t", actor_label="lena", action="token_created")
