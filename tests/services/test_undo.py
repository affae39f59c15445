"""Undo: a reviewer takes back their own last decision for a short while, as an Event of its own, through
the one write path; refused as stale when anyone acted since."""

import datetime

import pytest
from django.utils import timezone

from curation import services
from curation.models import Entry, Event, Status
from curation.services import InvalidTransition, StaleDecision
from curation.services.candidates import UNDO_SECONDS

pytestmark = pytest.mark.django_db


def state(entry):
    entry = Entry.objects.get(pk=entry.pk)
    return entry.status, entry.queued_at, entry.scope, entry.trigger, entry.fingerprint


@pytest.mark.parametrize(
    "decide",
    [
        lambda e, who: services.approve_candidate(e.pk, actor=who, expected_version=1),
        lambda e, who: services.reject_candidate(e.pk, actor=who, expected_version=1, reason="too vague"),
        lambda e, who: services.defer_candidate(e.pk, actor=who, expected_version=1),
        lambda e, who: services.edit_and_approve(
            e.pk,
            actor=who,
            expected_version=1,
            changes={"scope": "acme/billing-api", "trigger": "A narrower trigger for the billing api"},
        ),
    ],
    ids=["approve", "reject", "defer", "edit"],
)
def test_undo_puts_the_entry_back_as_it_was_with_an_event(reviewer, make_candidate, decide):
    entry = make_candidate()
    before = state(entry)
    decide(entry, reviewer)
    assert state(entry) != before
    undone = services.undo_decision(entry.pk, actor=reviewer, expected_version=2)
    assert undone.version == 3 and state(entry) == before and Entry.objects.get(pk=entry.pk).status == Status.PENDING
    last = Event.objects.filter(entry=entry).latest("id")
    assert (last.action, last.actor, last.entry_version) == ("undo", reviewer, 3)
    assert last.reason.startswith("undid")
    assert last.after["status"] == "pending"


def test_undo_is_refused_when_someone_acted_since(reviewer, second_reviewer, make_candidate):
    entry = make_candidate()
    services.reject_candidate(entry.pk, actor=reviewer, expected_version=1, reason="too vague")
    services.undo_decision(entry.pk, actor=reviewer, expected_version=2)
    services.approve_candidate(entry.pk, actor=second_reviewer, expected_version=3)
    with pytest.raises(StaleDecision) as refused:
        services.undo_decision(entry.pk, actor=reviewer, expected_version=2)
    assert [e.action for e in refused.value.changes] == ["undo", "approve"]
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE


def test_only_your_own_recent_decision(reviewer, second_reviewer, make_candidate):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    with pytest.raises(InvalidTransition, match="not a decision of yours"):
        services.undo_decision(entry.pk, actor=second_reviewer, expected_version=2)
    later = timezone.now() + datetime.timedelta(seconds=UNDO_SECONDS + 1)
    with pytest.raises(InvalidTransition, match=f"Undo is for {UNDO_SECONDS} seconds"):
        services.undo_decision(entry.pk, actor=reviewer, expected_version=2, at=later)
    # An undo is not itself undone (decide again instead), and a submission is no decision.
    fresh = make_candidate(trigger="Another lesson entirely")
    with pytest.raises(InvalidTransition):
        services.undo_decision(fresh.pk, actor=reviewer, expected_version=1)
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE


def test_out_of_scope_reads_as_missing(scoped_reviewer, reviewer, make_candidate):
    entry = make_candidate(scope="acme/web")
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    with pytest.raises(Entry.DoesNotExist):
        services.undo_decision(entry.pk, actor=scoped_reviewer, expected_version=2)
