"""The transition table in the write path: every action tried from every status, who may make each, and the
two-reviewer rule on every path that makes a pending entry active (approval, an admission policy, keeping a
side of a conflict, a merge)."""

import datetime
import itertools
import uuid

import pytest
from django.core.exceptions import PermissionDenied
from django.db import transaction

from curation import services
from curation.rules import clock, transitions
from curation.rules.trust import Trust
from curation.models import Conflict, Entry, Event, EventAction, QueueReason, Status
from curation.services import InvalidTransition, conflicts
from curation.services.candidates import send_back_for_recheck
from curation.services.entry_writes import insert_entry, write_entry
from curation.services.scope_policies import set_scope_policy
from curation.services.submissions import submit_batch, submit_candidate
from tests.factories import active, agent_token, candidate_data, make_archived, make_user

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"
REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])


def set_review_rule(prefix, *, approvals, actor):
    return set_scope_policy("review", data={"prefix": prefix, "approvals": approvals}, actor=actor)


def set_admission_policy(*, data, actor, at):
    return set_scope_policy("admission", data=data, actor=actor, at=at)


def _pending(**fields):
    text = {"trigger": f"Deploying service {uuid.uuid4().hex[:8]}", **fields}
    return services.create_candidate(data=candidate_data(scope=SCOPE, **text), actor_label="agent:ci")


def in_status(status: str, reviewer) -> Entry:
    """An entry in `status`, reached through the services as the product reaches it."""
    if status == Status.PENDING:
        return _pending()
    if status == Status.ARCHIVED:
        return make_archived(archived_at=clock.now(), scope=SCOPE, trigger=f"Archived {uuid.uuid4().hex[:8]}")
    if status == Status.SUPERSEDED:
        target = active(reviewer, scope=SCOPE, trigger=f"Target {uuid.uuid4().hex[:8]}")
        entry = _pending()
        return services.merge_into(entry.pk, target_id=target.pk, actor=reviewer, expected_version=entry.version)
    entry = _pending()
    if status == Status.REJECTED:
        return services.reject_candidate(entry.pk, actor=reviewer, expected_version=entry.version, reason="no")
    entry = services.approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    if status == Status.RETIRED:
        entry = send_back_for_recheck(entry.pk, actor=reviewer, expected_version=entry.version)
        return services.reject_candidate(entry.pk, actor=reviewer, expected_version=entry.version, reason="wrong")
    return entry


def _required(action, lead) -> dict:
    given = {
        "first_approval_by": lead,
        "queued_at": clock.now() + datetime.timedelta(hours=1),
        "queue_reason": QueueReason.RECHECK_REQUESTED,
        "archive_reason": "decayed",
        "flags": [{"kind": "injection", "detail": "override phrase in content"}],
        "trust": Trust.PERSON,
    }
    return {column: given[column] for column in transitions.transition(action).requires}


UPDATES = [action for action, row in transitions.TRANSITIONS.items() if transitions.NEW not in row.starts]


@pytest.mark.parametrize("action, status", list(itertools.product(UPDATES, Status.values)))
def test_every_action_from_every_status_does_what_the_table_says(action, status, reviewer, lead):
    entry = Entry.objects.get(pk=in_status(status, reviewer).pk)
    row = transitions.transition(action)
    actor = lead if transitions.PERSON in row.by else None
    events = Event.objects.filter(entry=entry).count()
    if status not in row.starts:
        with pytest.raises(InvalidTransition, match=f"#{entry.pk} cannot be"), transaction.atomic():
            write_entry(entry, _required(action, lead), action=action, actor=actor, at=clock.now())
        stored = Entry.objects.get(pk=entry.pk)
        assert (stored.status, stored.version) == (status, entry.version)
        assert Event.objects.filter(entry=entry).count() == events
        return
    write_entry(entry, _required(action, lead), action=action, actor=actor, at=clock.now())
    stored = Entry.objects.get(pk=entry.pk)
    assert stored.status in row.ends or (transitions.SAME in row.ends and stored.status == status)
    for column, value in row.sets.items():
        assert getattr(stored, column) == (value.pk if hasattr(value, "pk") else value), column
    if stored.status == Status.ACTIVE and status != Status.ACTIVE:
        assert stored.last_verified_at is not None and stored.archived_at is None
    assert Event.objects.filter(entry=entry).latest("id").action == action


