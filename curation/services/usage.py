"""What agents did with memory: the retrievals they were given and the outcomes they reported.

Outcomes drive the confidence of the lessons a task used. Under the default rule (lift.py) each lesson is
judged against the baseline: its confidence moves with its share of the change in its estimated lift, a
lift above zero at 95% verifies it, one below zero at 95% sends it to a person for a recheck with the
figures. Under the design notes' rule ("steps", lifecycle.after_success / after_failure) a success
re-verifies it, a failure lowers it and sends it back to the candidates queue."""

from __future__ import annotations

import copy
import datetime
import os
import uuid
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from curation.rules import clock, injection, lifecycle, lift, trust
from curation.rules.config import RECHECK_ON_FAILURE
from curation.rules.redaction import redact
from curation.models import (
    AgentToken,
    Arm,
    Entry,
    EventAction,
    Evidence,
    Feedback,
    QueueReason,
    Retrieval,
    RetrievedEntry,
    Signal,
    Status,
)
from curation.selectors.evaluation import lift_counts

from . import retrieval_buffer
from .entry_writes import count_retrieval, entry_row, insert_counted_retrieval, write_entries
from .evaluation import tally_outcome
from .trust import pieces as trust_pieces


def time_ordered_id(at) -> uuid.UUID:
    """A retrieval's id, made by the read itself (feedback can name it before any row exists): a UUID of
    version 7 (RFC 9562), whose first 48 bits are `at` in Unix milliseconds and whose other 74 are random.
    Ids then sort with their reads' times, so the primary key's index grows at its right edge instead of
    splitting pages everywhere, and ranges of ids are ranges of time (what partitions by month need)."""
    ms = int(at.timestamp() * 1000)
    if not 0 <= ms < 1 << 48:
        raise ValueError(f"no time-ordered id for {at!r}")
    value = ms << 80 | int.from_bytes(os.urandom(10), "big")
    value = value & ~(0xF << 76) | 0x7 << 76  # the version
    value = value & ~(0x3 << 62) | 0x2 << 62  # the variant of RFC 9562
    return uuid.UUID(int=value)


def record_retrieval(
    *,
    token: AgentToken,
    scope: str,
    query: str,
    task_ref: str,
    entries,
    at=None,
    memory_version: int | None = None,
    arm: str = Arm.MEMORY,
) -> Retrieval:
    """Remember what the agent was given, from which published memory version and in which arm of the
    holdout (feedback refers to it), and count the retrieval on each entry: in Redis for the worker to write
    in a batch where reads are buffered (retrieval_buffer), else at once."""
    now = at or clock.now()
    ids = [e.pk for e in entries]
    # An agent may paste anything into its query. Redacted whole, then cut to the column: a secret cut
    # first could lose the part a detector needs, and its rest would be stored.
    query, _ = redact(query, "q")
    task_ref, _ = redact(task_ref, "task_ref")
    retrieval = Retrieval(
        id=time_ordered_id(now),
        token=token,
        scope=scope,
        query=query[:2000],
        task_ref=task_ref[:255],
        entry_ids=ids,
        memory_version=memory_version,
        arm=arm,
        created_at=now,
    )
    if retrieval_buffer.buffering() and retrieval_buffer.buffer(retrieval):
        return retrieval  # written by the worker's flush; its id answers feedback already (record_feedback)
    if connection.vendor == "postgresql":
        insert_counted_retrieval(retrieval)
        return retrieval
    with transaction.atomic():
        retrieval.save(force_insert=True)
        RetrievedEntry.objects.bulk_create(
            RetrievedEntry(retrieval=retrieval, entry_id=pk, rank=rank, created_at=now) for rank, pk in enumerate(ids)
        )
        count_retrieval(ids, now)
    return retrieval


