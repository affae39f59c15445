"""Migration 0024 on a database with outcomes reported before holdout evaluation: they are counted in the
tallies, all in the memory arm (every earlier retrieval served memory), so the dashboard starts with them."""

import datetime
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0025_two_reviewers")], [("curation", "0026_holdout_evaluation")]


def test_earlier_outcomes_are_tallied_in_the_memory_arm():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Entry, Token = apps.get_model("curation", "Entry"), apps.get_model("curation", "AgentToken")
    OldRetrieval, Item = apps.get_model("curation", "Retrieval"), apps.get_model("curation", "RetrievedEntry")
    Feedback = apps.get_model("curation", "Feedback")
    token = Token.objects.create(name="old-agent", key_prefix="x", key_hash="h" * 64, scopes=["acme"])
    entry = Entry.objects.create(
        kind="fact",
        scope="acme/web",
        trigger="t",
        content="c",
        signal="self",
        base_confidence=0.8,
        confidence=0.8,
        status="active",
    )
    day = datetime.datetime(2026, 11, 20, 12, tzinfo=datetime.timezone.utc)
    for outcome in ("success", "success", "failure"):
        retrieval = OldRetrieval.objects.create(
            id=uuid.uuid4(), token=token, scope="acme/web", entry_ids=[entry.pk], created_at=day
        )
        Item.objects.create(retrieval=retrieval, entry=entry, rank=0, created_at=day)
        Feedback.objects.create(retrieval=retrieval, outcome=outcome, created_at=day)
    after = MigrationExecutor(connection)
    after.migrate(AFTER)
    # The models as they were at that migration (later ones add columns to the tallies).
    models = after.loader.project_state(AFTER).apps
    OutcomeTally, LessonTally, Retrieval = (
        models.get_model("curation", name) for name in ("OutcomeTally", "LessonTally", "Retrieval")
    )
    tally = OutcomeTally.objects.get()
    assert (tally.day, tally.scope, tally.arm, tally.tasks, tally.successes) == (day.date(), "acme/web", "memory", 3, 2)
    lesson = LessonTally.objects.get()
    assert (lesson.entry_id, lesson.tasks, lesson.successes) == (entry.pk, 3, 2)
    assert set(Retrieval.objects.values_list("arm", flat=True)) == {"memory"}
