"""What each change of an entry means, in one table keyed by the Event's action: the statuses it may start
from, the statuses it may leave the entry in, the values it always writes, who may make it, and whether it
passes the two-reviewer rule. The write path (services/entry_writes.py) looks every write up here, refuses
an illegal one with the reason in words, and applies the table's values; the services decide which action
a decision is and what else it changes (an edit's text, a merge's new entry).

So "what does approving do?" is the APPROVE row: from pending, to active, with the activation's values
(out of the queue, verified now, no half approval left), by a reviewer or an admission policy, and, as every
write that makes a pending entry active, only with the approvals its scope needs.

Pure: no queries. The checks that need the database (the scope's review rule, the tombstones) are the write
path's, named by the rows here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from curation.rules.vocabulary import EventAction, QueueReason, Status
from curation.rules.permissions import FORGET, REVIEW, SETTLE

NEW = "new"  # the start of an insert: the entry does not exist yet
A = EventAction

# Out of the queue, verified at the write's moment, no first approval waiting, not archived: what every
# activation writes (an approval, a second approval, a confirmation on recheck, a reactivation, an admission
# policy's approval, the kept side of a conflict that was pending, a merge's new entry).
ACTIVATION: Mapping[str, Any] = {
    "status": Status.ACTIVE,
    "queued_at": None,
    "queue_reason": "",
    "archived_at": None,
    "archive_reason": "",
    "first_approval_by": None,
    "first_approval_at": None,
}
ACTIVATION_STAMPS = ("last_verified_at",)
# Out of every queue, with no half approval: an entry that leaves the live set for good.
LEAVING = {"queued_at": None, "queue_reason": "", "first_approval_by": None, "first_approval_at": None}

SAME = "="  # in `ends`: the status it started in
PERSON, SYSTEM = "person", "system"  # who makes a change: a signed-in user, or an agent, a policy or a sweep


@dataclass(frozen=True)
class Transition:
    starts: frozenset[str]  # the statuses it may start from (NEW: an insert)
    ends: frozenset[str]  # the statuses it may leave the entry in
    sets: Mapping[str, Any] = field(default_factory=dict)  # values it always writes
    stamps: tuple[str, ...] = ()  # columns set to the write's moment unless the caller gives them
    requires: tuple[str, ...] = ()  # columns the caller must give
    by: frozenset[str] = frozenset({PERSON})  # who may make it
    permission: str | None = REVIEW  # what a person needs (and reach over the entry's scope)

    def values(self, changes: Mapping[str, Any], at) -> dict:
        """The columns the write sets: the stamps the caller did not give, the caller's changes, then the
        table's values (a caller cannot contradict them: ValueError, a bug in the caller)."""
        for column, value in self.sets.items():
            if column in changes and changes[column] != value:
                raise ValueError(f"{column}={changes[column]!r} contradicts the transition's {value!r}")
        return {**{c: at for c in self.stamps if c not in changes}, **changes, **self.sets}


def _t(starts, ends, **kwargs) -> Transition:
    return Transition(frozenset(starts), frozenset(ends), **kwargs)


_ANY = tuple(Status.values)
_LIVE = (Status.PENDING, Status.ACTIVE)
_EITHER = frozenset({PERSON, SYSTEM})
_ACTIVATE = {"sets": ACTIVATION, "stamps": ACTIVATION_STAMPS}