def _retrieval_of(token: AgentToken, retrieval_id) -> Retrieval:
    """The token's retrieval; one still buffered in Redis is written first (the flush of every record)."""
    for attempt in (1, 2):
        try:
            return Retrieval.objects.select_related("token").get(pk=retrieval_id, token=token)
        except (ValidationError, ValueError):
            break
        except Retrieval.DoesNotExist:
            if attempt == 1 and retrieval_buffer.buffering():
                retrieval_buffer.flush()
                continue
            break
    raise Retrieval.DoesNotExist


@dataclass
class FeedbackResult:
    feedback: Feedback
    recorded: bool  # False: this retrieval already had feedback, nothing changed
    changes: list[dict]


def _clean_feedback(retrieval: Retrieval, outcome, utility, used) -> tuple[str, float | None, list[int]]:
    errors = {}
    if outcome not in Feedback.Outcome.values:
        errors["outcome"] = ["success or failure."]
    if utility is not None and (
        isinstance(utility, bool) or not isinstance(utility, (int, float)) or not 0 <= utility <= 1
    ):
        errors["utility"] = ["A number from 0 to 1."]
    if used is None:
        used = list(retrieval.entry_ids)
    elif not isinstance(used, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in used):
        errors["used"] = ["A list of entry ids from this retrieval."]
    else:
        unknown = sorted(set(used) - set(retrieval.entry_ids))
        if unknown:
            errors["used"] = [f"Not given by this retrieval: {', '.join(map(str, unknown))}."]
        used = list(dict.fromkeys(used))
    if errors:
        raise ValidationError(errors)
    return outcome, (float(utility) if utility is not None else None), used


def _outcome_changes(
    entry: Entry, *, success: bool, utility: float, retrieval: Retrieval, now, rules, has_external: bool
) -> tuple[dict, str]:
    """The design notes' rule ("steps"): what an outcome changes on one entry the task used (field -> value),
    and its Event's reason."""
    changes = {
        "hit_count": entry.hit_count + 1,
        "utility_sum": entry.utility_sum + utility,
        "utility_n": entry.utility_n + 1,
    }
    if success:
        base = lifecycle.after_success(entry.base_confidence, has_external_support=has_external, rules=rules)
        changes.update(base_confidence=base, last_verified_at=now)
        reason = f"a task that used it succeeded (retrieval {retrieval.pk})"
    else:
        base = lifecycle.after_failure(entry.base_confidence, rules)
        changes.update(base_confidence=base)
        reason = f"a task that used it failed (retrieval {retrieval.pk})"
        if entry.status == Status.ACTIVE and entry.queued_at is None and RECHECK_ON_FAILURE.value:
            changes.update(queued_at=now, queue_reason=QueueReason.RECHECK_FAILURE)
            reason += "; sent back to the candidates queue for a recheck"
    if retrieval.task_ref:
        reason += f"; task {retrieval.task_ref}"
    return changes, reason


def _lift_changes(
    entry: Entry,
    *,
    success: bool,
    utility: float,
    retrieval: Retrieval,
    now,
    rules,
    has_external: bool,
    lifts: tuple[lift.Lift, lift.Lift],
    share: float,
    config: lift.LiftSettings,
) -> tuple[dict, str]:
    """The default rule: the entry judged against the baseline (lift.after_outcome). A lift above zero at
    95% verifies it (it may pass the self cap); one that falls below zero at 95% sends it to the candidates
    queue with the figures, so a person decides, whatever its confidence does."""
    before, after = lifts
    changes = {
        "hit_count": entry.hit_count + 1,
        "utility_sum": entry.utility_sum + utility,
        "utility_n": entry.utility_n + 1,
    }
    newly_verified = _newly_verified(success, after, has_external)
    cap = lifecycle.cap_for(has_external or newly_verified, rules)
    changes["base_confidence"] = lift.after_outcome(
        entry.base_confidence, before=before, after=after, share=share, gain=config.gain, cap=cap, rules=rules
    )
    reason = (
        f"a task that used it {'succeeded' if success else 'failed'} (retrieval {retrieval.pk}, its share "
        f"{share:.2f}); {after.text}"
    )
    if success and after.verdict != lift.HARMS:
        changes["last_verified_at"] = now
    if newly_verified:
        reason += "; verified by outcomes: its lift is above zero at 95% (recorded as its external evidence)"
    if (
        after.verdict == lift.HARMS
        and before.verdict != lift.HARMS
        and entry.status == Status.ACTIVE
        and entry.queued_at is None
    ):
        changes.update(queued_at=now, queue_reason=QueueReason.RECHECK_HARMFUL)
        reason += "; sent back to the candidates queue for a recheck: its lift is below zero at 95%"
    if retrieval.task_ref:
        reason += f"; task {retrieval.task_ref}"
    return changes, reason


