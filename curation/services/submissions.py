"""What an agent's submission becomes: a new candidate, or fresh evidence for the lesson it repeats.

Checks in order: fields (with secrets redacted first), the token's scopes, exact duplicates, then the
new candidate with its near-duplicate links and the conflicts it opens. An answer names only the near
duplicates and conflict partners the token may read."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Q

from curation.rules import access, clock, scope_policies
from curation.models import (
    ONE_PENDING_PER_FINGERPRINT,
    AgentToken,
    Conflict,
    Entry,
    EventAction,
    Evidence,
    ForgetRequest,
    Status,
)
from curation.selectors import admission_policies, embedding_dimensions, similar_active_entries_many
from curation.selectors.scope_policies import in_force
from curation.selectors.entries import as_answered
from curation.selectors.forgets import ForgetInProgress, tombstones_for, wait_for_forgetting
from curation.selectors.partners import batch_pools
from curation.selectors.sql import LIVE_BY_FINGERPRINT_SQL, LOCK_AS_AN_UPDATE

from .candidates import (
    PreparedCandidate,
    evidence_rows,
    insert_candidate_with_links,
    insert_links,
    new_candidate_entry,
    prepare_candidate,
    stored_evidence,
    submit_note,
)
from .admission import insert_decision, policy_decision
from .conflicts import detect_conflicts_for, detect_conflicts_many, weigh_contradictions
from .entry_writes import insert_entries
from .errors import Forgotten
from .events import build_event, record_events
from .held import answered_status, hold, weigh_tombstone_check, with_text
from .rows import insert_rows
from .trust import raise_trust
from .validation import unknown_fields

CANDIDATE_KEYS = frozenset(
    {
        "scope",
        "kind",
        "trigger",
        "content",
        "conditions",
        "boundary",
        "recheck_when",
        "review_by",
        "signal",
        "confidence",
        "source_task",
        "evidence",
        "embedding",
    }
)
EVIDENCE_KEYS = frozenset(
    {"kind", "signal", "source", "polarity", "excerpt", "task_ref", "observed_at", "evaluator", "score"}
)


@dataclass
class Submission:
    entry: Entry
    created: bool
    duplicate_of: int | None = None
    evidence_added: int = 0
    similar_ids: list[int] = field(default_factory=list)
    conflict_ids: list[int] = field(default_factory=list)
    flags: list[dict] = field(default_factory=list)
    answered: str | None = None  # a held submission's status as answered (None: read from its hold)

    def as_json(self) -> dict:
        shown = as_answered(self.entry, self.answered)  # a held submission answers as the candidate it would be
        return {
            "id": self.entry.pk,
            "status": shown.status,
            "created": self.created,
            "duplicate_of": self.duplicate_of,
            "evidence_added": self.evidence_added,
            "confidence": round(shown.confidence, 4),
            "duplicates": self.similar_ids,
            "conflicts": self.conflict_ids,
            "flags": self.flags,
        }


def _existing_duplicate(prepared: PreparedCandidate) -> Entry | None:
    """An active (or still pending, or held) entry of the same scope with the same normalised text, locked."""
    key = (prepared.fields["scope"], prepared.fingerprint)
    return _live_by_fingerprint({key}).get(key)


def _unknown_candidate_fields(item: dict) -> dict:
    errors = unknown_fields(item, CANDIDATE_KEYS)
    evidence = item.get("evidence")
    for index, piece in enumerate(evidence if isinstance(evidence, list) else []):
        if isinstance(piece, dict):
            errors.update(unknown_fields(piece, EVIDENCE_KEYS, f"evidence[{index}]."))
    return errors


def _resubmit_event(entry: Entry, prepared: PreparedCandidate, label: str, now):
    count = len(prepared.evidence)
    return build_event(
        entry,
        actor=None,
        actor_label=label,
        action=EventAction.RESUBMIT,
        reason=f"submitted again; {count} piece{'s' * (count != 1)} of evidence added"
        + "".join(f"; redacted {f.kind} in {f.field}" for f in prepared.findings),
        after={"evidence_added": count, "source_task": prepared.fields.get("source_task", "")},
        at=now,
    )


def _evidence_of(entry: Entry, prepared: PreparedCandidate, label: str, now) -> list[Evidence]:
    evidence, found = stored_evidence(prepared, entry.held_by if entry.held_by_id is not None else None)
    return evidence_rows(entry, evidence, label=label, now=now, sender=prepared.sender, found=found)


def _add_to_duplicate(entry: Entry, prepared: PreparedCandidate, label: str, now) -> int:
    rows = Evidence.objects.bulk_create(_evidence_of(entry, prepared, label, now))
    _resubmit_event(entry, prepared, label, now).save(force_insert=True)
    raise_trust(entry, rows, actor_label=label, at=now)  # another source saying it again may confirm it
    return len(prepared.evidence)


def _prepare_for(data, token: AgentToken) -> PreparedCandidate:
    if not isinstance(data, dict):
        raise ValidationError({"_": ["Each candidate is a JSON object."]})
    if errors := _unknown_candidate_fields(data):
        raise ValidationError(errors)
    data = dict(data)
    evidence = data.pop("evidence", [])
    prepared = prepare_candidate(data, evidence if evidence is not None else [], sender=token.trust_sender)
    scope = prepared.fields["scope"]
    if not access.token_covers(token, scope):
        raise PermissionDenied(f"This token may not write to scope {scope!r}.")
    embedding = prepared.fields.get("embedding")
    if embedding is not None and (dimensions := embedding_dimensions(scope)) not in (None, len(embedding)):
        raise ValidationError(
            {"embedding": [f"{dimensions} numbers in the scope tree of {scope} (this has {len(embedding)})."]}
        )
    return prepared


def submit_candidate(*, data: dict, token: AgentToken, at=None) -> Submission:
    """One candidate from an agent. Raises ValidationError (bad fields) or PermissionDenied (scope). One
    that repeats a forgotten lesson is held (services.held), and answered as any other."""
    prepared = _prepare_for(data, token)
    held_by = _holding_requests([prepared])[0]
    now = at or clock.now()
    try:
        with transaction.atomic():
            return _submit_prepared(prepared, token, now, held_by)
    except Forgotten as exc:
        # A forget approved between this submission's look at the tombstones and its insert (the write
        # path's own check caught it): held as well, so the answer is still a new candidate's.
        held_by = ForgetRequest.objects.get(pk=exc.request_id)
    except ForgetInProgress:
        wait_for_forgetting()  # one being approved: its tombstones decide once it is written
        held_by = _holding_requests([prepared])[0]
    except IntegrityError as exc:
        if not _lost_to_a_pending_twin(exc):
            raise
    # The same lesson, sent at the same moment, was inserted by another submission between this one's
    # check and its insert (the database kept the second out): written again, it is that one's duplicate.
    with transaction.atomic():
        return _submit_prepared(prepared, token, now, held_by)


def _holding_requests(prepared: list[PreparedCandidate]) -> list[ForgetRequest | None]:
    """For each prepared candidate, the forget request whose tombstone it matches (it will be held), or
    None: the tombstones of the whole batch in one query, the requests in one more when any matched."""
    stones = tombstones_for([(p.fields["scope"], p.fields["trigger"], p.fields["content"]) for p in prepared])
    wanted = {stone.request_id for stone in stones if stone is not None}
    requests = ForgetRequest.objects.in_bulk(wanted) if wanted else {}
    return [requests[stone.request_id] if stone is not None else None for stone in stones]


def _holding_by_index(prepared: list[tuple[int, PreparedCandidate]]) -> dict[int, ForgetRequest | None]:
    """_holding_requests of a batch's prepared items, by their index in the batch."""
    return dict(zip((index for index, _ in prepared), _holding_requests([p for _, p in prepared])))


