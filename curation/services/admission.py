"""Admission policies: a lead sets the policy of a scope prefix; at ingest, the policy governing a new
candidate's scope decides on it (unless people do). Each is one transaction with its Event."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from curation import access, admission
from curation.models import AdmissionPolicy, Entry, EventAction, Status
from curation.permissions import PUBLISH
from curation.selectors import admission_policies

from .entry_writes import write_entry
from .events import record_event


def set_admission_policy(*, data: dict, actor, at) -> AdmissionPolicy:
    """Create or change the policy of a prefix (leads only, within their scopes), with an Event saying
    what it was and what it is."""
    if not actor.has_perm(PUBLISH):
        raise PermissionDenied("Only leads set admission policies.")
    policy = admission.clean_policy(data)
    if not access.user_can_see_scope(actor, policy.prefix):
        raise PermissionDenied(f"You do not lead scope {policy.prefix!r}.")
    values = {"name": policy.name, "mode": policy.mode, "evaluator": policy.evaluator,
              "threshold": policy.threshold}
    with transaction.atomic():
        row = AdmissionPolicy.objects.select_for_update().filter(prefix=policy.prefix).first()
        before = _shown(row) if row else None
        if row is None:
            row = AdmissionPolicy(prefix=policy.prefix, updated_at=at, **values)
            row.save(force_insert=True)
        else:
            for name, value in values.items():
                setattr(row, name, value)
            row.version += 1
            row.updated_at = at
            row.save()
        record_event(row, actor=actor, action=EventAction.ADMISSION_POLICY_SET, before=before, after=_shown(row),
                     reason=f"{policy.prefix}: {policy.rule}", at=at)
    return row


def _shown(row: AdmissionPolicy) -> dict:
    return {"prefix": row.prefix, "name": row.name, "mode": row.mode, "evaluator": row.evaluator,
            "threshold": row.threshold, "version": row.version}


def admit_by_policy(entry: Entry, evidence: list[dict], *, at, policies=None) -> admission.Decision | None:
    """The automatic decision on a new pending candidate, in the submission's transaction, after every other
    check of the submission: approved or rejected by `policy:<name>` with the rule as its reason. None when
    people decide (no policy, or manual). A batch reads the `policies` once and passes them."""
    policy = admission.governing(admission_policies() if policies is None else policies, entry.scope)
    decision = admission.decide(policy, evidence) if policy else None
    if decision is None or entry.status != Status.PENDING:
        return None
    if decision.approve:
        changes = {"status": Status.ACTIVE, "queued_at": None, "queue_reason": "", "last_verified_at": at}
        action = EventAction.APPROVE
    else:
        changes = {"status": Status.REJECTED, "queued_at": None, "queue_reason": ""}
        action = EventAction.REJECT
    write_entry(entry, changes, action=action, actor_label=policy.actor_label, reason=decision.reason, at=at)
    return decision