def _newly_verified(success: bool, after: lift.Lift, has_external: bool) -> bool:
    """Does this outcome verify the entry? Its lift is above zero at 95% and nothing external supported it
    yet (`has_external` is known on a success, the outcome that raises a lift to "helps")."""
    return success and after.verdict == lift.HELPS and not has_external


def _lifts(
    entries: list[Entry], *, success: bool, retrieval: Retrieval, now, config: lift.LiftSettings
) -> dict[int, tuple[lift.Lift, lift.Lift]]:
    """Each entry's lift before and after this outcome (already tallied), from the tallies of the window:
    two aggregates whatever the number of entries."""
    since = now.date() - datetime.timedelta(days=config.window_days - 1)
    lessons, holdout, served = lift_counts([e.pk for e in entries], retrieval.scope, since=since)
    answers = {}
    for entry in entries:
        tasks, successes = lessons.get(entry.pk, (0, 0))
        tasks, successes = max(tasks, 1), max(successes, int(success))  # this outcome is in the tally
        without = lift.baseline((tasks, successes), holdout, served, min_tasks=config.min_tasks)
        of = lambda t, s: lift.estimate(
            t,
            s,
            *without,
            prior_tasks=config.prior_tasks,  # noqa: E731
            min_tasks=config.min_tasks,
        )
        answers[entry.pk] = (of(tasks - 1, successes - int(success)), of(tasks, successes))
    return answers


