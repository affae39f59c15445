"""Decisions on the candidates queue. Each one: one transaction, the actor's permission and scope
checked, the entry's version compared (optimistic concurrency), one Event written."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import cached_property

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction

from curation.rules import access, clock, config, injection, lifecycle, trust, vectors
from curation.rules.permissions import REVIEW, SETTLE
from curation.rules.redaction import redact_fields
from curation.models import Entry, EventAction, Evidence, ForgetRequest, QueueReason, SimilarEntry, Signal, Status
from curation.selectors import approvals_required, similar_active_entries, sql, visible_entries
from curation.selectors.forgets import ForgetInProgress
from curation.rules.similarity import fingerprint

from .admission import insert_decision
from .entry_writes import changes_since, insert_entry, refuse_forgotten_lessons, write_entry
from .errors import InvalidTransition, StaleDecision
from .events import actor_label_for, record_event
from .held import held_evidence, held_fields, weigh_tombstone_check, with_text
from .rows import new_instance
from .trust import with_levels
from .validation import clean_entry_fields, clean_evidence

EDITABLE_FIELDS = ("scope", "trigger", "content", "boundary", "conditions")


def _approvable(entry: Entry) -> bool:
    """Pending candidates, active entries sent back for a recheck, and entries archived for low utility
    that wait in the queue for a reviewer to keep or retire them."""
    return entry.status in (Status.PENDING, Status.ACTIVE) or (
        entry.status == Status.ARCHIVED and entry.queue_reason == QueueReason.RECHECK_LOW_UTILITY
    )


CANDIDATE_FIELDS = (
    "kind",
    "scope",
    "trigger",
    "content",
    "conditions",
    "boundary",
    "recheck_when",
    "review_by",
    "signal",
    "confidence",
    "source_task",
)
_REDACTED_FIELDS = ("trigger", "content", "boundary", "recheck_when", "conditions", "source_task")


@dataclass(frozen=True)
class PreparedCandidate:
    """A candidate after redaction and validation, before anything is written."""

    fields: dict
    evidence: list[dict]
    findings: list
    proposed_confidence: float | None
    base_confidence: float
    # What the injection detector found in the evidence's excerpts (the write path reads the lesson's own
    # text): flagged on the card and quarantining the entry, never told to the agent (no oracle to tune a
    # payload against).
    injection: tuple = ()
    # The provenance trust it is born at (trust.origin_trust) and the most its sender can vouch for.
    trust_origin: int = trust.Trust.AGENT
    sender: str = trust.Sender.AGENT
    # What the detector found in each piece's texts (injection.evidence_found of it), in order.
    evidence_found: tuple = ()

    @cached_property  # a batch asks for it per lookup and per row; the fields are not changed once prepared
    def fingerprint(self) -> str:
        return fingerprint(self.fields["trigger"], self.fields["content"])

    @property
    def flags(self) -> list[dict]:
        return [f.as_flag() for f in self.findings]


def prepare_candidate(data: dict, evidence=(), *, sender: str = trust.Sender.AGENT) -> PreparedCandidate:
    """Redact secrets and personal data (the raw text goes no further than this function), check every
    field, and apply the confidence caps. Raises one ValidationError with a message per bad field.
    `sender`: who sends it (trust.Sender: an agent, a person in the console, an import of files)."""
    data, findings = redact_fields(data, _REDACTED_FIELDS)
    evidence = list(evidence) if isinstance(evidence, (list, tuple)) else evidence
    errors: dict = {}
    try:
        embedding = vectors.clean_embedding(data.get("embedding"))
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if not isinstance(evidence, list):
        errors["evidence"] = ["A list of evidence objects."]
        evidence = []
    redacted_evidence = []
    for index, item in enumerate(evidence):
        if isinstance(item, dict):
            item, found = redact_fields(item, ("excerpt", "task_ref"))
            findings += [type(f)(f.kind, f"evidence[{index}].{f.field}") for f in found]
        redacted_evidence.append(item)
    try:
        fields = clean_entry_fields(data, fields=CANDIDATE_FIELDS)
    except ValidationError as exc:
        errors.update(exc.message_dict)
        fields = None
    cleaned_evidence = []
    for index, item in enumerate(redacted_evidence):
        try:
            cleaned_evidence.append(clean_evidence(item, sender=sender))
        except ValidationError as exc:
            errors.update({f"evidence[{index}].{k}": v for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    # The detector reads each piece's texts once: what an excerpt holds flags the entry, what a piece's
    # texts hold marks its row.
    scanned = [injection.scan_fields(item, injection.EVIDENCE_FIELDS) for item in cleaned_evidence]
    found_in_evidence = tuple(
        type(f)(f.what, f"evidence[{index}].excerpt")
        for index, findings in enumerate(scanned)
        for f in findings
        if f.field == "excerpt"
    )
    has_external = any(e["signal"] == Signal.EXTERNAL and e["polarity"] == "supports" for e in cleaned_evidence)
    proposed = fields.pop("confidence")
    if embedding is not None:
        fields["embedding"] = embedding
    base = lifecycle.initial_confidence(
        kind=fields["kind"],
        signal=fields["signal"],
        proposed=proposed,
        has_external_support=has_external,
        rules=lifecycle.rules(),
    )
    origin = trust.origin_trust(
        (e["source"] for e in cleaned_evidence if e["polarity"] == Evidence.Polarity.SUPPORTS), sender=sender
    )
    return PreparedCandidate(
        fields,
        cleaned_evidence,
        findings,
        proposed,
        base,
        found_in_evidence,
        origin,
        sender,
        evidence_found=tuple(injection.as_found(piece_findings) for piece_findings in scanned),
    )


def create_candidate(
    *,
    data: dict,
    evidence: list[dict] = (),
    actor=None,
    actor_label: str = "",
    at: datetime.datetime | None = None,
) -> Entry:
    """A new candidate lesson enters the queue as pending, with its evidence and a "submit" Event.
    Secrets and personal data are redacted first: the raw text is never stored, and the entry is flagged.
    A lesson that repeats a forgotten one is refused (Forgotten): checked before the insert, so that the
    caller's transaction stays usable (the write path's own check of the insert would refuse it inside)."""
    prepared = prepare_candidate(
        data, evidence, sender=trust.Sender.PERSON if actor is not None else trust.Sender.AGENT
    )
    refuse_forgotten_lessons([(prepared.fields["scope"], prepared.fields["trigger"], prepared.fields["content"])])
    return insert_candidate(prepared, actor=actor, actor_label=actor_label, at=at)


def insert_candidate(prepared: PreparedCandidate, *, actor=None, actor_label: str = "", at=None) -> Entry:
    return insert_candidate_with_links(prepared, actor=actor, actor_label=actor_label, at=at)[0]


def new_candidate_entry(
    prepared: PreparedCandidate, *, actor=None, actor_label: str = "", now, held_by: ForgetRequest | None = None
) -> Entry:
    """The unsaved pending Entry of a prepared candidate; `held_by`: it repeats the lesson that forget
    request forgot, and is born rejected and held (services.held)."""
    base = prepared.base_confidence
    return new_instance(
        Entry,
        **(prepared.fields if held_by is None else held_fields(prepared.fields, held_by)),
        fingerprint=prepared.fingerprint,
        base_confidence=base,
        status=Status.PENDING if held_by is None else Status.REJECTED,
        queued_at=now if held_by is None else None,
        queue_reason=QueueReason.NEW if held_by is None else "",
        held_by=held_by,
        flags=prepared.flags + [f.as_flag() for f in prepared.injection],
        quarantined=bool(prepared.injection),
        trust_origin=prepared.trust_origin,
        trust=prepared.trust_origin,
        created_by=actor,
        created_by_label=actor_label or actor_label_for(actor),
        created_at=now,
        updated_at=now,
    )


def evidence_rows(
    entry: Entry,
    evidence: list[dict],
    *,
    actor=None,
    label: str,
    now,
    sender: str = trust.Sender.AGENT,
    found: tuple | None = None,
) -> list[Evidence]:
    """The Evidence rows of cleaned pieces `label` records about `entry`, each with its provenance trust.
    `found`: what the detector found in each piece's texts, when the caller has read them (prepare_candidate)."""
    if found is None:
        found = tuple(injection.evidence_found(e) for e in evidence)
    return [
        new_instance(
            Evidence,
            entry=entry,
            **{**e, "observed_at": e["observed_at"] or now},
            recorded_by=actor,
            recorded_by_label=label,
            injection_found=list(marks),
            created_at=now,
        )
        for e, marks in zip(with_levels(evidence, entry=entry, recorder=label, sender=sender), found, strict=True)
    ]


