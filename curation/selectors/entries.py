"""Reads about entries: which ones a user may see, and the entry page (its timeline and its supersedes
chain), each in a fixed number of queries whatever the length of the history or of the chain."""

from __future__ import annotations

import copy
import datetime
import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import F

from curation.rules import access, event_deltas, injection, transitions
from curation.rules.lifecycle import SIGNAL_STRENGTH
from curation.models import Conflict, Entry, Event, EventAction, Evidence, QueueReason, SkillSource, Status

from .sql import supersedes_chain_sql

CHAIN_LIMIT = 50
TIMELINE_LIMIT = 100  # the entry page shows the newest items of the history; the export has them all


def visible_entries(user):
    """Every entry the user may see: all of them, or those under the user's scope prefixes. A held
    submission (services.held) is no one's to see: its forget request counts it."""
    return Entry.objects.filter(access.scope_q(access.user_scope_prefixes(user)), held_by__isnull=True)


def visible_entry(user, entry_id) -> Entry:
    """The entry, or Entry.DoesNotExist when it does not exist *or* lies outside the user's scopes."""
    return visible_entries(user).get(pk=entry_id)


def summarise_evidence(entries) -> None:
    """From the prefetched evidence: the strongest supporting signal, and how much evidence is against."""
    for entry in entries:
        supporting = [e.signal for e in entry.evidence.all() if e.polarity == Evidence.Polarity.SUPPORTS]
        entry.evidence_strength = max(supporting, key=SIGNAL_STRENGTH.__getitem__) if supporting else "none"
        entry.contradicting_evidence = sum(
            1 for e in entry.evidence.all() if e.polarity == Evidence.Polarity.CONTRADICTS
        )


# --- the entry page ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineItem:
    at: datetime.datetime
    kind: str  # "event" or "evidence"
    item: Event | Evidence
    changes: tuple = ()  # (field, before, after) for the fields an event changed
    version: int | None = None  # the entry's version a write of it made (the page shows that version)


# Snapshot keys a timeline does not list as changed values: the version, the first approval of a
# two-reviewer scope, which the Event itself says (its action "approved (1 of 2)" and its actor), and the
# first approver a disagreement names.
NOT_SHOWN_AS_CHANGES = frozenset({"version", "first_approval_by", "first_approval_at", "disagreed_with"})


def event_changes(event: Event) -> tuple:
    """(field, old, new) for what the Event changed: the keys of its delta (an older Event's two whole
    snapshots: the keys that differ). An insert's first version is not a change."""
    if event.before is None:
        return ()
    before, after = event.before, event.after or {}
    return tuple(
        (key, before.get(key), value)
        for key, value in after.items()
        if key not in NOT_SHOWN_AS_CHANGES and before.get(key) != value
    )


def writes_entry(event: Event, entry: Entry) -> bool:
    """Is this Event a write of `entry` (its delta is one of the entry's versions), not an Event that only
    names it (evidence added, a forget filed, a skill nominated)?"""
    return event.entry_id == entry.pk and event.action in transitions.TRANSITIONS


def entry_versions(user, entry: Entry) -> list[tuple[int | None, dict]]:
    """Every version of the entry, oldest first, rebuilt from its Events' deltas (rules/event_deltas.fold)
    as the user reads them (events_as_read): one query for the writes, and what the masking reads."""
    writes = (
        Event.objects.filter(entry=entry, action__in=list(transitions.TRANSITIONS))
        .order_by(F("entry_version").asc(nulls_first=True), "id")
        .only("id", "entry_id", "conflict_id", "action", "reason", "before", "after", "entry_version")
    )
    events = events_as_read(access.user_scope_prefixes(user), writes)
    return event_deltas.fold((e.entry_version, e.after) for e in events)


def entry_version(user, entry: Entry, version: int) -> dict | None:
    """The entry as it was at `version` (None: no write made that version)."""
    return next((state for number, state in entry_versions(user, entry) if number == version), None)


# What an Event about a conflict says of the other entry: its id, or the contradiction read from its text.
_PARTNER_KEYS = ("conflict", "with", "superseded", "reason")


def _conflicts_beyond(prefixes: list[str] | None, events: list[Event]) -> set[int]:
    """The conflicts these Events are about whose other entry lies outside `prefixes` (one query, none
    when nothing is out of reach)."""
    ids = {e.conflict_id for e in events if e.conflict_id}
    if prefixes is None or not ids:
        return set()
    both_inside = access.scope_q(prefixes, "entry_a__scope") & access.scope_q(prefixes, "entry_b__scope")
    return set(Conflict.objects.filter(pk__in=ids).exclude(both_inside).values_list("pk", flat=True))


