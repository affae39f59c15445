"""Two-reviewer scopes: the first approval, the second by someone else, a disagreement sent to a lead, undo,
bulk, and the leads' rules per scope prefix, each with its Event."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from curation import services
from curation.models import Entry, Event, EventAction, QueueReason, ScopePolicy, Status
from curation.rules.scope_policies import REVIEW
from curation.selectors import QueueFilters, approvals_required, queue_count, review_rules
from curation.services import InvalidTransition
from curation.services.scope_policies import set_scope_policy
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def last_event(entry):
    return Event.objects.filter(entry=entry).order_by("-id").first()


def set_review_rule(prefix, *, approvals, actor, reason=""):
    return set_scope_policy(REVIEW, data={"prefix": prefix, "approvals": approvals}, actor=actor, reason=reason).policy


@pytest.fixture
def two_reviewers(lead):
    return set_review_rule("acme/billing-api", approvals=2, actor=lead)


def test_a_lead_sets_a_rule_with_its_event_and_the_longest_prefix_wins(lead, settings):
    settings.CURATION = {**settings.CURATION, "TWO_REVIEWER_SCOPES": ["acme"]}
    rule = set_review_rule("acme/sandbox", approvals=1, actor=lead, reason="a playground")
    assert review_rules() == {"acme": 2, "acme/sandbox": 1}
    assert approvals_required("acme/billing-api/container") == 2
    assert approvals_required("acme/sandbox/ci") == 1
    assert approvals_required("acme-other") == 1 and approvals_required("globex/web") == 1
    [event] = Event.objects.filter(scope_policy=rule)
    assert (event.action, event.actor, event.before, event.after, event.reason) == (
        EventAction.REVIEW_RULE_SET,
        lead,
        None,
        {"prefix": "acme/sandbox", "approvals": 1, "version": 1},
        "a playground",
    )
    set_review_rule("acme/sandbox", approvals=2, actor=lead)
    assert ScopePolicy.objects.get().value == {"approvals": 2}
    changed = Event.objects.filter(scope_policy=rule).order_by("-id").first()
    assert (changed.before, changed.after) == (
        {"prefix": "acme/sandbox", "approvals": 1, "version": 1},
        {"prefix": "acme/sandbox", "approvals": 2, "version": 2},
    )


@pytest.mark.parametrize(
    "prefix, approvals, field",
    [
        ("", 2, "prefix"),
        ("Acme/../x", 2, "prefix"),
        ("acme", 3, "approvals"),
        ("acme", "two", "approvals"),
    ],
)
def test_a_bad_rule_names_its_field_and_writes_nothing(lead, prefix, approvals, field):
    with pytest.raises(ValidationError) as exc:
        set_review_rule(prefix, approvals=approvals, actor=lead)
    assert field in exc.value.message_dict
    assert not ScopePolicy.objects.exists() and not Event.objects.filter(scope_policy__isnull=False).exists()


def test_only_leads_set_rules_and_a_scoped_lead_only_inside_their_scopes(reviewer):
    with pytest.raises(PermissionDenied):
        set_review_rule("acme", approvals=2, actor=reviewer)
    scoped_lead = make_user("lou", "lead", scopes=["globex"])
    with pytest.raises(PermissionDenied, match="within your scopes"):  # as every scope policy answers
        set_review_rule("acme", approvals=2, actor=scoped_lead)
    assert not ScopePolicy.objects.exists()


def test_first_approval_keeps_it_queued_and_a_second_reviewer_activates_it(
    two_reviewers, make_candidate, reviewer, second_reviewer
):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version, reason="looks right")
    entry.refresh_from_db()
    assert (entry.status, entry.queue_reason, entry.first_approval_by) == (Status.PENDING, "new", reviewer)
    assert entry.queued_at is not None and entry.first_approval_at is not None
    first = last_event(entry)
    assert (first.action, first.actor, first.reason) == (EventAction.FIRST_APPROVAL, reviewer, "looks right")
    assert first.before["first_approval_by"] is None and first.after["first_approval_by"] == reviewer.pk
    assert queue_count(second_reviewer, QueueFilters()) == (1, False)

    with pytest.raises(InvalidTransition, match="second reviewer"):
        services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    services.approve_candidate(entry.pk, actor=second_reviewer, expected_version=entry.version)
    entry.refresh_from_db()
    assert (entry.status, entry.queued_at, entry.first_approval_by) == (Status.ACTIVE, None, None)
    second = last_event(entry)
    assert (second.action, second.actor) == (EventAction.SECOND_APPROVAL, second_reviewer)
    assert second.before["first_approval_by"] == reviewer.pk
    assert EventAction.SECOND_APPROVAL in EventAction.activating()


def test_one_approval_activates_outside_two_reviewer_scopes(two_reviewers, make_candidate, reviewer):
    entry = make_candidate(scope="globex/web")
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    entry.refresh_from_db()
    assert entry.status == Status.ACTIVE and last_event(entry).action == EventAction.APPROVE


def test_a_disagreement_goes_to_a_lead_and_leaves_the_reviewers_queue(
    two_reviewers, make_candidate, reviewer, second_reviewer, lead
):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    entry.refresh_from_db()
    services.reject_candidate(entry.pk, actor=second_reviewer, expected_version=entry.version, reason="too broad")
    entry.refresh_from_db()
    assert (entry.status, entry.queue_reason, entry.first_approval_by) == (
        Status.PENDING,
        QueueReason.NEEDS_LEAD,
        reviewer,
    )
    event = last_event(entry)
    assert (event.action, event.actor, event.reason) == (EventAction.DISAGREEMENT, second_reviewer, "too broad")
    assert queue_count(reviewer, QueueFilters()) == (0, False)
    assert queue_count(lead, QueueFilters()) == (1, False)
    assert queue_count(lead, QueueFilters(reason="lead")) == (1, False)
    with pytest.raises(InvalidTransition, match="a lead decides"):
        services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    with pytest.raises(InvalidTransition, match="a lead decides"):
        services.defer_candidate(entry.pk, actor=second_reviewer, expected_version=entry.version)
    services.approve_candidate(entry.pk, actor=lead, expected_version=entry.version, reason="narrow enough")
    entry.refresh_from_db()
    assert entry.status == Status.ACTIVE and entry.queue_reason == "" and entry.first_approval_by is None
    assert (last_event(entry).action, last_event(entry).actor) == (EventAction.APPROVE, lead)


def test_a_lead_rejects_a_disagreement(two_reviewers, make_candidate, reviewer, second_reviewer, lead):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    services.reject_candidate(entry.pk, actor=second_reviewer, expected_version=2, reason="too broad")
    services.reject_candidate(entry.pk, actor=lead, expected_version=3, reason="agreed: too broad")
    entry.refresh_from_db()
    assert (entry.status, entry.queued_at, last_event(entry).action) == (Status.REJECTED, None, EventAction.REJECT)


def test_a_rejection_without_an_approval_rejects_at_once(two_reviewers, make_candidate, reviewer):
    entry = make_candidate()
    services.reject_candidate(entry.pk, actor=reviewer, expected_version=1, reason="wrong")
    entry.refresh_from_db()
    assert entry.status == Status.REJECTED and last_event(entry).action == EventAction.REJECT


def test_an_edit_is_a_first_approval_of_the_edited_text(two_reviewers, make_candidate, reviewer, second_reviewer):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    services.edit_and_approve(
        entry.pk, actor=second_reviewer, expected_version=2, changes={"boundary": "Not on the host."}
    )
    entry.refresh_from_db()
    assert (entry.status, entry.first_approval_by, entry.boundary) == (
        Status.PENDING,
        second_reviewer,
        "Not on the host.",
    )
    assert last_event(entry).action == EventAction.FIRST_APPROVAL
    services.edit_and_approve(entry.pk, actor=reviewer, expected_version=3, changes={"boundary": "Not on the host."})
    entry.refresh_from_db()
    assert entry.status == Status.ACTIVE and last_event(entry).action == EventAction.SECOND_APPROVAL


def test_undo_of_a_first_approval_and_of_a_disagreement(two_reviewers, make_candidate, reviewer, second_reviewer):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    services.undo_decision(entry.pk, actor=reviewer, expected_version=2)
    entry.refresh_from_db()
    assert (entry.status, entry.first_approval_by, entry.first_approval_at) == (Status.PENDING, None, None)
    assert last_event(entry).action == EventAction.UNDO

    services.approve_candidate(entry.pk, actor=reviewer, expected_version=3)
    services.reject_candidate(entry.pk, actor=second_reviewer, expected_version=4, reason="no")
    services.undo_decision(entry.pk, actor=second_reviewer, expected_version=5)
    entry.refresh_from_db()
    assert (entry.queue_reason, entry.first_approval_by) == ("new", reviewer)


def test_bulk_approve_says_which_were_first_approvals(two_reviewers, make_candidate, reviewer):
    inside = make_candidate()
    outside = make_candidate(scope="globex/web")
    outcomes = services.bulk_decide([(inside.pk, 1), (outside.pk, 1)], actor=reviewer, action="approve")
    assert [(o.ok, o.message) for o in outcomes] == [
        (True, "approved, 1 of 2: a second reviewer activates it"),
        (True, "approved"),
    ]
    assert Entry.objects.get(pk=inside.pk).status == Status.PENDING
    assert Entry.objects.get(pk=outside.pk).status == Status.ACTIVE
    again = services.bulk_decide([(inside.pk, 2)], actor=reviewer, action="approve")
    assert not again[0].ok and "second reviewer" in again[0].message
