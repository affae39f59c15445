"""Admission at ingest: the policy governing a new candidate's scope decides on it (unless people do), before
it is inserted: the insert is the decision (one write, one Event). (A lead sets a prefix's policy as a scope
policy: services/scope_policies.py.)"""

from __future__ import annotations

from curation.rules import admission, scope_policies
from curation.models import Entry, EventAction, Status
from curation.selectors import admission_policies
from curation.selectors.scope_policies import in_force


def policy_decision(
    scope: str, evidence: list[dict], *, policies, review_rules
) -> tuple[admission.Policy | None, admission.Decision | None]:
    """The governing policy of `scope` and its decision as it stands under the scope's review rule
    (admission.standing: two reviewers win over an automatic approval). What a held submission is answered
    with too, so that its answer never differs from a fresh one's."""
    policy = admission.governing(policies, scope)
    decision = admission.decide(policy, evidence) if policy else None
    return policy, admission.standing(decision, scope_policies.approvals_required(scope, review_rules))


def insert_decision(
    entry: Entry, evidence: list[dict], *, submitter: str, note: str, policies=None, rules=None
) -> tuple[EventAction, str, str]:
    """The automatic decision on a new candidate, made before it is inserted, so that it is written once:
    (the insert's action, its actor's label, its reason). Approved or rejected by `policy:<name>` with the
    rule as the reason (the entry's status set here; the write path applies the rest of the decision),
    or submitted by `submitter` for people to decide (no policy, manual, an approval in a scope that needs
    two reviewers, a possible injection that only a lead approves, a held submission). A batch reads the
    `policies` and the review `rules` once and passes them."""
    if entry.held_by_id is None and entry.status == Status.PENDING:
        policy, decision = policy_decision(
            entry.scope,
            evidence,
            policies=admission_policies() if policies is None else policies,
            review_rules=in_force(scope_policies.REVIEW) if rules is None else rules,
        )
        if decision is not None and not (decision.approve and entry.quarantined):
            entry.status = Status.ACTIVE if decision.approve else Status.REJECTED
            reason = "; ".join(part for part in (decision.reason, note) if part)
            return (EventAction.APPROVE if decision.approve else EventAction.REJECT), policy.actor_label, reason
    return EventAction.SUBMIT, submitter, note