def _without_partner(event: Event) -> Event:
    """The Event as a reader who may not see the conflict's other entry reads it: what happened to this
    entry, never who it conflicted with or why (the reason quotes the other entry's text)."""
    masked = copy.copy(event)
    masked.reason = "about a conflict with an entry outside your scopes"
    masked.before, masked.after = (
        {k: v for k, v in (part or {}).items() if k not in _PARTNER_KEYS} or None
        for part in (event.before, event.after)
    )
    return masked


# An entry named in an Event's words ("merged into #12") or its snapshot's links; not a request's, a
# conflict's, a proposal's or a skill's number, which the same words use.
_ENTRY_NUMBER = re.compile(r"(?<!request )(?<!conflict )(?<!consolidation )(?<!proposal )(?<!skill )#(\d+)")
_ENTRY_LINKS = ("merged_into", "merged_from", "superseded_by", "supersedes", "superseded")
ELSEWHERE = "an entry outside your scopes"


def _linked_ids(event: Event) -> set[int]:
    ids = {int(n) for n in _ENTRY_NUMBER.findall(event.reason or "")}
    for part in (event.before or {}, event.after or {}):
        for key in _ENTRY_LINKS:
            value = part.get(key)
            ids.update(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, int))
    return ids


def _entries_beyond(prefixes: list[str] | None, events: list[Event]) -> set[int]:
    """The entries these Events name that lie outside `prefixes` (one query, none for a reader of every
    scope or when no Event names another entry)."""
    ids = set().union(*(_linked_ids(e) for e in events)) if events else set()
    if prefixes is None or not ids:
        return set()
    return ids - set(
        Entry.objects.filter(pk__in=ids).filter(access.scope_q(prefixes, "scope")).values_list("pk", flat=True)
    )


def _without_entries(event: Event, beyond: set[int]) -> Event:
    """The Event with the entries outside the reader's scopes unnamed: "#12" becomes a neutral word, and a
    link to one is left out of the snapshot, so an id in another team's scope is never read here."""
    if not _linked_ids(event) & beyond:
        return event
    masked = copy.copy(event)
    masked.reason = _ENTRY_NUMBER.sub(
        lambda m: ELSEWHERE if int(m.group(1)) in beyond else m.group(0), event.reason or ""
    )

    def unnamed(value):
        if isinstance(value, list):
            return [v for v in value if v not in beyond]
        return None if value in beyond else value

    masked.before, masked.after = (
        {k: unnamed(v) if k in _ENTRY_LINKS else v for k, v in part.items()} if part else part
        for part in (event.before, event.after)
    )
    return masked


def events_as_read(prefixes: list[str] | None, events) -> list[Event]:
    """Events of an entry's history as a reader limited to `prefixes` (None: every scope) may read them:
    those about a conflict with an entry beyond them keep only what they did to this entry, and an entry
    beyond them named in any other is unnamed (two queries at most, none for a reader of every scope)."""
    events = list(events)
    beyond = _conflicts_beyond(prefixes, events)
    events = [_without_partner(e) if e.conflict_id in beyond else e for e in events]
    elsewhere = _entries_beyond(prefixes, events)
    return [_without_entries(e, elsewhere) for e in events] if elsewhere else events


def entry_events(entry: Entry, *, prefixes: list[str] | None, limit: int | None = None) -> list[Event]:
    """The entry's Events and those of the skills it is a source of within `prefixes` (None: every scope;
    a skill beyond them stays unknown), newest first, as a reader limited to `prefixes` reads them
    (events_as_read): all of them, or the newest `limit`. A skill's decisions and trials are about the
    skill, and they explain why the entry is withheld from agents. Each read is on its own history index
    (an OR of the two links would make PostgreSQL read the whole Event table): at most 4 queries."""
    newest_first = ("-created_at", "-id")
    own = Event.objects.filter(entry=entry).order_by(*newest_first)
    events = list(own[:limit] if limit is not None else own)
    skills = list(
        SkillSource.objects.filter(entry=entry)
        .filter(access.scope_q(prefixes, "proposal__scope"))
        .values_list("proposal_id", flat=True)
    )
    if skills:
        theirs = Event.objects.filter(skill_id__in=skills).exclude(entry=entry).order_by(*newest_first)
        events += list(theirs[:limit] if limit is not None else theirs)
        events.sort(key=lambda e: (e.created_at, e.pk), reverse=True)
    return events_as_read(prefixes, events[:limit] if limit is not None else events)


def entry_events_for_token(token, entry: Entry, *, limit: int) -> list[Event]:
    """The entry's newest `limit` Events, oldest first, as the agent token reads them (the API's entry
    detail); of a held submission, those any new candidate has (not the hold)."""
    events = entry_events(entry, prefixes=list(token.scopes), limit=limit)
    return list(reversed([_without_findings(e) for e in events if e.action != EventAction.FORGET_HELD]))


