"""Admission at ingest: the policy governing a new candidate's scope decides on it (unless people do), in the
submission's transaction. (A lead sets a prefix's policy as a scope policy: services/scope_policies.py.)"""

from __future__ import annotations

from curation.rules import admission, scope_policies
from curation.models import Entry, EventAction, Status
from curation.selectors import admission_policies
from curation.selectors.scope_policies import in_force

from .entry_writes import write_entry


def policy_decision(
    scope: str, evidence: list[dict], *, policies, review_rules
) -> tuple[admission.Policy | None, admission.Decision | None]:
    """The governing policy of `scope` and its decision as it stands under the scope's review rule
    (admission.standing: two reviewers win over an automatic approval). What a held submission is answered
    with too, so that its answer never differs from a fresh one's."""
    policy = admission.governing(policies, scope)
    decision = admission.decide(policy, evidence) if policy else None
    return policy, admission.standing(decision, scope_policies.approvals_required(scope, review_rules))


def admit_by_policy(entry: Entry, evidence: list[dict], *, at, policies=None, rules=None) -> admission.Decision | None:
    """The automatic decision on a new pending candidate, in the submission's transaction, after every other
    check of the submission: approved or rejected by `policy:<name>` with the rule as its reason. None when
    people decide (no policy, manual, or an approval in a scope that needs two reviewers). A batch reads the
    `policies` and the review `rules` once and passes them."""
    policy, decision = policy_decision(
        entry.scope,
        evidence,
        policies=admission_policies() if policies is None else policies,
        review_rules=in_force(scope_policies.REVIEW) if rules is None else rules,
    )
    if decision is None or entry.status != Status.PENDING:
        return None
    if decision.approve and entry.quarantined:
        return None  # a possible injection: only a lead approves it (the write path would refuse the policy)
    write_entry(
        entry,
        {},
        action=EventAction.APPROVE if decision.approve else EventAction.REJECT,
        actor_label=policy.actor_label,
        reason=decision.reason,
        at=at,
    )
    return decision
