"""The one way an entry's state or content is written, and its Event.

Every change, from a reviewer's decision, a resolution, a sweep, an agent's feedback or the demo, goes
through one of these, inside the caller's transaction, on rows the caller has locked and checked:

- `write_entry(entry, changes, *, action, at, ...)`: apply `changes` to one entry with a conditional
  UPDATE on (pk, expected version), bump the version, stamp `updated_at`, and write its Event with what
  changed between the before and after `Entry.snapshot()` (rules/event_deltas.delta: the old and new
  values of those fields; the version is the Event's entry_version). Raises StaleDecision, with the
  Events since that version, when another writer got there first. Returns the Event.
- `insert_entry` / `insert_entries`: a new entry (a candidate, a merged entry) and its Event (its whole
  first version).
- `write_entries(rows, ...)`: the bulk twin for sweeps and for an agent's outcome, which changes every
  entry the task used. Its rows are plain dicts of the columns read under the lock (`.values()`, or
  `entry_row` of a loaded entry): a sweep's batch is thousands of rows, and no model need be built for
  each to archive it. One UPDATE per batch for every row (values the same for all, possibly SQL
  expressions; values per row), and with it one INSERT ... SELECT of one Event per row, built by the
  database from the row and the UPDATE's own expressions (event_sql.py): the same delta of the snapshots,
  all created at the caller's time. On PostgreSQL the two are one statement (the UPDATE reads each row
  once, and its RETURNING gives the Events the row's old and new values); on SQLite the INSERT runs just
  before the UPDATE. Raises ConcurrentChange, having
  written nothing, when a row is no longer in the expected status or its version moved.

The transition table (curation/rules/transitions.py) is looked up on every one of these: a write the table does not
allow from the entry's status, or by this actor (a person needs the row's permission and reach over the
entry's scope; a sweep, a policy or an agent makes only the rows open to them), is refused (InvalidTransition,
PermissionDenied) before anything is written, and the row's values are applied. A write that makes a pending
or new entry active is the one activation (its values, and the scope's two-reviewer rule: two different
people approved it, or a lead settled a disagreement), whichever decision it is.

Injection quarantine: every one of these that writes an entry's text (an insert, or a change of a text field)
runs the injection detector (rules/injection.py) over the text it leaves: what it finds is added to the
entry's flags (the card shows them), the entry is quarantined and stamped with the detector's version, and
the Event's reason says so. Then the gate (transitions.quarantine_refusal): a decision that approves the
text of an entry in quarantine is a lead's, and a lead's lifts the quarantine. The detector runs here and
not in each service because here is the one place every text write passes (a submission, an edit, a
conflict's split or merge, a consolidation, an undo): a new writer cannot forget it, and the check sees the
text as it will be stored (after redaction), which is what agents would read.

Forgotten lessons: every one of these refuses (`Forgotten`, naming the forget request, never the text) a
write that leaves an entry pending or active and either sets its lesson (scope, trigger, content), makes it
live or approves it, when a tombstone matches the lesson. So a paraphrase pending since before the forget,
an edit, a merge, a split, a consolidation, a revival or an undo cannot write a forgotten lesson back. The
forget's own write and writes to a status agents never read (a held submission is rejected) pass.

Near-duplicate band keys (`EntryBand`, rules/minhash): a lookup reads only active entries, so an entry has
keys from the write that makes it active (an insert as active, an approval, a revival, an undo), and every
one of these that writes its text or scope replaces them (none written unless it ends active), so the index
is never behind an active entry's text and no key outlives the text it came from (a forget's marker text,
retired, has none). A pending candidate, most of what ingest writes, gets none; an archived entry keeps
its keys (the daily run archives thousands without touching them) until its text changes or it is active
again, when they are written anew.

`updated_at`: a decision stamps its `at` (a demo replayed as of a past moment reads as it happened then);
a sweep stamps the wall clock, because the detecting sweeps read "what changed since my last run" by
it, and a sweep replayed as of the past must still be seen by the next run.

Confidence is derived where it is read (Entry.confidence_at), so no write stores it. What it is derived
from is kept here, on every path: a write that moves an entry out of the active set stamps
`decay_stopped_at` (its confidence stays as it was then), one that makes it active clears it, and the
decay index (`decay_key`, `decay_rate`) is recomputed from the base and the verification.

Writes of an entry that are not state, and so bump no version and write no Event, are named here too,
so that "no update() of an entry anywhere else" stays true and checkable:
- `rewrite_decay_keys`: the decay sweep recomputes keys written under other decay settings.
- `stamp_scanned`: the injection sweep found nothing new in an entry's text with the current detector.
- `count_retrieval` / `insert_counted_retrieval` / `insert_counted_retrievals`: the usage counters
  `retrieval_count` and `last_retrieved_at`, on the path of every agent read (the last for a batch of
  reads buffered in Redis, services.retrieval_buffer).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Callable

import psycopg
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, connection, transaction
from django.db.models import Expression, F, Q, QuerySet
from django.db.models.sql import UpdateQuery

from curation.rules import access, clock, event_deltas, injection, lifecycle, minhash, scope_policies, transitions
from curation.models import (
    CONFIDENCE_FIELDS,
    DERIVED_CONFIDENCE,
    Entry,
    EntryBand,
    Event,
    EventAction,
    Retrieval,
    RetrievedEntry,
    Status,
    snapshot_value,
)
from curation.rules.event_deltas import STATE_KEYS
from curation.rules.similarity import fingerprint

from curation.selectors import confidence, sql  # confidence: the SQL twin of lifecycle.decay_key
from curation.selectors.scope_policies import in_force
from curation.selectors.forgets import tombstones_for
from curation.selectors.sql import IdIn

from . import event_sql
from .errors import ConcurrentChange, Forgotten, InvalidTransition, StaleDecision
from .rows import insert_rows
from .events import actor_label_for, record_event

# What write_entry writes back: everything a decision may change. Not the usage counters
# (retrieval_count, last_retrieved_at), which agents' reads bump without a version, nor what an entry
# is born with and keeps (created_*); its source task too, except that a forget purges it.
WRITTEN_COLUMNS = (
    "status",
    "queued_at",
    "queue_reason",
    "kind",
    "scope",
    "trigger",
    "content",
    "boundary",
    "conditions",
    "recheck_when",
    "review_by",
    "fingerprint",
    "signal",
    "trust",
    "base_confidence",
    "last_verified_at",
    "decay_stopped_at",
    "decay_key",
    "decay_rate",
    "archived_at",
    "archive_reason",
    "first_approval_by_id",
    "first_approval_at",
    "supersedes_id",
    "flags",
    "quarantined",
    "scanned_with",
    "hit_count",
    "utility_sum",
    "utility_n",
    "source_task",
    "embedding",
    "version",
    "updated_at",
)


# The statuses whose lessons agents read or reviewers approve: a forgotten lesson is never written into them.
LIVE = (Status.PENDING, Status.ACTIVE)
# What, written, makes a lesson (again): its text and scope, its status, an approval (a first one included).
LESSON_COLUMNS = frozenset({"scope", "trigger", "content", "status", "first_approval_by", "first_approval_by_id"})
_ACTIVATING = frozenset(str(a) for a in EventAction.activating())  # by value: callers pass a member or its string


def checks_forgotten(status: str, columns, action) -> bool:
    """Is a write that leaves an entry in `status`, setting `columns`, by `action`, checked against the
    tombstones? Every live result that sets the lesson, makes it live or approves it (an activating action:
    a kept side of a conflict too), except the forget's own write."""
    if status not in LIVE or str(action) == EventAction.FORGOTTEN:
        return False
    return bool(LESSON_COLUMNS.intersection(columns)) or str(action) in _ACTIVATING