def stored_evidence(prepared: PreparedCandidate, held_by: ForgetRequest | None) -> tuple[list[dict], tuple | None]:
    """A prepared candidate's evidence as stored, and what the detector found in it (None: to be read): as
    sent, or without its texts for a held one (the marker is what its rows hold, and what is read)."""
    if held_by is None:
        return prepared.evidence, prepared.evidence_found
    return held_evidence(prepared.evidence, held_by), None


def submit_note(prepared: PreparedCandidate) -> str:
    """The "submit" Event's reason: what the caps and the redaction changed."""
    proposed, base = prepared.proposed_confidence, prepared.base_confidence
    notes = [f"capped from {proposed:.2f}"] if proposed is not None and proposed > base else []
    notes += [f"redacted {f.kind} in {f.field}" for f in prepared.findings]
    notes += [f"possible injection: {f.what} in {f.field}" for f in prepared.injection]
    return "; ".join(notes)


def insert_candidate_with_links(
    prepared: PreparedCandidate,
    *,
    actor=None,
    actor_label: str = "",
    at=None,
    held_by: ForgetRequest | None = None,
    admit: bool = False,
) -> tuple[Entry, list[int]]:
    """Write a prepared candidate; also answer the ids of the similar active entries it was linked to.
    `admit`: an agent's submission, on which its scope's admission policy decides as it is inserted."""
    now = at or clock.now()
    # No savepoint of its own: inside a batch item's savepoint, a failure unwinds that item only.
    with transaction.atomic(savepoint=False):
        entry = new_candidate_entry(prepared, actor=actor, actor_label=actor_label, now=now, held_by=held_by)
        insert_entry(
            entry,
            action=EventAction.SUBMIT,
            actor=actor,
            actor_label=entry.created_by_label,
            reason=submit_note(prepared),
            at=now,
            decide=(
                (lambda e, note: insert_decision(e, prepared.evidence, submitter=e.created_by_label, note=note))
                if admit
                else None
            ),
        )
        evidence, found = stored_evidence(prepared, held_by)
        Evidence.objects.bulk_create(
            evidence_rows(
                entry, evidence, actor=actor, label=entry.created_by_label, now=now, sender=prepared.sender, found=found
            )
        )
        probe = entry if held_by is None else with_text(entry, prepared.fields)
        similar = similar_active_entries(probe)
        # a held one's too: ids and scores, no text, and the same work
        insert_links([(entry.pk, other_id, score) for other_id, score in similar])
        if held_by is not None:
            weigh_tombstone_check([probe])
    return entry, [other_id for other_id, _ in similar]


