"""Migration 0019 on a database with a memory: version 1 is today's active set, so the upgrade changes
nothing an agent sees."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from curation.models import MemoryVersion, PublishedVersion

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0020_queue_preferences")], [("curation", "0021_memory_versions")]


def test_version_one_is_the_active_set_at_the_upgrade():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    Entry = executor.loader.project_state(BEFORE).apps.get_model("curation", "Entry")
    fields = dict(
        kind="fact", scope="acme/billing-api", content="c", signal="external", base_confidence=0.8, confidence=0.8
    )
    served = Entry.objects.create(trigger="served", status="active", **fields)
    Entry.objects.create(trigger="waiting", status="pending", queued_at="2026-01-01T00:00:00Z", **fields)
    Entry.objects.create(trigger="archived", status="archived", **fields)
    after = MigrationExecutor(connection)
    after.migrate(AFTER)
    ReleasedEntry = after.loader.project_state(AFTER).apps.get_model("curation", "ReleasedEntry")  # as of 0021

    version = PublishedVersion.objects.get().version
    assert (version.number, version.published_by_label, version.added) == (1, "migration", 1)
    row = ReleasedEntry.objects.get()
    assert (row.entry_id, row.valid_from, row.valid_to, row.trigger, row.confidence) == (
        served.pk,
        1,
        None,
        "served",
        0.8,
    )
    assert MemoryVersion.objects.count() == 1