def refuse_forgotten_lessons(lessons: list[tuple[str, str, str]]) -> None:
    """Forgotten for the first of these (scope, trigger, content) a tombstone matches: one query, none
    computed when no tombstone lies in an overlapping scope."""
    for stone in tombstones_for(lessons) if lessons else ():
        if stone is not None:
            raise Forgotten(stone.request_id, stone.forgotten_on)


def _label(action) -> str:
    return EventAction(str(action)).label


_TEXT_COLUMNS = injection.SCANNED_FIELDS


def screen(current: Callable[[str], object], changes: dict, action, actor, *, pk) -> tuple[dict, list[str]]:
    """The write's `changes` after the injection detector read the text they leave, when they change it (flags
    added, quarantined, the detector's version stamped), and after the quarantine's gate: InvalidTransition
    for a decision only a lead makes on an entry in quarantine; a lead's lifts it. `current(column)`: the
    entry's value before the write. Answers the changes and the new findings in words (for the Event)."""
    notes: list[str] = []
    if any(column in changes and changes[column] != current(column) for column in _TEXT_COLUMNS):
        findings = injection.scan_fields({c: changes.get(c, current(c)) for c in _TEXT_COLUMNS})
        changes = {**changes, "scanned_with": injection.DETECTOR_VERSION}
        if findings:
            flags = list(changes.get("flags", current("flags")) or [])
            new = [f.as_flag() for f in findings if f.as_flag() not in flags]
            changes.update(flags=[*flags, *new], quarantined=True)
            notes = [flag["detail"] for flag in new] or ["the injection flags it carries, again"]
    quarantined = changes.get("quarantined", current("quarantined"))
    by_lead = actor is not None and actor.has_perm(transitions.QUARANTINE_LIFTED_BY)
    if refusal := transitions.quarantine_refusal(action, quarantined=quarantined, by_lead=by_lead):
        raise InvalidTransition(f"Entry #{pk} cannot be {_label(action)}: {refusal}.")
    if quarantined and by_lead and str(action) in transitions.APPROVES_TEXT:
        changes = {**changes, "quarantined": False}
    return changes, notes


def _noted(reason: str, notes: list[str]) -> str:
    if not notes:
        return reason
    found = "possible injection: " + ", ".join(notes)
    return f"{reason}; {found}" if reason else found


def refuse_actor(action, actor, scopes) -> None:
    """PermissionDenied unless the table lets this actor make `action` on entries of `scopes` (a person: with
    the row's permission and reach over each scope; no actor: a sweep, a policy or an agent)."""
    row = transitions.transition(action)
    if actor is None:
        if transitions.SYSTEM not in row.by:
            raise PermissionDenied(f"\"{_label(action)}\" is a person's decision.")
        return
    if transitions.PERSON not in row.by:
        raise PermissionDenied(f"\"{_label(action)}\" is made by the system, not by a person.")
    if row.permission and not actor.has_perm(row.permission):
        raise PermissionDenied(f"Your role does not allow \"{_label(action)}\".")
    if not all(access.user_can_see_scope(actor, scope) for scope in scopes if scope):
        raise PermissionDenied("That entry lies outside your scopes.")