def _apply_outcome(
    entries: list[Entry], *, success: bool, utility: float, retrieval: Retrieval, now, external: set[int], share: float
) -> list[dict]:
    """Write the outcome on every entry the task used (locked, in pk order) in one bulk write, an Event
    each: on the path of every agent's report, one UPDATE for the six or so entries a task was given
    instead of a statement and an Event insert per entry."""
    rules = lifecycle.rules()
    config = lift.lift_settings()
    if config.rule == lift.LIFT:
        lifts = _lifts(entries, success=success, retrieval=retrieval, now=now, config=config) if entries else {}
        planned = {
            entry.pk: _lift_changes(
                entry,
                success=success,
                utility=utility,
                retrieval=retrieval,
                now=now,
                rules=rules,
                has_external=entry.pk in external,
                lifts=lifts[entry.pk],
                share=share,
                config=config,
            )
            for entry in entries
        }
    else:
        lifts = {}
        planned = {
            entry.pk: _outcome_changes(
                entry,
                success=success,
                utility=utility,
                retrieval=retrieval,
                now=now,
                rules=rules,
                has_external=entry.pk in external,
            )
            for entry in entries
        }
    verified = [
        entry
        for entry in entries
        if entry.pk in lifts and _newly_verified(success, lifts[entry.pk][1], entry.pk in external)
    ]
    if verified:  # the outcomes are external evidence for it now: it may pass the self cap
        rows = Evidence.objects.bulk_create(
            Evidence(
                entry=entry,
                kind=Evidence.EvidenceKind.TASK_OUTCOME,
                signal=Signal.EXTERNAL,
                # The server's own verdict over measured outcomes: a verification, which confirms the lesson
                # when the reporting token is not its author (trust.entry_trust).
                source=trust.Source.VERIFICATION,
                trust=trust.Trust.VERIFIED,
                excerpt=f"verified by outcomes: {lifts[entry.pk][1].text}",
                observed_at=now,
                recorded_by_label=retrieval.token.label,
                task_ref=retrieval.task_ref[:255],
                # The task reference is the agent's own text: screened as any piece's.
                injection_found=injection.evidence_found({"task_ref": retrieval.task_ref[:255]}),
                created_at=now,
            )
            for entry in verified
        )
        for row in rows:
            level, why = trust.entry_trust(row.entry.trust, trust_pieces([row]), author=row.entry.created_by_label)
            if level > row.entry.trust:
                changes, reason = planned[row.entry_id]
                planned[row.entry_id] = ({**changes, "trust": int(level)}, f"{reason}; trust {why}")
    write_entries(
        [entry_row(entry) for entry in entries],
        expected_status=None,
        action=EventAction.OUTCOME_SUCCESS if success else EventAction.OUTCOME_FAILURE,
        reason_of=lambda row: planned[row["id"]][1],
        actor_label=retrieval.token.label,
        at=now,
        updated_at=now,
        row_values={pk: changes for pk, (changes, _) in planned.items()},
    )
    answers = []
    for entry in entries:  # as loaded: the values before the outcome
        changes = planned[entry.pk][0]
        after = copy.copy(entry)
        for field, value in changes.items():
            setattr(after, field, value)
        answer = {
            "id": entry.pk,
            "confidence_before": round(entry.confidence_at(now), 4),
            "confidence": round(after.confidence_at(now), 4),
            "queued_for_recheck": (not success and after.queue_reason == QueueReason.RECHECK_FAILURE)
            or changes.get("queue_reason") == QueueReason.RECHECK_HARMFUL,
        }
        if entry.pk in lifts:
            answer["lift"] = lifts[entry.pk][1].as_json()
        answers.append(answer)
    return answers


def record_feedback(*, token: AgentToken, retrieval_id, outcome, utility=None, used=None, at=None) -> FeedbackResult:
    """The outcome of the task that used a retrieval. Once per retrieval: a repeat changes nothing.
    Without a utility, a success counts as 1 and a failure as 0 for history-based deletion. Every outcome
    is tallied for the holdout comparison; a holdout task was given no entry, so its outcome changes none."""
    retrieval = _retrieval_of(token, retrieval_id)
    used_reported = used is not None
    outcome, utility, used = _clean_feedback(retrieval, outcome, utility, used)
    now = at or clock.now()
    success = outcome == Feedback.Outcome.SUCCESS
    try:
        with transaction.atomic():
            feedback = Feedback.objects.create(
                retrieval=retrieval, outcome=outcome, utility=utility, used_entry_ids=used, created_at=now
            )
            if retrieval.arm == Arm.HOLDOUT:
                used = []  # given nothing, it used nothing: no confidence or utility moves on its outcome
            tally_outcome(retrieval, success=success, at=now, charged=used)
            # One query for the external support of every used entry (a success's cap depends on it).
            external = (
                set(
                    Evidence.objects.filter(entry_id__in=used, signal=Signal.EXTERNAL, polarity="supports").values_list(
                        "entry_id", flat=True
                    )
                )
                if success
                else set()
            )
            changes = _apply_outcome(
                list(Entry.objects.select_for_update().filter(pk__in=used).order_by("pk")),
                success=success,
                utility=utility if utility is not None else float(success),
                retrieval=retrieval,
                now=now,
                external=external,
                share=lift.share_of(len(used), used_reported),
            )
    except IntegrityError:
        return FeedbackResult(Feedback.objects.get(retrieval=retrieval), recorded=False, changes=[])
    return FeedbackResult(feedback, recorded=True, changes=changes)