def test_the_table_refuses_in_words():
    assert transitions.refusal(EventAction.APPROVE, Status.RETIRED, Status.ACTIVE) == (
        'it is retired; "approved" applies to pending entries'
    )
    assert transitions.refusal(EventAction.ARCHIVE, Status.ACTIVE, Status.ARCHIVED) is None
    assert transitions.refusal(EventAction.OUTCOME_SUCCESS, Status.ARCHIVED, Status.ARCHIVED) is None
    assert transitions.refusal(EventAction.OUTCOME_SUCCESS, Status.ARCHIVED, Status.ACTIVE) is not None
    assert transitions.refusal(EventAction.CONFLICT_MERGE, transitions.NEW, Status.ACTIVE) is None
    with pytest.raises(KeyError, match="no transition"):
        transitions.transition(EventAction.TOKEN_CREATED)


def test_every_action_that_makes_an_entry_active_is_in_the_table():
    for action in EventAction.activating():
        assert Status.ACTIVE in transitions.transition(action).ends, action


# --- who may make a change ------------------------------------------------------------------------------


def test_a_person_without_the_role_or_the_scope_is_refused_by_the_write_path(auditor, reviewer):
    entry = _pending()
    with pytest.raises(PermissionDenied, match="role"):
        write_entry(entry, {}, action=EventAction.APPROVE, actor=auditor, at=clock.now())
    outsider = make_user("outsider", "reviewer", scopes=["globex"])
    with pytest.raises(PermissionDenied, match="outside your scopes"):
        write_entry(entry, {}, action=EventAction.APPROVE, actor=outsider, at=clock.now())
    with pytest.raises(PermissionDenied, match="a person's decision"):
        write_entry(entry, {}, action=EventAction.SECOND_APPROVAL, actor=None, at=clock.now())
    stored = active(reviewer, scope=SCOPE, trigger="Active one")
    with pytest.raises(PermissionDenied, match="made by the system"):
        write_entry(stored, {"archive_reason": "decayed"}, action=EventAction.ARCHIVE, actor=reviewer, at=clock.now())
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING


# --- the two-reviewer rule on every activation -------------------------------------------------------------


@pytest.fixture
def two_reviewers(lead):
    return set_review_rule(SCOPE, approvals=2, actor=lead)


def test_an_approval_alone_cannot_activate_a_pending_entry_in_a_two_reviewer_scope(two_reviewers, reviewer):
    entry = _pending()
    with pytest.raises(InvalidTransition, match="two reviewers' approvals and it has none yet"):
        write_entry(entry, {}, action=EventAction.APPROVE, actor=reviewer, at=clock.now())
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING


def _conflict(reviewer, *, two_reviewers_by=None, b_first_approval_by=None):
    a = active(reviewer, scope=SCOPE, **REBASE)
    if two_reviewers_by is not None:  # set after the active side was approved by one reviewer
        set_review_rule(SCOPE, approvals=2, actor=two_reviewers_by)
    b = services.create_candidate(data=candidate_data(scope=f"{SCOPE}/container", **NO_REBASE), actor_label="agent:ci")
    if b_first_approval_by is not None:
        b = services.approve_candidate(b.pk, actor=b_first_approval_by, expected_version=b.version)
    conflicts.detect_conflicts_for(b)
    conflict = Conflict.objects.get(entry_a=a, entry_b=b, state=Conflict.State.OPEN)
    return conflict, Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)


def test_keeping_a_pending_side_alone_in_a_two_reviewer_scope_is_refused(lead, reviewer):
    conflict, a, b = _conflict(reviewer)
    set_review_rule(SCOPE, approvals=2, actor=lead)
    with pytest.raises(InvalidTransition, match=f"#{b.pk} cannot be made active: its scope needs two reviewers'"):
        conflicts.keep_entry(conflict.pk, actor=reviewer, keep=b.pk, version_a=a.version, version_b=b.version)
    assert Entry.objects.get(pk=b.pk).status == Status.PENDING
    assert Entry.objects.get(pk=a.pk).status == Status.ACTIVE  # nothing of the decision was written
    assert Conflict.objects.get(pk=conflict.pk).state == Conflict.State.OPEN