def planned_values(
    action,
    *,
    pk,
    start: str,
    changes: dict,
    at,
    approvals_required=None,
    actor_id=None,
    first_approval_by=None,
    queue_reason: str = "",
) -> dict:
    """The columns a write of `action` sets on an entry in `start` (transitions.NEW for an insert): the table's
    values with the caller's changes, the activation's when it makes a pending entry active; InvalidTransition,
    in words, when the table does not allow it. `approvals_required()` (a callable: read only when needed)
    answers the scope's review rule."""
    row = transitions.transition(action)
    for column in row.requires:
        if column not in changes and f"{column}_id" not in changes:
            raise ValueError(f"{action}: the caller gives {column}")
    values = row.values(changes, at)
    ends = row.ends - {transitions.SAME}
    if "status" not in values and len(ends) == 1 and transitions.SAME not in row.ends:
        values["status"] = next(iter(ends))
    end = values.get("status", start)
    if refusal := transitions.refusal(action, start, end):
        raise InvalidTransition(f"Entry #{pk} cannot be {_label(action)}: {refusal}.")
    if transitions.activates_pending(start, end):
        if refusal := transitions.two_reviewer_refusal(
            approvals_required(), first_approval_by=first_approval_by, actor_id=actor_id, queue_reason=queue_reason
        ):
            raise InvalidTransition(f"Entry #{pk} cannot be made active: {refusal}.")
        values = {**{c: at for c in transitions.ACTIVATION_STAMPS}, **values, **transitions.ACTIVATION}
    return values


def changes_since(entry: Entry, version: int) -> QuerySet:
    """The Events of the entry after `version`: what a stale decision is told about."""
    return Event.objects.filter(entry=entry, entry_version__gt=version).order_by("created_at", "id")


def write_entry(
    entry: Entry,
    changes: dict,
    *,
    action: EventAction,
    at,
    expected_version: int | None = None,
    actor=None,
    actor_label: str = "",
    reason: str = "",
    after_extra: dict | None = None,
    also=(),
) -> Event:
    """Apply `changes` (field -> value) to `entry` and write them with its Event. `expected_version` is
    the version the decision was made on (by default the version the entry was loaded at)."""
    expected = entry.version if expected_version is None else expected_version
    refuse_actor(action, actor, (entry.scope, changes.get("scope")))
    changes = planned_values(
        action,
        pk=entry.pk,
        start=entry.status,
        changes=changes,
        at=at,
        actor_id=getattr(actor, "pk", None),
        approvals_required=lambda: scope_policies.approvals_required(
            changes.get("scope", entry.scope), in_force(scope_policies.REVIEW)
        ),
        first_approval_by=entry.first_approval_by_id,
        queue_reason=entry.queue_reason,
    )
    changes, notes = screen(lambda column: getattr(entry, column), changes, action, actor, pk=entry.pk)
    if "trigger" in changes or "content" in changes:
        # The exact-duplicate key follows the text it is a hash of (a forget's marker too: a plain hash of the
        # forgotten text left behind would confirm a guess of it, which its keyed tombstone never does).
        changes["fingerprint"] = fingerprint(
            changes.get("trigger", entry.trigger), changes.get("content", entry.content)
        )
    if checks_forgotten(changes.get("status", entry.status), changes, action):
        refuse_forgotten_lessons([tuple(changes.get(f, getattr(entry, f)) for f in ("scope", "trigger", "content"))])
    before = entry.snapshot(at)
    was_active = entry.status == Status.ACTIVE
    for field, value in changes.items():
        setattr(entry, field, value)
    if "decay_stopped_at" not in changes:  # an undo puts back what it was
        entry.decay_stopped_at = _decay_stop(was_active, entry.status, entry.decay_stopped_at, at)
    entry.refresh_decay_key()
    entry.version = expected + 1
    entry.updated_at = at
    written = Entry.objects.filter(pk=entry.pk, version=expected).update(
        **{column: getattr(entry, column) for column in WRITTEN_COLUMNS}
    )
    if not written:  # a writer that did not lock the row (possible on SQLite) got there first
        raise StaleDecision(entry, changes_since(entry, expected))
    if _BANDED_COLUMNS.intersection(changes) or (entry.status == Status.ACTIVE and not was_active):
        _write_bands([entry], replace=True)
    old, new = event_deltas.delta(before, {**entry.snapshot(at), **(after_extra or {})})
    return record_event(
        entry,
        actor=actor,
        actor_label=actor_label,
        action=action,
        reason=_noted(reason, notes),
        before=old,
        after=new,
        at=at,
        also=also,
    )


# An insert's decision made once the detector has read the text (an admission policy's, which approves no
# text in quarantine): (the entry, the reason given) -> (the action, its actor's label, its Event's reason).
Decide = Callable[[Entry, str], tuple[EventAction, str, str]]


def insert_entry(
    entry: Entry,
    *,
    action: EventAction,
    at,
    actor=None,
    actor_label: str = "",
    reason: str = "",
    after_extra: dict | None = None,
    also=(),
    decide: Decide | None = None,
) -> Event:
    """Insert a new entry (its version is 1) with the Event that made it. `decide`: the action, its actor's
    label and the reason, decided on the entry once its text is screened (an admission policy's decision
    at ingest, so that a candidate it approves is written once); `action`, `actor_label`, `reason` otherwise."""
    notes = _screen_new_text(entry)
    if decide is not None:
        action, actor_label, reason = decide(entry, reason)
    notes = _plan_insert(entry, action, at, actor, notes=notes)
    if checks_forgotten(entry.status, ("status",), action):
        refuse_forgotten_lessons([(entry.scope, entry.trigger, entry.content)])
    entry.save(force_insert=True)
    _write_bands([entry])
    return record_event(
        entry,
        actor=actor,
        actor_label=actor_label,
        action=action,
        reason=_noted(reason, notes),
        after=event_deltas.delta(None, {**entry.snapshot(at), **(after_extra or {})})[1],
        at=at,
        also=also,
    )