def insert_links(links: list[tuple[int, int, float]]) -> None:
    """The near-duplicate links (SimilarEntry) of new candidates, as (candidate id, similar id, score), in one
    statement: plain values, no model instance each (a batch of 500 writes ~1,200; building and rendering them
    cost more than the insert). The arrays go as literals (sql.pg_array); a score is its shortest decimal, the
    same double read back."""
    if not links:
        return
    table = SimilarEntry._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"INSERT INTO {table} (candidate_id, similar_id, score) SELECT * FROM unnest("
                "CAST(%s AS bigint[]), CAST(%s AS bigint[]), CAST(%s AS double precision[]))",
                [
                    sql.pg_array(candidate for candidate, _, _ in links),
                    sql.pg_array(other for _, other, _ in links),
                    "{" + ",".join(repr(float(score)) for _, _, score in links) + "}",
                ],
            )
        else:
            cursor.executemany(f"INSERT INTO {table} (candidate_id, similar_id, score) VALUES (%s, %s, %s)", links)


def _locked_for(actor, entry_id: int) -> Entry:
    """The entry, locked, as a person acts on it: Entry.DoesNotExist outside their scopes or held (a
    submission repeating a forgotten lesson), as for an unknown id. The rule is the one every page reads
    entries by (selectors.visible_entries), so no decision, single or bulk, tells those ids apart."""
    return visible_entries(actor).select_for_update().get(pk=entry_id)