_FINDING_NOTE = re.compile(r"(?:^|;\s*)possible injection:[^;]*")


def _without_findings(event: Event) -> Event:
    """The Event as an agent reads it: without the injection detector's findings in its reason (a submission's,
    a quarantine's). Which rule caught a text would be an oracle to tune it against; the placeholder an agent
    reads instead of a withheld text says enough."""
    if "possible injection:" not in (event.reason or ""):
        return event
    shown = copy.copy(event)
    shown.reason = _FINDING_NOTE.sub("", event.reason).strip("; ") or "withheld for review"
    return shown


def entry_evidence(entry: Entry, *, limit: int) -> list[Evidence]:
    """The entry's evidence in the order it was observed, the first `limit` pieces."""
    return list(entry.evidence.order_by("observed_at", "id")[:limit])


UNCURATED = (Status.PENDING, Status.REJECTED)  # what no person has made memory: agents read no text of it
WITHHELD_TEXT = {"trigger": "", "content": "", "conditions": [], "boundary": "", "recheck_when": ""}


def entry_for_token(token, entry_id) -> Entry | None:
    """The entry as an agent token reads it, if its scopes cover it; None as for an unknown one. Agents
    read curated memory: of a candidate (pending or rejected) its state, not its text, which is also
    what keeps a held submission (services.held), whose text was never stored, like any other."""
    entry = Entry.objects.filter(pk=entry_id).first()
    if entry is None or not access.token_covers(token, entry.scope):
        return None
    shown = as_answered(entry)
    if text_withheld(shown):
        shown = copy.copy(shown) if shown is entry else shown
        for name, value in WITHHELD_TEXT.items():
            setattr(shown, name, value)
        if shown.quarantined and shown.status not in UNCURATED:  # a candidate's says nothing of a finding
            shown.trigger = shown.content = injection.withheld_text(entry.pk)
    return shown


def text_withheld(entry: Entry) -> bool:
    """Does an agent read this entry's text? Not of a candidate, nor of a held submission whatever its answer
    said, nor of an entry in quarantine as a possible injection."""
    return entry.status in UNCURATED or entry.held_by_id is not None or entry.quarantined


def entry_evidence_for_token(entry: Entry, *, limit: int) -> list[Evidence]:
    """entry_evidence as an agent token reads it: of a candidate, the evidence without its texts; a piece the
    injection detector marked, its placeholder instead of its texts."""
    evidence = entry_evidence(entry, limit=limit)
    return [evidence_as_read(entry, piece) for piece in evidence]


def evidence_as_read(entry: Entry, piece: Evidence) -> Evidence:
    """A piece of the entry's evidence as an agent token reads it: without its texts when the entry's is withheld,
    the placeholder instead of them when the injection detector marked the piece."""
    if text_withheld(entry):
        piece.excerpt, piece.task_ref = "", ""
    elif piece.injection_found:
        piece.excerpt, piece.task_ref = injection.withheld_text(entry.pk), ""
    return piece


def evidence_as_sent(entry: Entry, piece: Evidence) -> Evidence:
    """A piece as the answer to the agent that just sent it: what any piece's answer is (without its texts when
    the entry's is withheld, else the texts it sent, redacted), marked or not: the answer is no oracle."""
    if text_withheld(entry):
        piece.excerpt, piece.task_ref = "", ""
    return piece


def as_answered(entry: Entry, status: str | None = None) -> Entry:
    """What an agent reads of an entry: the entry itself, or for a held submission (services.held) the
    candidate its answer said it became, `status` (by default read from the hold's Event): pending in the
    queue, or decided at once by the scope's admission policy. Anything else would tell the agent that
    what it sent repeats a forgotten lesson."""
    if entry.held_by_id is None:
        return entry
    if status is None:
        after = (
            Event.objects.filter(entry=entry, action=EventAction.FORGET_HELD).values_list("after", flat=True).first()
        ) or {}
        status = after.get("answered", Status.PENDING)
    face = copy.copy(entry)
    face.status = status
    pending = status == Status.PENDING
    face.queued_at = entry.created_at if pending else None
    face.queue_reason = QueueReason.NEW if pending else ""
    if not pending:  # the policy's decision was written as the entry's second version
        face.version = entry.version + 1
        face.last_verified_at = entry.created_at if status == Status.ACTIVE else entry.last_verified_at
    return face


