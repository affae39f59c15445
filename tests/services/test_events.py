"""Events: one typed list of actions, written once against for rules like "which actions activate an
entry"; every Event is about at least one subject, and the database refuses one about nothing."""

import pytest
from django.db import IntegrityError, transaction

from curation import services
from curation.models import EVENT_SUBJECTS, Entry, Event, EventAction, QueueReason, Status
from curation.sweeps import run_sweep
from tests.factories import AS_OF, days_before, make_entry

pytestmark = pytest.mark.django_db


def test_the_activating_actions_are_every_way_back_into_the_active_set():
    activating = EventAction.activating()
    assert {
        "approve",
        "edit_approve",
        "second_approval",
        "confirm",
        "reactivate",
        "revive",
        "conflict_keep",
        "conflict_merge",
        "consolidation_merge",
        "consolidation_keep",
    } == activating
    assert not activating & {
        "archive",
        "queue_recheck",
        "supersede",
        "retire",
        "submit",
        "defer",
        "first_approval",
        "disagreement",
    }
    assert all(isinstance(action, EventAction) for action in activating)


def test_one_name_for_sending_an_entry_back_for_a_recheck():
    assert EventAction.QUEUE_RECHECK == "queue_recheck" and "recheck" not in EventAction.values


def test_an_event_about_nothing_is_refused():
    with pytest.raises(IntegrityError), transaction.atomic():
        Event.objects.create(entry_label="nothing", actor_label="system", action=EventAction.SUBMIT)


def test_every_subject_link_is_one_line_of_the_subject_list_and_one_term_of_the_check():
    """Event's subject links are declared from EVENT_SUBJECTS, and the "has a subject" check names each."""
    links = {f.name: f.related_model.__name__ for f in Event._meta.get_fields() if f.many_to_one and f.name != "actor"}
    assert links == EVENT_SUBJECTS
    assert all(Event._meta.get_field(link).null for link in links)
    [check] = [c for c in Event._meta.constraints if c.name == "event_has_subject"]
    assert check.condition.connector == "OR"
    assert check.condition.children == [(f"{link}__isnull", False) for link in EVENT_SUBJECTS]


@pytest.mark.parametrize("restored_by", ["reactivate", "confirm"])
def test_capacity_spares_an_entry_a_reviewer_just_brought_back(settings, reviewer, restored_by):
    """The entry a reviewer kept is the scope's newcomer, though it is the oldest row and the weakest."""
    settings.CURATION = {**settings.CURATION, "SCOPE_CAPACITY": {"acme/billing-api": 2}}
    if restored_by == "reactivate":  # archived for low utility, waiting for a reviewer to keep or retire it
        restored = make_entry(signal="self", base_confidence=None, utility_n=3, utility_sum=0.3)
        run_sweep("low_utility", as_of=days_before(3))
        assert Entry.objects.get(pk=restored.pk).queue_reason == QueueReason.RECHECK_LOW_UTILITY
    else:  # back in the queue because its review date passed
        restored = make_entry(signal="self", review_by=days_before(5).date())
        run_sweep("review_due", as_of=days_before(3))
        assert Entry.objects.get(pk=restored.pk).queue_reason == QueueReason.RECHECK_REVIEW_DUE
    weak = make_entry(signal="independent", base_confidence=0.4)
    make_entry(signal="external", base_confidence=0.9)
    queued = Entry.objects.get(pk=restored.pk)
    services.approve_candidate(restored.pk, actor=reviewer, expected_version=queued.version, at=days_before(1))
    assert Event.objects.filter(entry=restored).latest("id").action == restored_by
    run_sweep("capacity", as_of=AS_OF)
    assert Entry.objects.get(pk=restored.pk).status == Status.ACTIVE
    assert Entry.objects.get(pk=weak.pk).archive_reason == f"displaced by #{restored.pk}"
