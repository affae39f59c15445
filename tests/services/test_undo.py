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
    # The undo's Event puts back what the decision changed: its new values are the decision's old ones.
    decision = Event.objects.get(entry=entry, entry_version=2)
    assert {k: last.after[k] for k in decision.before if k != "confidence"} == {
        k: v for k, v in decision.before.items() if k != "confidence"
    }


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


def test_undo_a_whole_bulk_action(reviewer, second_reviewer, make_candidate):
    """Every decision of the bulk that is still the reviewer's last on its entry comes back, each with its
    own Event; an entry changed since is reported and left as it is, never overwritten."""
    a, b, c, d = (make_candidate(trigger=f"Bulk lesson {i}") for i in "abcd")
    decided = services.bulk_decide([(e.pk, 1) for e in (a, b, c, d)], actor=reviewer, action="approve")
    assert all(o.ok for o in decided)
    # Since the bulk: another reviewer sent c back for a recheck, and the reviewer undid d on its own.
    services.candidates.send_back_for_recheck(c.pk, actor=second_reviewer, expected_version=2)
    services.undo_decision(d.pk, actor=reviewer, expected_version=2)  # d undone on its own first
    outcomes = services.undo_bulk([(e.pk, 2) for e in (a, b, c, d)], actor=reviewer)
    by_id = {o.entry_id: o for o in outcomes}
    assert by_id[a.pk].ok and by_id[b.pk].ok
    assert [state(e)[0] for e in (a, b)] == [Status.PENDING, Status.PENDING]
    assert [Event.objects.filter(entry=e).latest("id").action for e in (a, b)] == ["undo", "undo"]
    assert not by_id[c.pk].ok and "changed since you loaded it: rob (queue_recheck)" in by_id[c.pk].message
    assert state(c)[0] == Status.ACTIVE and Entry.objects.get(pk=c.pk).queue_reason == "recheck_requested"
    assert not by_id[d.pk].ok and "already undone" in by_id[d.pk].message
    assert Event.objects.filter(entry=d, action="undo").count() == 1


def test_undo_of_a_bulk_is_for_its_window_and_its_own_actor(reviewer, second_reviewer, make_candidate):
    a, b = (make_candidate(trigger=f"Bulk lesson {i}") for i in "ab")
    services.bulk_decide([(a.pk, 1), (b.pk, 1)], actor=reviewer, action="reject", reason="dupes")
    later = timezone.now() + datetime.timedelta(seconds=UNDO_SECONDS + 1)
    late = services.undo_bulk([(a.pk, 2), (b.pk, 2)], actor=reviewer, at=later)
    assert [o.ok for o in late] == [False, False] and f"Undo is for {UNDO_SECONDS} seconds" in late[0].message
    theirs = services.undo_bulk([(a.pk, 2), (b.pk, 2)], actor=second_reviewer)
    assert not any(o.ok for o in theirs) and "not a decision of yours" in theirs[0].message
    assert state(a)[0] == state(b)[0] == Status.REJECTED


def test_a_card_refused_during_a_forgets_approval_leaves_the_rest_of_the_bulk_decided(
    reviewer, make_candidate, monkeypatch
):
    """A forget request being approved refuses a write that looks at the tombstones (nothing of that card is
    saved): the bulk says so on that card, and the others are decided as asked, not reported as unsaved."""
    from curation.selectors.forgets import ForgetInProgress

    a, b, c = (make_candidate(trigger=f"Bulk lesson {i}") for i in "abc")
    decide, undo = services.candidates.approve_candidate, services.candidates.undo_decision

    def refused_for_b(call):
        def wrapped(entry_id, **kwargs):
            if entry_id == b.pk:
                raise ForgetInProgress()
            return call(entry_id, **kwargs)

        return wrapped

    monkeypatch.setattr(services.candidates, "approve_candidate", refused_for_b(decide))
    decided = services.bulk_decide([(e.pk, 1) for e in (a, b, c)], actor=reviewer, action="approve")
    assert [o.ok for o in decided] == [True, False, True]
    assert decided[1].message == ForgetInProgress.MESSAGE
    assert [state(e)[0] for e in (a, b, c)] == [Status.ACTIVE, Status.PENDING, Status.ACTIVE]
    monkeypatch.setattr(services.candidates, "undo_decision", refused_for_b(undo))
    undone = services.undo_bulk([(a.pk, 2), (b.pk, 2), (c.pk, 2)], actor=reviewer)
    assert [o.ok for o in undone] == [True, False, True] and undone[1].message == ForgetInProgress.MESSAGE
    assert [state(e)[0] for e in (a, c)] == [Status.PENDING, Status.PENDING]
