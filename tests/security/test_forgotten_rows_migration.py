"""Migration 0065 on a database where a forget made before it kept the plain hash of the forgotten lesson on
the entry's row and its released rows: afterwards they hold the marker's, as a forget now writes it, and no
other row's key moves."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from curation.models import Entry, ReleasedEntry
from curation.rules.similarity import fingerprint
from curation.services.forgets import approve_forget_request, file_forget_request
from tests.factories import active, database_dump, publish_pending

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0064_band_keys_unchecked")], [("curation", "0065_forgotten_rows_fingerprints")]
TRIGGER, CONTENT = "Rotating the billing webhook signing key", "Ask Marguerite; the key is ZEPHYRQUILL-9931."


def test_a_forget_made_before_loses_the_plain_hash_of_its_lesson(reviewer, lead):
    forgotten = active(reviewer, scope="acme/billing-api", trigger=TRIGGER, content=CONTENT)
    kept = active(reviewer, scope="acme/billing-api", trigger="Deploys on Friday", content="Freeze at noon.")
    publish_pending()  # the lesson's released row, which the purge rewrites too
    request = file_forget_request(reason="the user asked", entry_id=forgotten.pk, actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    guess = fingerprint(TRIGGER, CONTENT)
    # What a forget before 0065 left: the lesson's plain hash on the purged rows.
    Entry.objects.filter(pk=forgotten.pk).update(fingerprint=guess)
    ReleasedEntry.objects.filter(entry_id=forgotten.pk).update(fingerprint=guess)
    assert guess in database_dump()
    MigrationExecutor(connection).migrate(BEFORE)
    MigrationExecutor(connection).migrate(AFTER)
    marker = fingerprint(request.marker, request.marker)
    assert guess not in database_dump()
    assert Entry.objects.get(pk=forgotten.pk).fingerprint == marker
    assert set(ReleasedEntry.objects.filter(entry_id=forgotten.pk).values_list("fingerprint", flat=True)) == {marker}
    assert Entry.objects.get(pk=kept.pk).fingerprint == fingerprint(kept.trigger, kept.content)