def _lost_to_a_pending_twin(exc: IntegrityError) -> bool:
    """Was the insert refused because the same lesson already waits for review in its scope? PostgreSQL
    names the constraint; SQLite names its columns."""
    message = str(exc)
    return ONE_PENDING_PER_FINGERPRINT in message or "curation_entry.scope, curation_entry.fingerprint" in message


def _submit_prepared(
    prepared: PreparedCandidate, token: AgentToken, now, held_by: ForgetRequest | None = None
) -> Submission:
    existing = _existing_duplicate(prepared)
    if existing is not None:
        added = _add_to_duplicate(existing, prepared, token.label, now)
        return Submission(existing, created=False, duplicate_of=existing.pk, evidence_added=added, flags=prepared.flags)
    entry, similar_ids = insert_candidate_with_links(
        prepared, actor_label=token.label, at=now, held_by=held_by, admit=True
    )
    answered = None
    if held_by is None:
        conflicts = detect_conflicts_for(entry, detected_by="ingest", at=now)
    else:
        conflicts = []
        weigh_contradictions([with_text(entry, prepared.fields)])
        answered = answered_status(
            policy_decision(
                entry.scope,
                prepared.evidence,
                policies=admission_policies(),
                review_rules=in_force(scope_policies.REVIEW),
            )[1]
        )
        hold([entry], answered={entry.pk: answered}, now=now)
    return _named_for(
        token,
        [
            Submission(
                entry,
                created=True,
                evidence_added=len(prepared.evidence),
                similar_ids=similar_ids,
                conflict_ids=_conflicts_with_readable_partners(token, entry, conflicts),
                flags=prepared.flags,
                answered=answered,
            )
        ],
    )[0]


