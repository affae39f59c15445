"""Undo on the conflicts and consolidation queues: a reviewer takes back their own dismissal or keep for a
short while, as Events of their own (entries written through the one write path); what cannot be taken
back safely says why."""

import datetime

import pytest
from django.utils import timezone

from curation.models import Conflict, ConsolidationProposal, Entry, Event, Status
from curation.services import InvalidTransition, StaleDecision, conflicts, consolidation
from curation.services.candidates import UNDO_SECONDS
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active

pytestmark = pytest.mark.django_db

REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])
PORT = dict(
    trigger="Connecting to the billing database from the container",
    content="Probe port 5432 with nc before connecting.",
    conditions=["db"],
)


def a_conflict(reviewer, **b_fields):
    a = active(reviewer, scope="acme/billing-api", **REBASE)
    b = active(reviewer, scope="acme/billing-api/container", **{**NO_REBASE, **b_fields})
    [conflict] = [c for c in conflicts.detect_conflicts_for(b) if c.entry_a_id == a.pk]
    return conflict, a, b


def fresh(*objects):
    return [type(o).objects.get(pk=o.pk) for o in objects]


def test_undo_a_dismissal_reopens_the_conflict(reviewer, second_reviewer):
    conflict, a, b = a_conflict(reviewer)
    conflicts.dismiss_conflict(conflict.pk, actor=reviewer, version_a=a.version, version_b=b.version)
    with pytest.raises(InvalidTransition, match="not a decision of yours"):
        conflicts.undo_resolution(conflict.pk, actor=second_reviewer, version_a=a.version, version_b=b.version)
    conflicts.undo_resolution(conflict.pk, actor=reviewer, version_a=a.version, version_b=b.version)
    conflict, a2, b2 = fresh(conflict, a, b)
    assert (conflict.state, conflict.resolution, conflict.resolved_by) == ("open", "", None)
    assert (a2.version, b2.version) == (a.version, b.version)  # a dismissal changed neither entry, nor does its undo
    for entry in (a, b):
        last = Event.objects.filter(entry=entry).latest("id")
        assert (last.action, last.actor, last.after["state"]) == ("undo", reviewer, "open")
    with pytest.raises(InvalidTransition, match="is open"):
        conflicts.undo_resolution(conflict.pk, actor=reviewer, version_a=a.version, version_b=b.version)


def test_undo_a_keep_puts_both_entries_back_and_reopens_what_it_closed(reviewer):
    conflict, a, b = a_conflict(reviewer)
    # A third entry in conflict with b: the keep of a supersedes b and closes that one as moot.
    c = active(reviewer, scope="acme/billing-api/container/ci", **REBASE)
    [moot] = [x for x in conflicts.detect_conflicts_for(c) if b.pk in (x.entry_a_id, x.entry_b_id)]
    before = {e.pk: (e.status, e.supersedes_id, e.version) for e in fresh(a, b)}
    kept = conflicts.keep_entry(conflict.pk, actor=reviewer, keep=a.pk, version_a=a.version, version_b=b.version)
    a1, b1 = kept.kept[0], kept.superseded[0]
    assert (a1.supersedes_id, b1.status, fresh(moot)[0].state) == (b.pk, Status.SUPERSEDED, "resolved")

    conflicts.undo_resolution(conflict.pk, actor=reviewer, version_a=a1.version, version_b=b1.version)
    a2, b2, conflict, moot = fresh(a, b, conflict, moot)
    assert (a2.status, a2.supersedes_id) == before[a.pk][:2] and (b2.status, b2.supersedes_id) == before[b.pk][:2]
    assert (a2.version, b2.version) == (a1.version + 1, b1.version + 1)  # written, never rewound
    assert [Event.objects.filter(entry=e).latest("id").action for e in (a, b)] == ["undo", "undo"]
    assert conflict.state == moot.state == Conflict.State.OPEN and moot.resolution == ""
    assert Event.objects.filter(conflict=moot, action="undo").exists()


def test_a_conflict_undo_is_refused_when_stale_late_or_not_undoable(reviewer, second_reviewer):
    conflict, a, b = a_conflict(reviewer)
    kept = conflicts.keep_entry(conflict.pk, actor=reviewer, keep=b.pk, version_a=a.version, version_b=b.version)
    b1, a1 = kept.kept[0], kept.superseded[0]
    later = timezone.now() + datetime.timedelta(seconds=UNDO_SECONDS + 1)
    with pytest.raises(InvalidTransition, match=f"Undo is for {UNDO_SECONDS} seconds"):
        conflicts.undo_resolution(conflict.pk, actor=reviewer, version_a=a1.version, version_b=b1.version, at=later)
    with pytest.raises(StaleDecision):
        conflicts.undo_resolution(conflict.pk, actor=reviewer, version_a=a1.version - 1, version_b=b1.version)
    assert fresh(a)[0].status == Status.SUPERSEDED and fresh(conflict)[0].state == "resolved"

    other, c, d = a_conflict(reviewer, trigger="Merging hotfix branches into main")
    conflicts.merge_conflict(
        other.pk,
        actor=reviewer,
        version_a=c.version,
        version_b=d.version,
        data={
            "kind": "failure_lesson",
            "scope": "acme/billing-api",
            "trigger": "Merging into main",
            "content": "Rebase private branches only.",
            "boundary": "",
            "conditions": "",
        },
    )
    with pytest.raises(InvalidTransition, match="cannot be undone: the merge wrote a new entry"):
        conflicts.undo_resolution(other.pk, actor=reviewer, version_a=c.version + 1, version_b=d.version + 1)


def test_undo_a_dismissed_proposal_reopens_it(reviewer, second_reviewer):
    a = active(reviewer, scope="acme/billing-api", confidence=0.6, **PORT)
    b = active(reviewer, scope="acme/billing-api", confidence=0.8, **{**PORT, "content": PORT["content"] + "!"})
    [p] = consolidation_sweep.sweep_consolidation().proposed
    consolidation.dismiss_proposal(p.pk, actor=reviewer)
    with pytest.raises(InvalidTransition, match="not one of yours"):
        consolidation.undo_dismissal(p.pk, actor=second_reviewer)
    later = timezone.now() + datetime.timedelta(seconds=UNDO_SECONDS + 1)
    with pytest.raises(InvalidTransition, match="Undo is for"):
        consolidation.undo_dismissal(p.pk, actor=reviewer, at=later)
    consolidation.undo_dismissal(p.pk, actor=reviewer)
    p = fresh(p)[0]
    assert (p.state, p.decided_by, p.decided_at) == (ConsolidationProposal.State.OPEN, None, None)
    assert [Event.objects.filter(entry=e).latest("id").action for e in (a, b)] == ["undo", "undo"]
    # Open again, it is decided as any open proposal; an accepted merge is not undone.
    outcome = consolidation.accept_proposal(p.pk, actor=reviewer)
    with pytest.raises(InvalidTransition, match=f"cannot be undone: the merge wrote new entry #{outcome.created.pk}"):
        consolidation.undo_dismissal(p.pk, actor=reviewer)
    assert Entry.objects.get(pk=a.pk).status == Status.SUPERSEDED