def _load_for_decision(entry_id: int, actor, expected_version: int) -> Entry:
    """Lock the entry, check who may decide, and refuse a decision made on an old version."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on candidates.")
    entry = _locked_for(actor, entry_id)
    if entry.version != expected_version:
        raise StaleDecision(entry, changes_since(entry, expected_version))
    if entry.queued_at is None:
        raise InvalidTransition(f"Entry #{entry.pk} is not in the candidates queue (it is {entry.status}).")
    if entry.queue_reason == QueueReason.NEEDS_LEAD and not actor.has_perm(SETTLE):
        raise InvalidTransition(f"Reviewers disagree on #{entry.pk}: a lead decides it now.")
    if entry.queue_reason == QueueReason.INJECTION_FOUND and not actor.has_perm(SETTLE):
        raise InvalidTransition(f"#{entry.pk} is withheld from agents as a possible injection: a lead decides it.")
    return entry


def _needs_second_reviewer(entry: Entry) -> bool:
    """A pending candidate in a two-reviewer scope, not (yet) handed to a lead: one approval does not
    activate it. Entries sent back for a recheck were approved once already; one reviewer decides them."""
    return (
        entry.status == Status.PENDING
        and entry.queue_reason != QueueReason.NEEDS_LEAD
        and approvals_required(entry.scope) == 2
    )


def _first_approval(actor) -> dict:
    return {"first_approval_by": actor}  # stamped with the decision's time by the write path


def _refuse_own_second(entry: Entry, actor) -> None:
    if entry.first_approval_by_id == actor.pk:
        raise InvalidTransition(f"You gave #{entry.pk} its first approval: a second reviewer approves it.")


def approve_candidate(entry_id: int, *, actor, expected_version: int, reason: str = "", at=None) -> Entry:
    """Approve a pending candidate (it becomes active), or confirm an active entry sent back for a recheck."""
    now = at or clock.now()
    with transaction.atomic():
        entry = _load_for_decision(entry_id, actor, expected_version)
        action = {Status.PENDING: EventAction.APPROVE, Status.ARCHIVED: EventAction.REACTIVATE}.get(
            entry.status, EventAction.CONFIRM
        )
        if not _approvable(entry):
            raise InvalidTransition(f"Entry #{entry.pk} is {entry.status} and cannot be approved.")
        if _needs_second_reviewer(entry):
            if entry.first_approval_by_id is None:
                write_entry(
                    entry,
                    _first_approval(actor),
                    expected_version=expected_version,
                    action=EventAction.FIRST_APPROVAL,
                    actor=actor,
                    reason=reason.strip(),
                    at=now,
                )
                return entry
            _refuse_own_second(entry, actor)
            action = EventAction.SECOND_APPROVAL
        # What approving writes (the activation, and the two-reviewer rule) is the transition table's.
        write_entry(
            entry, {}, expected_version=expected_version, action=action, actor=actor, reason=reason.strip(), at=now
        )
    return entry


def edit_and_approve(entry_id: int, *, actor, expected_version: int, changes: dict, reason: str = "", at=None) -> Entry:
    """Narrow or correct a candidate (scope, trigger, content, boundary, conditions), then approve it."""
    now = at or clock.now()
    # Redacted before the checks: lengths are those of what is stored, and what was found is flagged, as
    # an agent's submission is, so the approved entry never serves a secret a reviewer pasted.
    changes, findings = redact_fields(changes, _REDACTED_FIELDS)
    cleaned = clean_entry_fields(changes, fields=[f for f in EDITABLE_FIELDS if f in changes])
    if "scope" in cleaned and not access.user_can_see_scope(actor, cleaned["scope"]):
        raise ValidationError({"scope": ["You can only move an entry to a scope you review."]})
    with transaction.atomic():
        entry = _load_for_decision(entry_id, actor, expected_version)
        if not _approvable(entry):
            raise InvalidTransition(f"Entry #{entry.pk} is {entry.status} and cannot be approved.")
        edited = [f for f in EDITABLE_FIELDS if f in cleaned and getattr(entry, f) != cleaned[f]]
        flags = {"flags": [*entry.flags, *(f.as_flag() for f in findings)]} if findings else {}
        decision, action = {}, EventAction.EDIT_APPROVE
        if _needs_second_reviewer(entry):
            if edited or entry.first_approval_by_id is None:
                # Changed text has one approval, its editor's: another reviewer approves what was changed.
                decision, action = _first_approval(actor), EventAction.FIRST_APPROVAL
            else:
                _refuse_own_second(entry, actor)
                action = EventAction.SECOND_APPROVAL
        write_entry(
            entry,
            {**cleaned, **flags, **decision},
            expected_version=expected_version,
            action=action,
            actor=actor,
            reason=reason.strip() or (f"edited {', '.join(edited)}" if edited else "approved without changes"),
            at=now,
        )
    return entry


def reject_candidate(entry_id: int, *, actor, expected_version: int, reason: str, at=None) -> Entry:
    """Reject a candidate with a reason; an active entry rejected on recheck is retired (kept, not deleted)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["Say why it is rejected: the agent's team will read it."]})
    now = at or clock.now()
    with transaction.atomic():
        entry = _load_for_decision(entry_id, actor, expected_version)
        pending = entry.status == Status.PENDING
        if (
            pending
            and entry.first_approval_by_id not in (None, actor.pk)
            and entry.queue_reason != QueueReason.NEEDS_LEAD
            and not actor.has_perm(SETTLE)
        ):
            # One approved, another rejects: neither decides; the candidate waits for a lead.
            write_entry(
                entry,
                {},
                expected_version=expected_version,
                action=EventAction.DISAGREEMENT,
                actor=actor,
                reason=reason,
                # The first approval stays on the entry, so the Event's delta would not name it: the
                # reviewers' agreement reads it here.
                after_extra={"disagreed_with": entry.first_approval_by_id},
                at=now,
            )
            return entry
        write_entry(
            entry,
            {},
            expected_version=expected_version,
            action=EventAction.REJECT if pending else EventAction.RETIRE,
            actor=actor,
            reason=reason,
            at=now,
        )
    return entry