def test_keeping_a_side_another_reviewer_approved_first_is_its_second_approval(lead, reviewer, second_reviewer):
    conflict, a, b = _conflict(reviewer, two_reviewers_by=lead, b_first_approval_by=second_reviewer)
    assert (b.status, b.first_approval_by_id) == (Status.PENDING, second_reviewer.pk)
    with pytest.raises(InvalidTransition, match="a reviewer other than the first"):
        conflicts.keep_entry(conflict.pk, actor=second_reviewer, keep=b.pk, version_a=a.version, version_b=b.version)
    conflicts.keep_entry(conflict.pk, actor=reviewer, keep=b.pk, version_a=a.version, version_b=b.version)
    stored = Entry.objects.get(pk=b.pk)
    assert (stored.status, stored.queued_at, stored.first_approval_by_id) == (Status.ACTIVE, None, None)


def test_a_merge_in_a_two_reviewer_scope_waits_for_a_second_reviewer(lead, reviewer, second_reviewer):
    conflict, a, b = _conflict(reviewer)
    set_review_rule(SCOPE, approvals=2, actor=lead)
    data = {
        "scope": SCOPE,
        "trigger": REBASE["trigger"],
        "content": "Rebase feature branches; never shared ones.",
        "boundary": "",
        "conditions": [],
        "kind": a.kind,
    }
    result = conflicts.merge_conflict(conflict.pk, actor=lead, data=data, version_a=a.version, version_b=b.version)
    merged = Entry.objects.get(pk=result.created.pk)
    assert (merged.status, merged.first_approval_by_id) == (Status.PENDING, lead.pk)
    assert merged.queued_at is not None
    with pytest.raises(InvalidTransition, match="second reviewer"):
        services.approve_candidate(merged.pk, actor=lead, expected_version=merged.version)
    services.approve_candidate(merged.pk, actor=second_reviewer, expected_version=merged.version)
    assert Entry.objects.get(pk=merged.pk).status == Status.ACTIVE


def test_a_merge_inserted_active_in_a_two_reviewer_scope_is_refused(two_reviewers, lead):
    entry = Entry(
        scope=SCOPE,
        kind="procedure",
        trigger="Merged",
        content="Merged advice.",
        signal="self",
        base_confidence=0.5,
        status=Status.ACTIVE,
        created_by_label="t",
        created_at=clock.now(),
        updated_at=clock.now(),
    )
    with pytest.raises(InvalidTransition, match="two reviewers"):
        insert_entry(entry, action=EventAction.CONFLICT_MERGE, actor=lead, at=clock.now())
    assert not Entry.objects.filter(trigger="Merged").exists()


def test_a_two_reviewer_rule_wins_over_an_automatic_admission_policy(lead):
    set_admission_policy(data={"prefix": SCOPE, "name": "trust-ci", "mode": "all"}, actor=lead, at=clock.now())
    token = agent_token(name="ci-agent", scopes=(SCOPE,))
    admitted = submit_candidate(data=candidate_data(scope=SCOPE, trigger="Before the rule"), token=token)
    assert Entry.objects.get(pk=admitted.entry.pk).status == Status.ACTIVE

    set_review_rule(SCOPE, approvals=2, actor=lead)
    one = submit_candidate(data=candidate_data(scope=SCOPE, trigger="After the rule"), token=token)
    [batch] = submit_batch(
        items=[candidate_data(scope=SCOPE, trigger="After the rule, in a batch")], token=token, at=clock.now()
    )
    for entry_id in (one.entry.pk, batch["id"]):
        stored = Entry.objects.get(pk=entry_id)
        assert (stored.status, stored.queued_at is not None) == (Status.PENDING, True)
        assert not Event.objects.filter(entry=stored, action=EventAction.APPROVE).exists()
    assert batch["status"] == Status.PENDING
