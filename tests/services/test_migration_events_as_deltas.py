"""The migration to Events that say what changed, on a history written with two whole snapshots per write:
each write keeps the old and new values of what it changed, an insert its first version, a disagreement
the first approval it disagreed with; Events of other shapes stay as they were; every version folds back
to the snapshots it had; and on PostgreSQL the append-only trigger refuses a rewrite again afterwards."""

from importlib import import_module

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from curation.rules.event_deltas import fold

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

MIGRATION = "0043_events_as_deltas"
AFTER = [("curation", MIGRATION)]
BEFORE = import_module(f"curation.migrations.{MIGRATION}").Migration.dependencies

V1 = {
    "status": "pending",
    "kind": "fact",
    "scope": "acme/billing",
    "trigger": "When the webhook retries",
    "content": "Check the idempotency key first",
    "conditions": ["webhook"],
    "boundary": "",
    "confidence": 0.5,
    "queued_at": "2026-12-01T10:00:00+00:00",
    "queue_reason": "new",
    "first_approval_by": None,
    "version": 1,
}
V2 = {**V1, "first_approval_by": 3, "version": 2}
V3 = {**V2, "queue_reason": "needs_lead", "version": 3}
V4 = {**V3, "status": "active", "queued_at": None, "first_approval_by": None, "confidence": 0.6, "version": 4}


def test_old_snapshots_become_deltas_and_every_version_folds_back():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Entry, Event = apps.get_model("curation", "Entry"), apps.get_model("curation", "Event")
    entry = Entry.objects.create(
        kind="fact",
        scope="acme/billing",
        trigger="t",
        content="c",
        signal="self",
        base_confidence=0.5,
        status="active",
    )

    def event(action, before, after, version):
        return Event.objects.create(
            entry=entry,
            entry_label="#1",
            actor_label="ana",
            action=action,
            before=before,
            after=after,
            entry_version=version,
        ).pk

    written = [
        event("submit", None, V1, 1),
        event("first_approval", V1, V2, 2),
        event("disagreement", V2, V3, 3),
        event("approve", V3, {**V4, "conflict": 9}, 4),
    ]
    evidence = event("add_evidence", None, {"evidence_id": 5}, 4)

    MigrationExecutor(connection).migrate(AFTER)
    Event = MigrationExecutor(connection).loader.project_state(AFTER).apps.get_model("curation", "Event")
    stored = {e.pk: (e.before, e.after) for e in Event.objects.all()}
    assert stored[written[0]] == (None, V1)  # an insert's first version stays whole
    assert stored[written[1]] == ({"first_approval_by": None}, {"first_approval_by": 3})
    assert stored[written[2]] == ({"queue_reason": "new"}, {"queue_reason": "needs_lead", "disagreed_with": 3})
    assert stored[written[3]] == (
        {"status": "pending", "queued_at": V3["queued_at"], "first_approval_by": 3, "confidence": 0.5},
        {"status": "active", "queued_at": None, "first_approval_by": None, "confidence": 0.6, "conflict": 9},
    )
    assert stored[evidence] == (None, {"evidence_id": 5})
    versions = fold((version, stored[pk][1]) for pk, version in zip(written, (1, 2, 3, 4)))
    assert [state for _, state in versions] == [V1, V2, V3, V4]

    if connection.vendor == "postgresql":
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            Event.objects.filter(pk=written[1]).update(reason="rewritten")