def entry_timeline(user, entry: Entry, *, limit: int | None = None) -> list[TimelineItem]:
    """entry_events as the user reads them, and the entry's Evidence, in the order they were recorded:
    all of them, or the newest `limit` items."""
    evidence = Evidence.objects.filter(entry=entry).order_by("-created_at", "-id")
    if limit is not None:
        evidence = evidence[:limit]
    events = entry_events(entry, prefixes=access.user_scope_prefixes(user), limit=limit)
    items = [
        TimelineItem(e.created_at, "event", e, event_changes(e), e.entry_version if writes_entry(e, entry) else None)
        for e in events
    ]
    items += [TimelineItem(e.created_at, "evidence", e) for e in evidence]
    # Evidence first at equal times: it arrived with (and caused) the event beside it.
    items.sort(key=lambda t: (t.at, 0 if t.kind == "evidence" else 1, t.item.pk))
    return items[-limit:] if limit is not None else items


@dataclass(frozen=True)
class TimelinePage:
    items: list[TimelineItem]
    complete: bool  # False: older items exist and are not shown


def entry_page_timeline(user, entry: Entry, *, show_all: bool = False, limit: int = TIMELINE_LIMIT) -> TimelinePage:
    """What the entry page shows of the history: the newest `limit` items, unless all are asked for."""
    if show_all:
        return TimelinePage(entry_timeline(user, entry), complete=True)
    items = entry_timeline(user, entry, limit=limit + 1)
    return TimelinePage(items[-limit:], complete=len(items) <= limit)


def supersedes_chain(user, entry: Entry) -> tuple[list[Entry], list[Entry]]:
    """(older entries this one replaces, newest last; newer entries that replace it), within the user's
    scopes: the walk stops at an entry outside them. At most CHAIN_LIMIT steps each way, in 2 queries
    (the chain's ids in one recursive query, then the visible entries among them)."""
    with connection.cursor() as cursor:
        cursor.execute(supersedes_chain_sql(), {"id": entry.pk, "limit": CHAIN_LIMIT})
        links = cursor.fetchall()
    replaces = {pk: supersedes_id for direction, pk, supersedes_id in links if direction == "older"}
    replaced_by: dict[int, list[int]] = {}
    for direction, pk, supersedes_id in links:
        if direction == "newer":
            replaced_by.setdefault(supersedes_id, []).append(pk)
    visible = visible_entries(user).in_bulk([pk for _, pk, _ in links])

    older: list[Entry] = []
    current = entry.supersedes_id
    while current in visible and len(older) < CHAIN_LIMIT:
        older.insert(0, visible[current])
        current = replaces.get(current)
    newer: list[Entry] = []
    frontier = [entry.pk]
    while frontier and len(newer) < CHAIN_LIMIT:
        step = sorted(pk for parent in frontier for pk in replaced_by.get(parent, ()) if pk in visible)[:CHAIN_LIMIT]
        newer += [visible[pk] for pk in step]
        frontier = step
    return older, newer


def entry_history(user, entry: Entry) -> dict:
    """The entry page as data: what the JSON export returns."""
    older, newer = supersedes_chain(user, entry)

    def stamp(value):
        return value.isoformat() if value else None

    return {
        "entry": {
            "id": entry.pk,
            **entry.snapshot(),
            "last_verified_at": stamp(entry.last_verified_at),
            "hit_count": entry.hit_count,
            "retrieval_count": entry.retrieval_count,
            "utility_sum": entry.utility_sum,
            "utility_n": entry.utility_n,
            "last_retrieved_at": stamp(entry.last_retrieved_at),
            "source_task": entry.source_task,
            "created_by": entry.created_by_label,
            "created_at": stamp(entry.created_at),
            "updated_at": stamp(entry.updated_at),
            "supersedes": entry.supersedes_id,
        },
        "supersedes_chain": {"older": [e.pk for e in older], "newer": [e.pk for e in newer]},
        # Each Event stores what its write changed (before: the old values, after: the new); every version
        # whole, rebuilt from them.
        "versions": [state for _, state in entry_versions(user, entry)],
        "timeline": [
            {
                "type": "event",
                "at": stamp(t.at),
                "actor": t.item.actor_label,
                "action": t.item.action,
                "reason": t.item.reason,
                "version": t.version,
                "before": t.item.before,
                "after": t.item.after,
                "request_id": t.item.request_id,
            }
            if t.kind == "event"
            else {
                "type": "evidence",
                "at": stamp(t.at),
                "recorded_by": t.item.recorded_by_label,
                "kind": t.item.kind,
                "signal": t.item.signal,
                "polarity": t.item.polarity,
                "excerpt": t.item.excerpt,
                "task_ref": t.item.task_ref,
                "observed_at": stamp(t.item.observed_at),
            }
            for t in entry_timeline(user, entry)
        ],
    }
