"""Merge into: a pending candidate that repeats an active entry hands its evidence over and closes."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from curation import services
from curation.models import Entry, Event, Evidence, QueueReason, Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(make_candidate, reviewer):
    target = make_candidate(
        scope="acme/billing-api",
        trigger="Editing config files inside the billing-api container",
        content="Confirm the repository root before editing config files.",
    )
    target = services.approve_candidate(target.pk, actor=reviewer, expected_version=target.version)
    candidate = make_candidate(
        scope="acme/billing-api/container",
        trigger="Editing config files inside the billing-api container",
        content="Confirm the repository root before you edit config files.",
        evidence=[{"kind": "tool_output", "signal": "external", "excerpt": "no such file"}],
    )
    return target, candidate


def test_merge_copies_evidence_and_supersedes_the_candidate(pair, reviewer):
    target, candidate = pair
    merged = services.merge_into(candidate.pk, target_id=target.pk, actor=reviewer, expected_version=candidate.version)
    assert merged.status == Status.SUPERSEDED and merged.queued_at is None
    assert Evidence.objects.filter(entry=target, excerpt="no such file").count() == 1
    assert Evidence.objects.filter(entry=candidate).count() == 1  # the original stays where it was
    assert Event.objects.get(entry=candidate, action="merge_into").after["merged_into"] == target.pk
    assert Event.objects.get(entry=target, action="merge_in").after["merged_from"] == candidate.pk


def test_merge_refuses_a_target_that_is_not_active(pair, reviewer, make_candidate):
    target, candidate = pair
    pending = make_candidate(trigger="Another pending one")
    with pytest.raises(ValidationError) as info:
        services.merge_into(candidate.pk, target_id=pending.pk, actor=reviewer, expected_version=candidate.version)
    assert "not an active entry" in str(info.value)
    candidate.refresh_from_db()
    assert candidate.status == Status.PENDING


def test_the_card_offers_merge_and_the_button_merges(client, pair, reviewer):
    target, candidate = pair
    client.force_login(reviewer)
    page = client.get("/review/candidates/").content.decode()
    assert f"Merge into #{target.pk}" in page
    response = client.post(
        f"/review/candidates/{candidate.pk}/merge/",
        {"version": candidate.version, "target": target.pk},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and f"Merged into #{target.pk}" in response.content.decode()
    candidate.refresh_from_db()
    assert candidate.status == Status.SUPERSEDED


def test_an_auditor_cannot_merge(client, pair, auditor):
    target, candidate = pair
    client.force_login(auditor)
    assert (
        client.post(
            f"/review/candidates/{candidate.pk}/merge/", {"version": candidate.version, "target": target.pk}
        ).status_code
        == 403
    )
    candidate.refresh_from_db()
    assert candidate.status == Status.PENDING


def test_a_reviewer_keeps_an_entry_archived_for_low_utility(make_candidate, reviewer):

    entry = make_candidate(scope="acme/billing-api")
    entry = services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    now = timezone.now()
    # the state the low_utility sweep leaves: archived, and waiting in the queue as a recheck
    Entry.objects.filter(pk=entry.pk).update(
        status=Status.ARCHIVED,
        archived_at=now,
        archive_reason="low utility",
        queued_at=now,
        queue_reason=QueueReason.RECHECK_LOW_UTILITY,
        version=entry.version + 1,
    )
    kept = services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version + 1)
    kept.refresh_from_db()
    assert (kept.status, kept.archived_at, kept.archive_reason, kept.queued_at) == (Status.ACTIVE, None, "", None)
    assert Event.objects.filter(entry=kept, action="reactivate").exists()