def send_back_for_recheck(entry_id: int, *, actor, expected_version: int, reason: str = "", at=None) -> Entry:
    """Send an active entry back to the candidates queue for a recheck (from the learning dashboard, when
    the tasks that retrieved it do worse than those given no memory). It stays active, and agents keep
    reading it, until a reviewer confirms or retires it."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads send entries back for a recheck.")
    now = at or clock.now()
    with transaction.atomic():
        entry = _locked_for(actor, entry_id)
        if entry.version != expected_version:
            raise StaleDecision(entry, changes_since(entry, expected_version))
        if entry.status != Status.ACTIVE or entry.queued_at is not None:
            raise InvalidTransition(
                f"Entry #{entry.pk} is not an active entry out of the queue (it is {entry.status}"
                f"{', already queued' if entry.queued_at else ''})."
            )
        write_entry(
            entry,
            {"queued_at": now, "queue_reason": QueueReason.RECHECK_REQUESTED},
            expected_version=expected_version,
            action=EventAction.QUEUE_RECHECK,
            actor=actor,
            reason=reason.strip() or "sent back for a recheck",
            at=now,
        )
    return entry


def defer_candidate(
    entry_id: int, *, actor, expected_version: int, reason: str = "", hours: float | None = None, at=None
) -> Entry:
    """Put a candidate aside: it leaves the queue's front until the deferral ends, then comes back."""
    now = at or clock.now()
    hours = config.DEFER_HOURS.value if hours is None else hours
    if not 0 < hours <= 24 * 90:
        raise ValidationError({"hours": ["Defer for between a minute and 90 days."]})
    with transaction.atomic():
        entry = _load_for_decision(entry_id, actor, expected_version)
        until = now + datetime.timedelta(hours=hours)
        write_entry(
            entry,
            {"queued_at": until},
            expected_version=expected_version,
            action=EventAction.DEFER,
            actor=actor,
            reason=reason.strip() or f"deferred until {until:%Y-%m-%d %H:%M} UTC",
            at=now,
        )
    return entry


