"""Migration 0016 on a database where raced submissions left several pending copies of one lesson: the
oldest stays in the queue, the later ones are rejected as its duplicates with an Event, and the
constraint then holds."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from curation.models import Status

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0015_scope_segments")], [("curation", "0016_one_pending_entry_per_fingerprint")]


def test_raced_duplicates_are_rejected_and_the_constraint_holds():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    OldEntry = executor.loader.project_state(BEFORE).apps.get_model("curation", "Entry")
    fields = dict(
        kind="fact",
        trigger="t",
        content="c",
        signal="self",
        base_confidence=0.5,
        confidence=0.5,
        queued_at="2026-01-01T00:00:00Z",
        fingerprint="f" * 64,
    )
    kept, copy, again = (OldEntry.objects.create(scope="acme", **fields) for _ in range(3))
    elsewhere = OldEntry.objects.create(scope="globex", **fields)
    after = MigrationExecutor(connection)
    after.migrate(AFTER)
    # The tables as of 0016: the current models may have columns a later migration adds.
    Entry = after.loader.project_state(AFTER).apps.get_model("curation", "Entry")
    Event = after.loader.project_state(AFTER).apps.get_model("curation", "Event")
    assert {e.pk: e.status for e in Entry.objects.all()} == {
        kept.pk: Status.PENDING,
        copy.pk: Status.REJECTED,
        again.pk: Status.REJECTED,
        elsewhere.pk: Status.PENDING,
    }
    assert Entry.objects.get(pk=copy.pk).queued_at is None
    event = Event.objects.get(entry_id=copy.pk)
    assert (event.action, event.actor_label, event.after) == (
        "reject",
        "migration",
        {"status": "rejected", "duplicate_of": kept.pk},
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Entry.objects.create(scope="acme", status=Status.PENDING, **fields)