TRANSITIONS: dict[str, Transition] = {
    # Arrivals. A held submission (it repeats a forgotten lesson) is born rejected.
    A.SUBMIT: _t([NEW], [Status.PENDING, Status.REJECTED], by=_EITHER, permission=None),
    # The candidates queue. Archived entries reach it only when low utility sent them for a recheck.
    # An admission policy decides on a new candidate before it is inserted: its approval or rejection is
    # the insert (NEW).
    A.APPROVE: _t([Status.PENDING, NEW], [Status.ACTIVE], by=_EITHER, **_ACTIVATE),
    A.EDIT_APPROVE: _t([Status.PENDING, Status.ACTIVE, Status.ARCHIVED], [Status.ACTIVE], **_ACTIVATE),
    A.FIRST_APPROVAL: _t(
        [Status.PENDING], [Status.PENDING], stamps=("first_approval_at",), requires=("first_approval_by",)
    ),
    A.SECOND_APPROVAL: _t([Status.PENDING], [Status.ACTIVE], **_ACTIVATE),
    A.CONFIRM: _t([Status.ACTIVE], [Status.ACTIVE], **_ACTIVATE),
    A.REACTIVATE: _t([Status.ARCHIVED], [Status.ACTIVE], **_ACTIVATE),
    A.DISAGREEMENT: _t([Status.PENDING], [Status.PENDING], sets={"queue_reason": QueueReason.NEEDS_LEAD}),
    A.REJECT: _t([Status.PENDING, NEW], [Status.REJECTED], sets={"status": Status.REJECTED, **LEAVING}, by=_EITHER),
    A.RETIRE: _t([Status.ACTIVE, Status.ARCHIVED], [Status.RETIRED], sets={"status": Status.RETIRED, **LEAVING}),
    A.DEFER: _t([Status.PENDING, Status.ACTIVE, Status.ARCHIVED], [SAME], requires=("queued_at",)),
    A.MERGE_INTO: _t([Status.PENDING], [Status.SUPERSEDED], sets={"status": Status.SUPERSEDED, **LEAVING}),
    # Puts back what the undone decision's Event saw (undoable decisions only: the service checks).
    A.UNDO: _t(_ANY, _ANY),
    A.QUEUE_RECHECK: _t(
        [Status.ACTIVE], [Status.ACTIVE], stamps=("queued_at",), requires=("queue_reason",), by=_EITHER
    ),
    # A confirmation from another source raises the provenance trust, whatever the entry is now.
    A.TRUST_RAISED: _t(_ANY, [SAME], requires=("trust",), by=_EITHER, permission=None),
    # Agents' outcomes count on whatever the entry is now (archived since the task read it, say).
    A.OUTCOME_SUCCESS: _t(_ANY, [SAME], by=frozenset({SYSTEM})),
    A.OUTCOME_FAILURE: _t(_ANY, [SAME], by=frozenset({SYSTEM})),
    # Sweeps: every archiving sweep (decay, unused, low utility, capacity) is this one archive.
    A.ARCHIVE: _t(
        [Status.ACTIVE],
        [Status.ARCHIVED],
        sets={"status": Status.ARCHIVED},
        stamps=("archived_at",),
        requires=("archive_reason",),
        by=frozenset({SYSTEM}),
    ),
    A.REVIVE: _t(
        [Status.ARCHIVED],
        [Status.ACTIVE],
        sets={"status": Status.ACTIVE, "archived_at": None, "archive_reason": ""},
        by=frozenset({SYSTEM}),
    ),
    # Conflicts and consolidation. A kept side that was pending is activated (the activation's values and
    # the two-reviewer rule, as every pending entry made active); a merge inserts one new entry.
    A.CONFLICT_KEEP: _t(_LIVE, [Status.ACTIVE]),
    A.CONFLICT_SPLIT: _t(_LIVE, [SAME]),
    A.CONFLICT_MERGE: _t([NEW], [Status.ACTIVE, Status.PENDING]),
    A.CONSOLIDATION_MERGE: _t([NEW], [Status.ACTIVE, Status.PENDING]),
    A.CONSOLIDATION_KEEP: _t([Status.ACTIVE], [Status.ACTIVE]),
    A.SUPERSEDE: _t(_LIVE, [Status.SUPERSEDED], sets={"status": Status.SUPERSEDED, **LEAVING}),
    # The injection sweep: a newer detector flagged the entry's text (its flags, and for an active entry the
    # queue, are the caller's values).
    A.QUARANTINE: _t(
        [Status.PENDING, Status.ACTIVE, Status.ARCHIVED],
        [SAME],
        sets={"quarantined": True},
        requires=("flags",),
        by=frozenset({SYSTEM}),
    ),
    # Forgetting retires the entry whatever it was and purges its text (the caller's values).
    A.FORGOTTEN: _t(_ANY, [Status.RETIRED], sets={"status": Status.RETIRED, **LEAVING}, permission=FORGET),
}


def transition(action) -> Transition:
    """The row of an action; KeyError for an action that never writes an entry (a bug in the caller)."""
    try:
        return TRANSITIONS[str(action)]
    except KeyError:
        raise KeyError(f"{action!r} does not write an entry: no transition") from None


def refusal(action, start: str, end: str) -> str | None:
    """Why an entry in `start` cannot be left in `end` by `action`, in words; None when it can."""
    row = transition(action)
    label = EventAction(str(action)).label
    if start not in row.starts:
        allowed = " or ".join(sorted(s for s in row.starts if s != NEW)) or "new"
        return f"it is {start if start != NEW else 'new'}; \"{label}\" applies to {allowed} entries"
    if end not in row.ends and not (SAME in row.ends and end == start):
        return f"\"{label}\" does not leave an entry {end}"
    return None


def activates_pending(start: str, end: str) -> bool:
    """Does this write make a pending (or new) entry active? Then the activation's values apply and the
    scope's approvals must be there."""
    return start in (Status.PENDING, NEW) and end == Status.ACTIVE


def two_reviewer_refusal(
    approvals_required: int, *, first_approval_by: int | None, actor_id: int | None, queue_reason: str
) -> str | None:
    """A pending entry in a scope that needs two approvals becomes active only when two different people
    approved it: the write is by a person other than the one who gave its first approval (the second
    approval, or keeping it on a conflict card), or a lead settles a disagreement (the entry waits with
    NEEDS_LEAD). Everything else (one reviewer alone, an admission policy, a merge's new entry) is refused."""
    if approvals_required < 2 or (queue_reason == QueueReason.NEEDS_LEAD and actor_id is not None):
        return None
    if first_approval_by is None:
        return (
            "its scope needs two reviewers' approvals and it has none yet: approve it in the candidates queue, "
            "then a second reviewer makes it active"
        )
    if actor_id is None or actor_id == first_approval_by:
        return "its scope needs two reviewers' approvals: a reviewer other than the first one makes it active"
    return None


# The decisions that approve an entry's text, or keep it live by a person's choice. On an entry in quarantine
# (an injection detector flagged its text and no lead has accepted it) only a lead makes them, and a lead's
# lifts the quarantine: the lead read the card, which says what was found. Nobody else may: a reviewer, an
# admission policy, a sweep.
APPROVES_TEXT = frozenset(
    {
        A.APPROVE,
        A.EDIT_APPROVE,
        A.FIRST_APPROVAL,
        A.SECOND_APPROVAL,
        A.CONFIRM,
        A.REACTIVATE,
        A.CONFLICT_KEEP,
        A.CONFLICT_SPLIT,
        A.CONFLICT_MERGE,
        A.CONSOLIDATION_MERGE,
        A.CONSOLIDATION_KEEP,
    }
)
QUARANTINE_LIFTED_BY = SETTLE


def quarantine_refusal(action, *, quarantined: bool, by_lead: bool) -> str | None:
    """Why this write may not be made on an entry in quarantine, in words; None when it may (a lead's, or
    any write that approves nothing)."""
    if not quarantined or by_lead or str(action) not in APPROVES_TEXT:
        return None
    return "an injection detector flagged its text (see the card's flags): only a lead approves it"