def insert_entries(
    new: list[tuple[Entry, str]], *, action: EventAction, at, actor_label: str, decide: Decide | None = None
) -> int:
    """insert_entry for many (entry, its Event's reason), each decided by `decide` when given: one insert for
    the entries (rows.insert_rows: one JSON document on PostgreSQL), one for the band keys of those inserted
    active, one INSERT ... SELECT for their Events (event_sql). Answers the Events written."""
    rules = None
    noted = []
    for entry, reason in new:
        notes = _screen_new_text(entry)
        made_by, label = action, actor_label
        if decide is not None:
            made_by, label, reason = decide(entry, reason)
        if entry.status == Status.ACTIVE and rules is None:
            rules = in_force(scope_policies.REVIEW)
        notes = _plan_insert(entry, made_by, at, None, rules=rules, notes=notes)
        noted.append((entry, made_by, label, _noted(reason, notes)))
    refuse_forgotten_lessons(
        [
            (e.scope, e.trigger, e.content)
            for e, made_by, _, _ in noted
            if checks_forgotten(e.status, ("status",), made_by)
        ]
    )
    for entry, *_ in noted:
        entry.refresh_decay_key()  # an insert of many does not call save()
    insert_rows([entry for entry, *_ in noted])
    _write_bands([entry for entry, *_ in noted])
    # The Events set-based, from the rows just inserted: each one's whole first version, as insert_entry's.
    return event_sql.insert_first_events(noted, at=at)


# The columns the band keys are derived from (the text) or carry (the scope).
_BANDED_COLUMNS = frozenset({"trigger", "content", "scope"})


def _write_bands(entries: list[Entry], *, replace: bool = False) -> None:
    """The near-duplicate band keys of the active entries' stored text, in one statement (`replace`: the
    entries' old keys removed first, active or not). None for an entry that is not active: no lookup reads it."""
    if replace:
        EntryBand.objects.filter(entry_id__in=[e.pk for e in entries]).delete()
    bands = minhash.bands_for(connection.vendor)
    keyed = [
        (entry, keys)
        for entry in entries
        if entry.status == Status.ACTIVE
        for keys in (minhash.band_keys(f"{entry.trigger} {entry.content}", bands),)
        if keys
    ]
    if not keyed:
        return
    table = EntryBand._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # An entry's id and scope once and all the keys in one array (each a literal: sql.pg_array), `bands`
            # keys an entry: a batch's 24,000 rows built by the database, not item by item here.
            cursor.execute(
                f"INSERT INTO {table} (entry_id, scope, band) "
                "SELECT e.id, e.scope, k.band "
                "FROM unnest(CAST(%s AS bigint[]), CAST(%s AS text[])) WITH ORDINALITY AS e(id, scope, i), "
                "LATERAL unnest((CAST(%s AS bigint[]))[(e.i - 1) * %s + 1 : e.i * %s]) AS k(band)",
                [
                    "{" + ",".join(str(entry.pk) for entry, _ in keyed) + "}",
                    sql.pg_array(entry.scope for entry, _ in keyed),
                    "{" + ",".join(str(key) for _, keys in keyed for key in keys) + "}",
                    bands,
                    bands,
                ],
            )
        else:
            rows = [(entry.pk, entry.scope, key) for entry, keys in keyed for key in keys]
            cursor.executemany(f"INSERT INTO {table} (entry_id, scope, band) VALUES (%s, %s, %s)", rows)


def _screen_new_text(entry: Entry) -> list[str]:
    """The injection detector over a new entry's text, before anything decides on it: its findings added to
    the entry's flags, the entry quarantined, the detector's version stamped. Answers the findings in words."""
    text = {column: getattr(entry, column) for column in _TEXT_COLUMNS}
    values, notes = screen(
        lambda column: None if column in text else getattr(entry, column), text, EventAction.SUBMIT, None, pk="(new)"
    )
    for column, value in values.items():
        setattr(entry, column, value)
    return notes


def _plan_insert(entry: Entry, action, at, actor, rules=None, notes: list[str] | None = None) -> list[str]:
    """The injection detector's reading of the text (unless the caller had it read: `notes`), then the
    table's check of the insert (from NEW to the entry's status) and the quarantine's gate, their values set
    on the entry; answers the detector's new findings in words."""
    if notes is None:
        notes = _screen_new_text(entry)
    refuse_actor(action, actor, (entry.scope,))
    values = planned_values(
        action,
        pk="(new)",
        start=transitions.NEW,
        changes={"status": entry.status},
        at=at,
        approvals_required=lambda: scope_policies.approvals_required(
            entry.scope, in_force(scope_policies.REVIEW) if rules is None else rules
        ),
        actor_id=getattr(actor, "pk", None),
        first_approval_by=entry.first_approval_by_id,
        queue_reason=entry.queue_reason,
    )
    values, _ = screen(lambda column: getattr(entry, column), values, action, actor, pk="(new)")  # the gate
    for column, value in values.items():
        if column in transitions.ACTIVATION_STAMPS and getattr(entry, column) is not None:
            continue  # an insert carries its own verification (a merge's: now)
        setattr(entry, column, value)
    return notes