def _conflicts_with_readable_partners(token: AgentToken, entry: Entry, conflicts: list[Conflict]) -> list[int]:
    """The conflicts an answer names: those whose other entry the token may read."""
    return [
        c.pk
        for c in conflicts
        if access.token_covers(token, (c.entry_b if c.entry_a_id == entry.pk else c.entry_a).scope)
    ]


def _named_for(token: AgentToken, submissions: list[Submission]) -> list[Submission]:
    """Cut the near duplicates an answer names to those the token may read: one in a scope it does not
    cover (an ancestor scope, say) stays unnamed, as it is to a GET by id. The links themselves stay, for
    the reviewers who may read both. One query for all the submissions, none when the token covers the top
    of each one's scope (then it reads every scope a near duplicate can be in: the ancestors, the scope
    itself and below it)."""
    unsure = [
        s
        for s in submissions
        if s.similar_ids and not access.token_covers(token, access.scope_ancestors(s.entry.scope)[0])
    ]
    named = {pk for s in unsure for pk in s.similar_ids}
    readable = set(
        Entry.objects.filter(access.token_scope_q(token), pk__in=named).values_list("pk", flat=True) if named else ()
    )
    for submission in unsure:
        submission.similar_ids = [pk for pk in submission.similar_ids if pk in readable]
    return submissions


def _refusal(index: int, exc: Exception) -> dict:
    if isinstance(exc, PermissionDenied):
        return {"index": index, "ok": False, "status": 403, "errors": {"scope": [str(exc)]}}
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"_": exc.messages}
    return {"index": index, "ok": False, "status": 422, "errors": errors}


