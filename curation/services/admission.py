"""Admission policies: a lead sets the policy of a scope prefix; at ingest, the policy governing a new
candidate's scope decides on it (unless people do). Each is one transaction with its Event."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from curation import access, admission, agreement
from curation.models import AdmissionPolicy, Entry, EventAction, Status
from curation.permissions import PUBLISH
from curation.selectors import admission_policies
from curation.selectors.agreement import review_rules

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


def policy_decision(scope: str, evidence: list[dict], *, policies, review_rules) -> tuple[admission.Policy | None,
                                                                                       admission.Decision | None]:
    """The governing policy of `scope` and its decision as it stands under the scope's review rule
    (admission.standing: two reviewers win over an automatic approval). What a held submission is answered
    with too, so that its answer never differs from a fresh one's."""
    policy = admission.governing(policies, scope)
    decision = admission.decide(policy, evidence) if policy else None
    return policy, admission.standing(decision, agreement.approvals_required(scope, review_rules))


def admit_by_policy(entry: Entry, evidence: list[dict], *, at, policies=None, rules=None) -> admission.Decision | None:
    """The automatic decision on a new pending candidate, in the submission's transaction, after every other
    check of the submission: approved or rejected by `policy:<name>` with the rule as its reason. None when
    people decide (no policy, manual, or an approval in a scope that needs two reviewers). A batch reads the
    `policies` and the review `rules` once and passes them."""
    policy, decision = policy_decision(entry.scope, evidence,
                                       policies=admission_policies() if policies is None else policies,
                                       review_rules=review_rules() if rules is None else rules)
    if decision is None or entry.status != Status.PENDING:
        return None
    write_entry(entry, {}, action=EventAction.APPROVE if decision.approve else EventAction.REJECT,
                actor_label=policy.actor_label, reason=decision.reason, at=at)
    return decision