def write_entries(
    rows: list[dict],
    *,
    expected_status: str | None,
    action: EventAction,
    reason_of: Callable[[dict], str],
    actor_label: str,
    at,
    request_id: str | None = None,
    values: dict | None = None,
    row_values: dict[int, dict] | None = None,
    updated_at=None,
    savepoint: bool = True,
) -> int:
    """The bulk twin of write_entry, for a batch of rows the caller has locked: each a dict of columns by
    their attribute name (`.values()`, `entry_row`), with at least the id and the version it read (what the
    checks need is read here in one query, unless the rows carry it: ROW_COLUMNS; the Events' values are
    read by the database, event_sql.py).

    `expected_status`: the status every row must still be in (None: any; an outcome counts on an entry
    archived since the task retrieved it). `updated_at`: the stamp of the rows, by default the wall clock
    (a sweep's); a decision passes its `at`, as write_entry stamps it.

    `values`: column -> value or SQL expression, the same for every row (archive: the status).
    `row_values`: {pk: {column: value}} for what differs per row (revive: the base confidence and the
    verification time). The base and the verification are plain values (the decay index is computed from
    them here). `reason_of(row)` reads the caller's row, with whatever it annotated. Answers the rows written.

    `savepoint=False`: the caller's transaction is the batch's own and ends with it, so a ConcurrentChange
    rolls it back whole and no savepoint is needed (a sweep's batch: two round trips less)."""
    if not rows:
        return 0
    ids = [r["id"] for r in rows]
    with transaction.atomic(savepoint=savepoint):
        if any(column not in rows[0] for column in ROW_COLUMNS):
            current = {r["id"]: r for r in Entry.objects.filter(IdIn(ids)).values(*ROW_COLUMNS)}
        else:
            current = {r["id"]: r for r in rows}  # read only: what changes a row's values copies it first
        if expected_status is not None and (moved := sum(r["status"] != expected_status for r in current.values())):
            raise ConcurrentChange(f"{actor_label}: {moved} of {len(ids)} rows changed under the sweep")
        values, row_values = _planned_rows(current, action, values or {}, row_values or {}, at, actor_label)
        if any(c in changes for c in _DECAY_INPUTS for changes in (values, *row_values.values())):
            current = _with_confidence_inputs(current)
        values, row_values = _with_decay_columns(current, expected_status, values, row_values, at)
        python_keys = _python_keys(values, row_values, expected_status, at)
        if python_keys:
            current = _with_confidence_inputs(current)
        _refuse_forgotten_rows(current, values, row_values, action)
        updates = {**values, **_per_row(row_values)}
        target = Q(IdIn(ids)) if expected_status is None else Q(IdIn(ids), status=expected_status)
        # The Events, from each row as it is and as the UPDATE writes it (event_sql.py), and the UPDATE. Both
        # find only rows still in the expected status, the Events (and on PostgreSQL the UPDATE) only at the
        # version read.
        events_of = partial(
            event_sql.events_statement,
            rows,
            target,
            updates,
            python_parts=_python_parts(current, python_keys, values, row_values, at),
            python_keys=python_keys,
            reasons=_reasons(rows, reason_of),
            actor_label=actor_label or actor_label_for(None),
            action=action,
            at=at,
            request_id=request_id,
        )
        update = {
            **updates,
            "version": F("version") + 1,
            "updated_at": clock.wall() if updated_at is None else updated_at,
        }
        events, written = _insert_and_update(events_of, Entry.objects.filter(target), update)
        if events != len(ids):
            raise ConcurrentChange(f"{actor_label}: {len(ids) - events} of {len(ids)} rows changed under the sweep")
        if written != len(ids):
            raise ConcurrentChange(f"{actor_label}: {len(ids) - written} of {len(ids)} rows changed under the sweep")
        # The near-duplicate keys follow the text written, and are written for the rows the write makes active.
        if _BANDED_COLUMNS.intersection(updates):
            banded = ids
        else:
            banded = [
                pk
                for pk, row in current.items()
                if row["status"] != Status.ACTIVE
                and row_values.get(pk, {}).get("status", values.get("status")) == Status.ACTIVE
            ]
        if banded:
            _write_bands(
                list(Entry.objects.filter(IdIn(banded)).only("status", "scope", "trigger", "content")), replace=True
            )
    return written


