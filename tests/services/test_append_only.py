"""Evidence and events are append-only; on PostgreSQL the database itself refuses UPDATE and DELETE."""

import pytest
from django.db import DatabaseError, connection, transaction

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