def merge_into(entry_id: int, *, target_id: int, actor, expected_version: int, reason: str = "", at=None) -> Entry:
    """A pending candidate that repeats an active entry: its evidence is copied to that entry and the
    candidate is superseded by it (kept, with the link, for the audit). Nothing of the target is edited."""
    now = at or clock.now()
    with transaction.atomic():
        entry = _load_for_decision(entry_id, actor, expected_version)
        if entry.status != Status.PENDING:
            raise InvalidTransition(f"Entry #{entry.pk} is {entry.status}: only pending candidates are merged.")
        try:
            target = Entry.objects.select_for_update().filter(pk=target_id).first()
        except (ValueError, TypeError):
            raise ValidationError({"target": ["Merge into an existing active entry."]}) from None
        # Missing and out of scope read alike: the answer must not tell which ids exist elsewhere.
        if (
            target is None
            or target.pk == entry.pk
            or target.status != Status.ACTIVE
            or not access.user_can_see_scope(actor, target.scope)
        ):
            raise ValidationError({"target": [f"#{target_id} is not an active entry you review."]})
        copied = Evidence.objects.bulk_create(
            Evidence(
                entry=target,
                kind=e.kind,
                signal=e.signal,
                polarity=e.polarity,
                excerpt=e.excerpt,
                evaluator=e.evaluator,
                score=e.score,
                task_ref=e.task_ref or f"candidate #{entry.pk}",
                observed_at=e.observed_at,
                # The candidate's provenance, carried over; a copy never confirms the target (a merge
                # raises no trust).
                source=e.source,
                trust=e.trust,
                copied_from=e,
                injection_found=e.injection_found,
                recorded_by=actor,
                recorded_by_label=f"merged from #{entry.pk} by {actor.get_username()}",
                created_at=now,
            )
            for e in entry.evidence.all()
        )
        note = reason.strip() or f"the same lesson as #{target.pk}"
        write_entry(
            entry,
            {},
            expected_version=expected_version,
            action=EventAction.MERGE_INTO,
            actor=actor,
            reason=f"merged into #{target.pk}: {note}",
            after_extra={"merged_into": target.pk},
            at=now,
        )
        record_event(
            target,
            actor=actor,
            action=EventAction.MERGE_IN,
            reason=f"candidate #{entry.pk} merged in; {len(copied)} piece(s) of evidence copied",
            after={"merged_from": entry.pk, "evidence_ids": [e.pk for e in copied]},
            at=now,
        )
    return entry


# How long a reviewer may take a decision back (the decided card's Undo, or z).
UNDO_SECONDS = 30
# What an undo puts back: the queue's state and the text an edit changed, as the decision's Event saw them.
_UNDONE_FIELDS = ("status", "queue_reason", "archive_reason", "scope", "trigger", "content", "boundary", "conditions")
_UNDONE_TIMES = ("queued_at", "last_verified_at", "decay_stopped_at", "first_approval_at")


def undo_decision(entry_id: int, *, actor, expected_version: int, reason: str = "", at=None) -> Entry:
    """Take back the actor's own last decision on a candidate, within UNDO_SECONDS: the entry returns to
    what it was before (the decision's Event's `before`), with an "undo" Event of its own. Refused as
    stale when anyone acted on the entry since (its version moved)."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on candidates.")
    now = at or clock.now()
    try:
        return _undo(entry_id, actor, expected_version, reason, now)
    except IntegrityError:  # back to pending, it would repeat a candidate submitted since
        raise InvalidTransition(f"A pending candidate now says what #{entry_id} said; decide on that one.") from None


def restored_from(before: dict, entry: Entry) -> dict:
    """What an undo writes back: the entry's queue state and text as a decision's Event saw them before.
    The Event's `before` holds the old values of what the decision changed (an Event written before
    histories were deltas: every field), so what it does not name is as `entry` has it now."""
    restored = {field: before[field] for field in _UNDONE_FIELDS if field in before}
    restored.update(
        {
            field: datetime.datetime.fromisoformat(before[field]) if before[field] else None
            for field in _UNDONE_TIMES
            if field in before
        }
    )
    if "first_approval_by" in before:
        restored["first_approval_by_id"] = before["first_approval_by"]
    if "quarantined" in before:  # a lead's approval undone puts the quarantine back
        restored["quarantined"] = before["quarantined"]
    return restored


def within_undo_window(decided_at, now, what: str) -> None:
    """Refuse an undo asked for more than UNDO_SECONDS after the decision."""
    if (now - decided_at).total_seconds() > UNDO_SECONDS:
        raise InvalidTransition(f"Undo is for {UNDO_SECONDS} seconds after a decision; decide on {what} again.")


def _undo(entry_id: int, actor, expected_version: int, reason: str, now) -> Entry:
    with transaction.atomic():
        entry = _locked_for(actor, entry_id)
        if entry.version != expected_version:
            raise StaleDecision(entry, changes_since(entry, expected_version))
        last = entry.events.filter(entry_version=expected_version).order_by("-id").first()
        if last is None or last.action not in EventAction.undoable() or last.actor_id != actor.pk:
            raise InvalidTransition(f"Entry #{entry.pk}'s last change is not a decision of yours to undo.")
        within_undo_window(last.created_at, now, f"#{entry.pk}")
        verb = EventAction(last.action).label
        write_entry(
            entry,
            restored_from(last.before or {}, entry),
            expected_version=expected_version,
            action=EventAction.UNDO,
            actor=actor,
            reason=reason.strip() or f"undid \"{verb}\"",
            at=now,
        )
    return entry


def decided_words(entry: Entry, action: str) -> str:
    """What an approve or reject did, in words: a two-reviewer scope's first approval or disagreement says so."""
    if entry.status == Status.PENDING and entry.queue_reason == QueueReason.NEEDS_LEAD:
        return "sent to a lead: another reviewer approved it"
    if entry.status == Status.PENDING and entry.first_approval_by_id:
        return "approved, 1 of 2: a second reviewer activates it"
    return f"{action}d" if action.endswith("e") else f"{action}ed"  # approved, rejected