def _insert_and_update(events_of: Callable[..., tuple[str, tuple]], rows: QuerySet, update: dict) -> tuple[int, int]:
    """The Events' INSERT and the rows' UPDATE; answers (Events inserted, rows written). On PostgreSQL one
    statement (a data-modifying WITH): the UPDATE finds each row once, at the version read, and its RETURNING
    gives the Events (event_sql.events_statement with the UPDATE); a row not written has no Event, and on a
    short count write_entries raises and its savepoint takes both back. One round trip and one plan, not two.
    On SQLite, which has no such WITH, the INSERT (`events_of()`), then the UPDATE."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(*events_of())
            events = cursor.rowcount
        return events, rows.update(**update)
    # The UPDATE's SET alone: the statement gives its FROM, WHERE and RETURNING.
    query = rows.model.objects.all().query.chain(UpdateQuery)
    query.add_update_values(update)
    compiler = query.get_compiler(rows.db)
    compiler.pre_sql_setup()
    with connection.cursor() as cursor:
        cursor.execute(*events_of(update=compiler.as_sql()))
        written = cursor.fetchone()[0]
    return written, written


# What write_entries reads of the rows before writing, by attribute name: the table's checks (status, scope,
# the first approval, the queue reason), the decay columns and the version the caller read. A caller that
# locks its rows reads these with them (and what its reasons need), so nothing is read twice. The lesson,
# only when a forgotten lesson could be written back (_refuse_forgotten_rows reads it then).
# What the confidence is derived from (dates, parsed one by one) is read only by a write that changes it (a
# revival, an outcome): with the rows when they carry it, else in one query (_with_confidence_inputs).
ROW_COLUMNS = ("id", "version", "status", "scope", "queue_reason", "first_approval_by_id")


def entry_row(entry: Entry) -> dict:
    """A loaded entry as write_entries reads a row (an outcome's entries, loaded whole under their lock)."""
    return {column: getattr(entry, column) for column in (*ROW_COLUMNS, *CONFIDENCE_FIELDS)}


def _with_confidence_inputs(current: dict[int, dict]) -> dict[int, dict]:
    """The rows with what their confidence is derived from, read in one query when they lack it."""
    if all(column in next(iter(current.values())) for column in CONFIDENCE_FIELDS):
        return current
    stored = Entry.objects.filter(IdIn(list(current))).values("id", *CONFIDENCE_FIELDS)
    return {row["id"]: {**current[row["id"]], **row} for row in stored}


def _row_confidence(row: dict, at) -> float:
    """Entry.confidence_at of a row: decaying while active, as it was when it left the active set after that."""
    until = at if row["status"] == Status.ACTIVE else row["decay_stopped_at"]
    return lifecycle.confidence_at(
        row["base_confidence"], row["last_verified_at"] or row["created_at"], until, lifecycle.rules()
    )


# What the derived confidence is read from (with the creation, which no write changes).
_CONFIDENCE_INPUTS = frozenset({"status", "base_confidence", "last_verified_at", "decay_stopped_at"})


def _python_keys(values: dict, row_values: dict, expected_status, at) -> list[str]:
    """The float state keys a bulk write can change, whose values Python renders per row (event_sql.py): the
    base when it is written, the confidence when what it is derived from is written. Not an archive's: an
    active entry stopped at the write's own moment keeps the confidence it had then."""
    written = {*values, *(c for changes in row_values.values() for c in changes)}
    keys = [k for k in event_sql.written_state_keys(written) if event_sql.is_python_key(k)]
    if _CONFIDENCE_INPUTS & written:
        stops_now = (
            expected_status == Status.ACTIVE
            and isinstance(values.get("status"), str)
            and values["status"] != Status.ACTIVE
            and values.get("decay_stopped_at") == at
            and not (_CONFIDENCE_INPUTS - {"status", "decay_stopped_at"}) & written
            and not {"status", "decay_stopped_at"} & {c for changes in row_values.values() for c in changes}
        )
        if not stops_now:
            keys.append(DERIVED_CONFIDENCE)
    return [k for k in STATE_KEYS if k in keys]


def _python_parts(current: dict[int, dict], keys: list[str], values: dict, row_values: dict, at) -> dict:
    """{pk: (old, new)} of the `keys` whose value the write changes, as Entry.snapshot() renders them."""
    if not keys:
        return {}
    parts = {}
    for pk, row in current.items():
        after = dict(row)
        for column in _CONFIDENCE_INPUTS:
            value = row_values.get(pk, {}).get(column, values.get(column, row[column]))
            if hasattr(value, "resolve_expression"):
                raise TypeError("write_entries: what the confidence is derived from is written as plain values")
            after[column] = value
        old, new = _float_state(row, keys, at), _float_state(after, keys, at)
        changed = [k for k in keys if old[k] != new[k]]
        parts[pk] = ({k: old[k] for k in changed}, {k: new[k] for k in changed})
    return parts


def _float_state(row: dict, keys: list[str], at) -> dict:
    return {
        k: round(_row_confidence(row, at), 4)
        if k == DERIVED_CONFIDENCE
        else snapshot_value(Entry._meta.get_field(k), row[Entry._meta.get_field(k).attname])
        for k in keys
    }


def _reasons(rows: list[dict], reason_of: Callable[[dict], str]) -> dict[int, str]:
    """Each row's reason as the Event's column stores it: redacted once per distinct text (a sweep's reasons
    repeat), as a save would."""
    column = Event._meta.get_field("reason")
    stored: dict[str, str] = {}
    reasons = {}
    for row in rows:
        reason = reason_of(row)
        if reason not in stored:
            stored[reason] = column.stored(reason)
        reasons[row["id"]] = stored[reason]
    return reasons


def _planned_rows(current: dict[int, dict], action, values: dict, row_values: dict, at, actor_label: str):
    """write_entries' look-up of the table: the same values for every row (with the table's), each row's start
    checked; a row that a pending status would make active gets the activation and the two-reviewer check."""
    refuse_actor(action, None, ())
    values = transitions.transition(action).values(dict(values), at)
    row_values = {pk: dict(changes) for pk, changes in row_values.items()}
    rules = None
    # A row with no values of its own that the write does not activate is planned as every other row in its
    # status is: the look-up runs once per status, not once per row.
    same: dict[str, dict] = {}
    for pk, row in current.items():
        if pk not in row_values and row["status"] in same:
            extra = same[row["status"]]
        else:
            mine = {**values, **row_values.get(pk, {})}
            if not isinstance(mine.get("status", row["status"]), str):
                raise TypeError("write_entries: the status is a plain value, to check the transition")
            if rules is None and row["status"] == Status.PENDING and mine.get("status") == Status.ACTIVE:
                rules = in_force(scope_policies.REVIEW)
            planned = planned_values(
                action,
                pk=pk,
                start=row["status"],
                changes=mine,
                at=at,
                approvals_required=lambda: scope_policies.approvals_required(row["scope"], rules),
                first_approval_by=row["first_approval_by_id"],
                queue_reason=row["queue_reason"],
            )
            extra = {c: v for c, v in planned.items() if c not in values or not (values[c] is v or values[c] == v)}
            if pk not in row_values and not transitions.activates_pending(
                row["status"], planned.get("status", row["status"])
            ):
                same[row["status"]] = extra
        if extra:
            row_values[pk] = {**row_values.get(pk, {}), **extra}
    return values, row_values


def _refuse_forgotten_rows(current: dict[int, dict], values: dict, row_values: dict, action) -> None:
    """write_entries' check of the rows it leaves live with their lesson set or made live (a revival). A batch
    that writes none of that (an archive, an outcome) costs no loop over its rows."""
    per_row = {column for changes in row_values.values() for column in changes}
    if not LESSON_COLUMNS.intersection({*values, *per_row}) and str(action) not in _ACTIVATING:
        return
    if values.get("status", Status.ACTIVE) not in LIVE and "status" not in per_row:
        return
    lesson = ("status", "scope", "trigger", "content")
    if any(column not in next(iter(current.values())) for column in lesson):  # one query, not one a row
        stored = {row["id"]: row for row in Entry.objects.filter(pk__in=list(current)).values("id", *lesson)}
    else:
        stored = current
    lessons = []
    for pk in current:
        mine = {**values, **row_values.get(pk, {})}
        result = {f: mine.get(f, stored[pk][f]) for f in lesson}
        if any(hasattr(v, "resolve_expression") for v in result.values()):
            raise TypeError("write_entries: the status and the lesson are plain values, to check the tombstones")
        if checks_forgotten(result["status"], mine, action):
            lessons.append((result["scope"], result["trigger"], result["content"]))
    refuse_forgotten_lessons(lessons)


def _decay_stop(was_active: bool, status: str, stopped_at, at):
    """When decay stopped: not while active; at `at` for an entry leaving the active set; else unchanged."""
    if status == Status.ACTIVE:
        return None
    return at if was_active else stopped_at


_DECAY_INPUTS = ("base_confidence", "last_verified_at")


def _with_decay_columns(current: dict[int, dict], expected_status: str, values: dict, row_values: dict, at):
    """write_entries' values with what the confidence is derived from kept in step (see write_entry)."""
    if "status" in values and (values["status"] == Status.ACTIVE or expected_status == Status.ACTIVE):
        values["decay_stopped_at"] = _decay_stop(expected_status == Status.ACTIVE, values["status"], None, at)
    if not any(c in values for c in _DECAY_INPUTS) and not any(
        c in v for v in row_values.values() for c in _DECAY_INPUTS
    ):
        return values, row_values
    if any(hasattr(values.get(c), "resolve_expression") for c in _DECAY_INPUTS):
        raise TypeError("write_entries: the base and the verification are plain values, to compute the decay key")
    row_values = {pk: dict(row_values.get(pk, {})) for pk in current}
    rules = lifecycle.rules()
    for pk, row in current.items():
        base, verified = (row_values[pk].get(c, values.get(c, row[c])) for c in _DECAY_INPUTS)
        row_values[pk].update(
            decay_key=lifecycle.decay_key(base, verified or row["created_at"], rules),
            decay_rate=lifecycle.decay_rate(rules),
        )
    return values, row_values


def _per_row(row_values: dict[int, dict]) -> dict:
    """{pk: {column: value}} as one CASE per column: every row's value in the same UPDATE."""
    columns = sorted({column for values in row_values.values() for column in values})
    return {
        column: ByRow(
            Entry._meta.get_field(column), {pk: values[column] for pk, values in row_values.items() if column in values}
        )
        for column in columns
    }


class ByRow(Expression):
    """`CASE id WHEN pk THEN value ... ELSE column END` for an UPDATE of one column: each row's own value,
    the others keep theirs. What Case(When(pk=...)) would say, without resolving a lookup per row and
    column (most of a small bulk write's time: an outcome's six rows by eight columns). Each value is
    prepared by the column's field, as a Value of that field is (redacting columns redact it)."""

    def __init__(self, field, values: dict[int, object]):
        super().__init__(output_field=field)
        self.column_field, self.values = field, values

    def as_sql(self, compiler, connection):
        table = compiler.quote_name_unless_alias(Entry._meta.db_table)
        sql, params = [f"CASE {table}.{connection.ops.quote_name(Entry._meta.pk.column)}"], []
        for pk, value in self.values.items():
            prepared = self.column_field.get_db_prep_save(value, connection=connection)
            if prepared is None:
                sql.append("WHEN %s THEN NULL")
                params.append(pk)
            else:
                sql.append("WHEN %s THEN %s")
                params += [pk, prepared]
        sql.append(f"ELSE {table}.{connection.ops.quote_name(self.column_field.column)} END")
        return " ".join(sql), params


# --- writes that are not state: no version, no Event ---------------------------------------------------


def rewrite_decay_keys(entries: QuerySet) -> int:
    """The decay index of these entries, recomputed in one statement (the decay sweep, for keys written under
    other decay settings; a bulk load that wrote rows directly). Not state: the confidence read from the
    entries is unchanged, so no version and no Event."""
    rules = lifecycle.rules()
    return entries.update(decay_key=confidence.decay_key(rules), decay_rate=lifecycle.decay_rate(rules))


def stamp_scanned(entry_ids: list[int]) -> int:
    """The injection sweep read these entries' text with the current detector and found nothing new: the
    stamp that keeps it from reading them again. Not state: nothing agents or reviewers read changes, so no
    version and no Event."""
    if not entry_ids:
        return 0
    return Entry.objects.filter(pk__in=entry_ids).update(scanned_with=injection.DETECTOR_VERSION)


def count_retrieval(entry_ids: list[int], at) -> None:
    """An agent was given these entries: the usage counters, not state."""
    if entry_ids:
        Entry.objects.filter(pk__in=entry_ids).update(retrieval_count=F("retrieval_count") + 1, last_retrieved_at=at)


def insert_counted_retrieval(retrieval: Retrieval) -> None:
    """On PostgreSQL, the retrieval, its items and count_retrieval as one statement: one round trip, on the
    path of every agent read. The statement passes by the model's redacting columns: the caller
    (usage.record_retrieval) redacts the query and the task reference first.

    An agent's read is not a decision: on its own (not inside a caller's transaction) it commits without
    waiting for the write-ahead log to reach the disk (synchronous_commit off for this one transaction, sent
    with it in the same round trip). A crash may lose the last fraction of a second of retrieval records
    and counters, after which feedback on one of them answers 404; it never loses a decision, and never
    leaves the database inconsistent. Waiting for the flush cost the read 2 to 20 ms when other work was
    writing."""
    statement = f"""
        WITH retrieval AS (
            INSERT INTO {Retrieval._meta.db_table} (id, token_id, scope, query, task_ref, entry_ids, memory_version,
                                                    arm, created_at)
            VALUES (%(id)s, %(token)s, %(scope)s, %(query)s, %(task_ref)s, CAST(%(entry_ids)s AS jsonb),
                    %(memory_version)s, %(arm)s, %(now)s)
            RETURNING id
        ), items AS (
            INSERT INTO {RetrievedEntry._meta.db_table} (retrieval_id, entry_id, rank, created_at)
            SELECT retrieval.id, item.entry_id, item.position - 1, %(now)s
            FROM retrieval, unnest(CAST(%(ids)s AS bigint[])) WITH ORDINALITY AS item(entry_id, position)
        )
        UPDATE {Entry._meta.db_table} SET retrieval_count = retrieval_count + 1, last_retrieved_at = %(now)s
        WHERE id = ANY(CAST(%(ids)s AS bigint[]))"""
    params = {
        "id": retrieval.pk,
        "token": retrieval.token_id,
        "scope": retrieval.scope,
        "query": retrieval.query,
        "task_ref": retrieval.task_ref,
        "entry_ids": json.dumps(retrieval.entry_ids),
        "ids": retrieval.entry_ids,
        "memory_version": retrieval.memory_version,
        "arm": retrieval.arm,
        "now": retrieval.created_at,
    }
    with connection.cursor() as cursor:
        # Several statements in one round trip need the parameters bound here (Django's default for psycopg).
        if connection.in_atomic_block or not isinstance(cursor.cursor, psycopg.ClientCursor):
            cursor.execute(statement, params)  # committed with the caller's transaction
        else:
            try:
                cursor.execute(f"BEGIN; SET LOCAL synchronous_commit TO OFF; {statement}; COMMIT", params)
            except DatabaseError:
                # A failed statement leaves the transaction it opened aborted: close it, or the connection's
                # next query fails too.
                if cursor.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    cursor.execute("ROLLBACK")
                raise
    retrieval._state.adding = False  # it is stored: a later save() updates it


def insert_counted_retrievals(records: list[dict]) -> int:
    """On PostgreSQL, a batch of buffered reads (retrieval_buffer.as_record) as one statement: the Retrieval
    rows, their items, and each entry's counters bumped once by the reads of it in the batch. A retrieval
    already stored is skipped with its items and counters, so a batch written twice counts once. The rows
    of the entries are locked in id order first, as write_entries locks them. Answers how many were stored."""
    if not records:
        return 0
    statement = f"""
        WITH given AS (
            SELECT DISTINCT ON (id) *
            FROM jsonb_to_recordset(CAST(%(records)s AS jsonb)) AS r(
                id uuid, token_id bigint, scope text, query text, task_ref text, entry_ids jsonb,
                memory_version integer, arm text, created_at timestamptz)
        ), retrieval AS (
            INSERT INTO {Retrieval._meta.db_table} (id, token_id, scope, query, task_ref, entry_ids, memory_version,
                                                    arm, created_at)
            SELECT id, token_id, scope, query, task_ref, entry_ids, memory_version, arm, created_at FROM given
            ON CONFLICT (id) DO NOTHING
            RETURNING id, entry_ids, created_at
        ), items AS (
            INSERT INTO {RetrievedEntry._meta.db_table} (retrieval_id, entry_id, rank, created_at)
            SELECT retrieval.id, item.entry_id::bigint, item.position - 1, retrieval.created_at
            FROM retrieval, jsonb_array_elements_text(retrieval.entry_ids) WITH ORDINALITY AS item(entry_id, position)
            RETURNING entry_id, created_at
        ), counted AS (
            SELECT entry_id, count(*) AS reads, max(created_at) AS last FROM items GROUP BY entry_id
        ), locked AS MATERIALIZED (
            SELECT id FROM {Entry._meta.db_table} WHERE id IN (SELECT entry_id FROM counted) ORDER BY id FOR UPDATE
        ), bumped AS (
            UPDATE {Entry._meta.db_table} AS e
            SET retrieval_count = e.retrieval_count + counted.reads,
                last_retrieved_at = GREATEST(e.last_retrieved_at, counted.last)
            FROM counted, locked WHERE e.id = counted.entry_id AND locked.id = e.id
        )
        SELECT count(*) FROM retrieval"""
    with connection.cursor() as cursor:
        cursor.execute(statement, {"records": json.dumps(records)})
        return cursor.fetchone()[0]
