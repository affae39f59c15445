"""Submissions that repeat a forgotten lesson: held, and answered as any new candidate is.

A refusal, or any answer that differs, would let an agent token test guesses against a forgotten lesson
(an oracle). So such a submission goes through ingest like any other, at the same cost (a row with its id,
its evidence, its near-duplicate links, the exact and near duplicates its answer names, the reads and
comparisons of conflict detection and the write path's tombstone check, `weigh_*`) but is born
rejected and `held_by` the forget request whose tombstone it matches, and its text is never stored: the
row and its evidence hold the request's marker (the comparisons read the text in memory, `with_text`). No queue, read, search, publish or sweep sees it;
an Event on the entry and the request names the request for the lead. What its agent reads of it (the
answer, GET /api/v1/entries/<id>, which shows no candidate's text) is the candidate it would have been:
selectors.entries.as_answered.

Not mimicked: a held submission opens no conflict (a conflict's reason and its Events on the other
entry quote the text), so its answer's `conflicts` is empty where a fresh one contradicting an entry the
token reads would name one. README's forget section says so."""

from __future__ import annotations

import copy

from curation.rules import admission
from curation.models import Entry, EventAction, ForgetRequest, Status
from curation.selectors.forgets import tombstones_for

from .events import build_event, record_events

HELD_TEXTS = ("trigger", "content")  # become the request's marker
HELD_CLEARED = {"boundary": "", "recheck_when": "", "conditions": [], "embedding": None}
HELD_EVIDENCE_TEXTS = ("excerpt", "task_ref")

HELD_REASON = "held: repeats the lesson forgotten by forget request #{request}"


def answered_status(decision: admission.Decision | None) -> str:
    """The status a new candidate's answer names: pending, or the admission policy's decision as it stands
    (services.admission.policy_decision). The policy is not applied to a held entry; its answer says what it
    would have done."""
    if decision is None:
        return Status.PENDING
    return Status.ACTIVE if decision.approve else Status.REJECTED


def held_fields(fields: dict, request: ForgetRequest) -> dict:
    """A held submission's stored fields: its text replaced by the request's marker, the rest kept."""
    return {**fields, **{name: request.marker for name in HELD_TEXTS}, **HELD_CLEARED}


def held_evidence(evidence: list[dict], request: ForgetRequest) -> list[dict]:
    """Its evidence as stored: kinds, signals and scores kept, the texts replaced by the marker."""
    return [{**e, **{name: request.marker for name in HELD_EVIDENCE_TEXTS if e.get(name)}} for e in evidence]


def with_text(entry: Entry, fields: dict) -> Entry:
    """The held `entry` with the submitted text back, in memory only: what the near-duplicate search
    compares, so that its answer names what a fresh candidate's would."""
    probe = copy.copy(entry)
    for name in (*HELD_TEXTS, *HELD_CLEARED):
        if name in fields:
            setattr(probe, name, fields[name])
    return probe


def weigh_tombstone_check(probes: list[Entry]) -> None:
    """The tombstone check the write path makes of a fresh candidate's insert (a held one, written
    rejected, is not checked there), made of the held ones too and its answer dropped: the same work, so
    the answer's timing tells nothing."""
    if probes:
        tombstones_for([(p.scope, p.trigger, p.content) for p in probes])


def hold(entries: list[Entry], *, answered: dict[int, str], now) -> None:
    """Record, for each held entry, the Event naming its request and the status its answer gave
    (`answered`, by entry id)."""
    if not entries:
        return
    record_events(
        build_event(
            entry,
            actor=None,
            action=EventAction.FORGET_HELD,
            also=(entry.held_by,),
            at=now,
            reason=HELD_REASON.format(request=entry.held_by_id),
            after={"answered": answered.get(entry.pk, Status.PENDING)},
        )
        for entry in entries
    )