def submit_batch(*, items: list, token: AgentToken, at=None) -> list[dict]:
    """Many candidates, one result per item in order. Each item is checked on its own (a bad one is
    refused, the others go on); the good ones are then written together: one lookup for exact
    duplicates, one insert per table, then per new entry its near-duplicate links and conflicts."""
    now = at or clock.now()
    results: list[dict | None] = [None] * len(items)
    prepared: list[tuple[int, PreparedCandidate]] = []
    for index, item in enumerate(items):
        try:
            prepared.append((index, _prepare_for(item, token)))
        except (ValidationError, PermissionDenied) as exc:
            results[index] = _refusal(index, exc)
    # A lesson that repeats a forgotten one is held, and answered as the others.
    held_by = _holding_by_index(prepared)
    if prepared:
        try:
            try:
                with transaction.atomic():
                    written = _write_batch(prepared, token, now, held_by)
            except (Forgotten, ForgetInProgress, RepeatedLessonMoved) as exc:
                # A forget approved meanwhile (see submit_candidate), or a lesson the batch repeats changed
                # under it: look again, once.
                if isinstance(exc, ForgetInProgress):
                    wait_for_forgetting()
                held_by = _holding_by_index(prepared)
                with transaction.atomic():
                    written = _write_batch(prepared, token, now, held_by)
        except (DatabaseError, RepeatedLessonMoved):
            # Something only the database could refuse, or a repeated lesson that changed twice: write item by
            # item, so that it stays that item's.
            written = {}
            for index, _ in prepared:
                try:
                    with transaction.atomic():
                        written[index] = submit_candidate(data=items[index], token=token, at=now)
                except (ValidationError, PermissionDenied, Forgotten) as exc:  # Forgotten: a write it makes
                    results[index] = _refusal(index, exc)
                except DatabaseError as exc:
                    results[index] = {"index": index, "ok": False, "status": 409, "errors": {"_": [str(exc)[:200]]}}
        for index, submission in written.items():
            results[index] = {"index": index, "ok": True, **submission.as_json()}
    return results


class RepeatedLessonMoved(Exception):
    """An entry a batch repeats was no longer its text's live entry when the batch came to lock it."""


def _live_by_fingerprint(keys: set[tuple[str, str]], *, lock: bool = True) -> dict[tuple[str, str], Entry]:
    """The live entry (active before pending, then held, then oldest) of each (scope, fingerprint), locked
    unless told not to: on PostgreSQL one index probe per key (LIVE_BY_FINGERPRINT_SQL). A held submission
    counts as the pending candidate its agent was told it is: sent again, it gets the evidence as a pending one
    would."""
    live = [Status.ACTIVE, Status.PENDING]
    if connection.vendor == "postgresql":
        scopes, fingerprints = zip(*keys) if keys else ((), ())
        sql = LIVE_BY_FINGERPRINT_SQL + (LOCK_AS_AN_UPDATE if lock else "")
        rows = Entry.objects.raw(sql, [list(scopes), list(fingerprints), live])
    else:  # one writer at a time (IMMEDIATE transactions): nothing to lock
        rows = Entry.objects.filter(
            Q(status__in=live) | Q(held_by__isnull=False), fingerprint__in={f for _, f in keys}
        ).order_by("status", "id")
    found: dict[tuple[str, str], Entry] = {}
    for entry in rows:  # "active" sorts before "pending": the first one of a key is kept
        if (entry.scope, entry.fingerprint) in keys:
            found.setdefault((entry.scope, entry.fingerprint), entry)
    return found


