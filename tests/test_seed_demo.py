"""The demo data: realistic, every state, real history, and idempotent."""

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from curation.models import Entry, Event, Evidence, SimilarEntry, Status

pytestmark = pytest.mark.django_db


def test_seed_demo_loads_every_state_with_history_and_is_idempotent():
    call_command("seed_demo", password="demo-pass-123")
    assert Entry.objects.count() >= 60
    assert set(Entry.objects.values_list("status", flat=True)) == set(Status.values)
    assert not Entry.objects.filter(events__isnull=True).exists()
    for old in Entry.objects.filter(status=Status.SUPERSEDED):
        assert Entry.objects.filter(supersedes=old).exists()
    assert SimilarEntry.objects.filter(candidate__status=Status.PENDING).exists()
    for name, group in [("reviewer", "reviewer"), ("lead", "lead"), ("auditor", "auditor"), ("reviewer-billing", "reviewer")]:
        user = authenticate(username=name, password="demo-pass-123")
        assert user is not None and user.groups.filter(name=group).exists()
    counts = (Entry.objects.count(), Event.objects.count(), Evidence.objects.count())
    call_command("seed_demo", password="demo-pass-123")
    assert (Entry.objects.count(), Event.objects.count(), Evidence.objects.count()) == counts
