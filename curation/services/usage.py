"""What agents did with memory: the retrievals they were given and the outcomes they reported.

Outcomes drive the confidence rules of lifecycle.py: a success re-verifies the entry, a failure
lowers it and sends it back to the candidates queue for a recheck."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from curation import clock, lifecycle
from curation.redaction import redact
from curation.models import (
    AgentToken, Arm, Entry, EventAction, Evidence, Feedback, QueueReason, Retrieval, RetrievedEntry, Signal, Status,
)

from .entry_writes import count_retrieval, insert_counted_retrieval, write_entries
from .evaluation import tally_outcome


def record_retrieval(*, token: AgentToken, scope: str, query: str, task_ref: str, entries, at=None,
                     memory_version: int | None = None, arm: str = Arm.MEMORY) -> Retrieval:
    """Remember what the agent was given, from which published memory version and in which arm of the
    holdout (feedback refers to it), and count the retrieval on each entry."""
    now = at or clock.now()
    ids = [e.pk for e in entries]
    # An agent may paste anything into its query. Redacted whole, then cut to the column: a secret cut
    # first could lose the part a detector needs, and its rest would be stored.
    query, _ = redact(query, "q")
    task_ref, _ = redact(task_ref, "task_ref")
    retrieval = Retrieval(id=uuid.uuid4(), token=token, scope=scope, query=query[:2000], task_ref=task_ref[:255],
                          entry_ids=ids, memory_version=memory_version, arm=arm, created_at=now)
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


@dataclass
class FeedbackResult:
    feedback: Feedback
    recorded: bool              # False: this retrieval already had feedback, nothing changed
    changes: list[dict]


def _clean_feedback(retrieval: Retrieval, outcome, utility, used) -> tuple[str, float | None, list[int]]:
    errors = {}
    if outcome not in Feedback.Outcome.values:
        errors["outcome"] = ["success or failure."]
    if utility is not None and (isinstance(utility, bool) or not isinstance(utility, (int, float))
                                or not 0 <= utility <= 1):
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


def _outcome_changes(entry: Entry, *, success: bool, utility: float, retrieval: Retrieval, now, rules,
                     has_external: bool) -> tuple[dict, str]:
    """What an outcome changes on one entry the task used (field -> value), and its Event's reason."""
    changes = {"hit_count": entry.hit_count + 1, "utility_sum": entry.utility_sum + utility,
               "utility_n": entry.utility_n + 1}
    if success:
        base = lifecycle.after_success(entry.base_confidence, has_external_support=has_external, rules=rules)
        changes.update(base_confidence=base, last_verified_at=now)
        reason = f"a task that used it succeeded (retrieval {retrieval.pk})"
    else:
        base = lifecycle.after_failure(entry.base_confidence, rules)
        changes.update(base_confidence=base)
        reason = f"a task that used it failed (retrieval {retrieval.pk})"
        if entry.status == Status.ACTIVE and entry.queued_at is None and settings.CURATION["RECHECK_ON_FAILURE"]:
            changes.update(queued_at=now, queue_reason=QueueReason.RECHECK_FAILURE)
            reason += "; sent back to the candidates queue for a recheck"
    if retrieval.task_ref:
        reason += f"; task {retrieval.task_ref}"
    return changes, reason


def _apply_outcome(entries: list[Entry], *, success: bool, utility: float, retrieval: Retrieval, now,
                   external: set[int]) -> list[dict]:
    """Write the outcome on every entry the task used (locked, in pk order) in one bulk write, an Event
    each: on the path of every agent's report, one UPDATE for the six or so entries a task was given
    instead of a statement and an Event insert per entry."""
    rules = lifecycle.rules()
    planned = {entry.pk: _outcome_changes(entry, success=success, utility=utility, retrieval=retrieval, now=now,
                                          rules=rules, has_external=entry.pk in external)
               for entry in entries}
    write_entries(entries, expected_status=None,
                  action=EventAction.OUTCOME_SUCCESS if success else EventAction.OUTCOME_FAILURE,
                  reason_of=lambda e: planned[e.pk][1], actor_label=retrieval.token.label, at=now, updated_at=now,
                  row_values={pk: changes for pk, (changes, _) in planned.items()})
    answers = []
    for entry in entries:  # as loaded: the values before the outcome
        changes = planned[entry.pk][0]
        after = copy.copy(entry)
        for field, value in changes.items():
            setattr(after, field, value)
        answers.append({"id": entry.pk, "confidence_before": round(entry.confidence_at(now), 4),
                        "confidence": round(after.confidence_at(now), 4),
                        "queued_for_recheck": not success and after.queue_reason == QueueReason.RECHECK_FAILURE})
    return answers


def record_feedback(*, token: AgentToken, retrieval_id, outcome, utility=None, used=None, at=None) -> FeedbackResult:
    """The outcome of the task that used a retrieval. Once per retrieval: a repeat changes nothing.
    Without a utility, a success counts as 1 and a failure as 0 for history-based deletion. Every outcome
    is tallied for the holdout comparison; a holdout task was given no entry, so its outcome changes none."""
    try:
        retrieval = Retrieval.objects.select_related("token").get(pk=retrieval_id, token=token)
    except (Retrieval.DoesNotExist, ValidationError, ValueError):
        raise Retrieval.DoesNotExist from None
    outcome, utility, used = _clean_feedback(retrieval, outcome, utility, used)
    now = at or clock.now()
    success = outcome == Feedback.Outcome.SUCCESS
    try:
        with transaction.atomic():
            feedback = Feedback.objects.create(
                retrieval=retrieval, outcome=outcome, utility=utility, used_entry_ids=used, created_at=now
            )
            tally_outcome(retrieval, success=success, at=now)
            if retrieval.arm == Arm.HOLDOUT:
                used = []  # given nothing, it used nothing: no confidence or utility moves on its outcome
            # One query for the external support of every used entry (a success's cap depends on it).
            external = set(Evidence.objects.filter(entry_id__in=used, signal=Signal.EXTERNAL, polarity="supports")
                           .values_list("entry_id", flat=True)) if success else set()
            changes = _apply_outcome(
                list(Entry.objects.select_for_update().filter(pk__in=used).order_by("pk")), success=success,
                utility=utility if utility is not None else float(success), retrieval=retrieval, now=now,
                external=external)
    except IntegrityError:
        return FeedbackResult(Feedback.objects.get(retrieval=retrieval), recorded=False, changes=[])
    return FeedbackResult(feedback, recorded=True, changes=changes)