def _write_batch(prepared, token: AgentToken, now, held_by: dict[int, ForgetRequest | None]) -> dict[int, Submission]:
    label = token.label
    # Read, not locked: the entries the batch repeats are locked once the rest of it is written (_locked_again),
    # so that two batches repeating one lesson wait for each other only for its evidence and the commit.
    existing = _live_by_fingerprint({(p.fields["scope"], p.fingerprint) for _, p in prepared}, lock=False)
    new_entries, duplicates, first_in_batch = [], [], {}
    for index, p in prepared:
        key = (p.fields["scope"], p.fingerprint)
        if key in existing:
            duplicates.append((index, p, existing[key]))
        elif key in first_in_batch:  # the same lesson twice in one batch: the second adds its evidence
            duplicates.append((index, p, first_in_batch[key]))
        else:
            entry = new_candidate_entry(p, actor_label=label, now=now, held_by=held_by.get(index))
            first_in_batch[key] = entry
            new_entries.append((index, p, entry))
    # The admission policy decides before the insert (once the detector read the text), so that a candidate
    # it approves or rejects is written once.
    policies, rules = (admission_policies(), in_force(scope_policies.REVIEW)) if new_entries else ([], {})
    evidence_of = {id(entry): p.evidence for _, p, entry in new_entries}
    insert_entries(
        [(entry, submit_note(p)) for _, p, entry in new_entries],
        action=EventAction.SUBMIT,
        at=now,
        actor_label=label,
        decide=lambda entry, note: insert_decision(
            entry, evidence_of[id(entry)], submitter=label, note=note, policies=policies, rules=rules
        ),
    )
    links, submissions = [], {}
    # Conflict partners of the batch's scopes, read once (None on PostgreSQL, whose statements read each
    # entry's ranked pools for the whole batch); near duplicates through their band keys, for the batch.
    pools = batch_pools({entry.scope for _, _, entry in new_entries})
    similar_by_entry = similar_active_entries_many(
        entry if entry.held_by_id is None else with_text(entry, p.fields) for _, p, entry in new_entries
    )
    conflicts_by_entry = {entry.pk: [] for _, _, entry in new_entries}
    conflicts_by_entry.update(
        detect_conflicts_many(
            [entry for _, _, entry in new_entries if entry.held_by_id is None],
            detected_by="ingest",
            at=now,
            pools=pools,
        )
    )
    held_probes = [with_text(entry, p.fields) for _, p, entry in new_entries if entry.held_by_id is not None]
    weigh_contradictions(held_probes, pools=pools)
    weigh_tombstone_check(held_probes)
    for index, p, entry in new_entries:
        similar = similar_by_entry[entry.pk]
        links += [(entry.pk, other_id, score) for other_id, score in similar]
        submissions[index] = Submission(
            entry,
            created=True,
            evidence_added=len(p.evidence),
            similar_ids=[other_id for other_id, _ in similar],
            conflict_ids=_conflicts_with_readable_partners(token, entry, conflicts_by_entry[entry.pk]),
            flags=p.flags,
        )
    insert_links(links)
    held, answered = [], {}
    for index, p, entry in new_entries:
        if entry.held_by_id is not None:
            held.append(entry)
            answered[entry.pk] = submissions[index].answered = answered_status(
                policy_decision(entry.scope, p.evidence, policies=policies, review_rules=rules)[1]
            )
    hold(held, answered=answered, now=now)
    _named_for(token, list(submissions.values()))
    duplicates = _locked_again(duplicates, existing)
    evidence, rows_of = [], {}  # rows_of: each entry's new rows, by the entry object's id
    for _, p, entry in new_entries + duplicates:
        rows = _evidence_of(entry, p, label, now)
        evidence += rows
        rows_of.setdefault(id(entry), []).extend(rows)
    insert_rows(evidence)
    record_events(_resubmit_event(entry, p, label, now) for _, p, entry in duplicates)
    repeated = {id(entry): entry for _, _, entry in duplicates if entry.pk is not None}
    for key, entry in repeated.items():  # another source saying a lesson again may confirm it
        raise_trust(entry, rows_of[key], actor_label=label, at=now)
    for index, p, entry in duplicates:
        submissions[index] = Submission(
            entry, created=False, duplicate_of=entry.pk, evidence_added=len(p.evidence), flags=p.flags
        )
    return submissions


def _locked_again(duplicates: list, read: dict[tuple[str, str], Entry]) -> list:
    """`duplicates` (index, prepared, entry), each entry the batch `read` as its text's live entry now locked
    and as it is now. Raises RepeatedLessonMoved when one no longer is (rejected, archived or forgotten
    meanwhile): the batch is then written again from a fresh read."""
    keys = {(p.fields["scope"], p.fingerprint) for _, p, _ in duplicates} & read.keys()
    locked = _live_by_fingerprint(keys) if keys else {}
    if any(key not in locked or locked[key].pk != read[key].pk for key in keys):
        raise RepeatedLessonMoved
    return [(index, p, locked.get((p.fields["scope"], p.fingerprint), entry)) for index, p, entry in duplicates]