@dataclass(frozen=True)
class BulkOutcome:
    entry_id: int
    ok: bool
    message: str
    entry: Entry | None = None


def bulk_decide(items: list[tuple[int, int]], *, actor, action: str, reason: str = "", at=None) -> list[BulkOutcome]:
    """Approve or reject many (entry id, version) pairs. Each is its own decision and Event, so one
    stale or out-of-scope card never blocks the others."""
    if action not in ("approve", "reject"):
        raise ValidationError({"action": ["Bulk actions are approve or reject."]})
    if action == "reject" and not (reason or "").strip():
        raise ValidationError({"reason": ["Say why they are rejected."]})
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on candidates.")
    outcomes = []
    for entry_id, version in items:
        try:
            if action == "approve":
                entry = approve_candidate(entry_id, actor=actor, expected_version=version, reason=reason, at=at)
            else:
                entry = reject_candidate(entry_id, actor=actor, expected_version=version, reason=reason, at=at)
            outcomes.append(BulkOutcome(entry_id, True, decided_words(entry, action), entry))
        except Entry.DoesNotExist:
            outcomes.append(BulkOutcome(entry_id, False, "not found"))
        except (StaleDecision, InvalidTransition, ForgetInProgress) as exc:  # each card its own: the others stay
            outcomes.append(BulkOutcome(entry_id, False, str(exc)))
    return outcomes


def undo_bulk(items: list[tuple[int, int]], *, actor, at=None) -> list[BulkOutcome]:
    """Take back a bulk action: each (entry id, the version its decision left) is undone as undo_decision
    undoes one decision, with an "undo" Event of its own. Only what is still the actor's last decision on
    its entry, within UNDO_SECONDS, is taken back; an entry changed since (by anyone, the actor's own Undo
    of that card included) is reported as not undone and left as it is."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on candidates.")
    now = at or clock.now()  # one moment for the whole bulk: its decisions are all in the window or all out
    outcomes = []
    for entry_id, version in items:
        try:
            entry = undo_decision(entry_id, actor=actor, expected_version=version, at=now)
            outcomes.append(BulkOutcome(entry_id, True, "back in the queue", entry))
        except Entry.DoesNotExist:
            outcomes.append(BulkOutcome(entry_id, False, "not found"))
        except StaleDecision as exc:
            outcomes.append(BulkOutcome(entry_id, False, _changed_since(exc, actor)))
        except (InvalidTransition, ForgetInProgress) as exc:
            outcomes.append(BulkOutcome(entry_id, False, str(exc)))
    return outcomes


def _changed_since(stale: StaleDecision, actor) -> str:
    """Why a card of a bulk was not undone: already undone by the actor, or what others did since."""
    first = stale.changes[0] if stale.changes else None
    if first is not None and first.actor_id == actor.pk and first.action == EventAction.UNDO:
        return f"already undone; #{stale.entry.pk} was left as it is now"
    return str(stale)
