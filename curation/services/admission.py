"""Admission at ingest: the policy governing a new candidate's scope decides on it (unless people do), in the
submission's transaction. (A lead sets a prefix's policy as a scope policy: services/scope_policies.py.)"""

from __future__ import annotations

from curation import admission
from curation.models import Entry, EventAction, Status
from curation.selectors import admission_policies

from .entry_writes import write_entry


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
