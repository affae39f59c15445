"""A lead sets a scope prefix's setting of one kind (how many reviewers its candidates need, its holdout, its
admission policy): one function, the same checks and errors for every kind, one transaction with its Event.
Where the setting makes a two-reviewer rule and an automatic admission policy govern the same scopes, the lead
is told (the two-reviewer rule wins there), in the answer and in the Event's reason."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from curation.rules import access, clock, scope_policies
from curation.models import EventAction, ScopePolicy
from curation.rules.permissions import SET_SCOPE_POLICIES
from curation.rules.scope_policies import ADMISSION, HOLDOUT, REVIEW
from curation.selectors.scope_policies import in_force

from .events import record_event

# One Event action per kind: the history's stored words stay what they were.
ACTIONS = {
    REVIEW: EventAction.REVIEW_RULE_SET,
    HOLDOUT: EventAction.HOLDOUT_SET,
    ADMISSION: EventAction.ADMISSION_POLICY_SET,
}


@dataclass(frozen=True)
class PolicySet:
    policy: ScopePolicy
    changed: bool  # False: the prefix already had this value; nothing was written
    warnings: tuple[str, ...] = ()

    @property
    def described(self) -> str:
        return scope_policies.describe(self.policy.kind, self.policy.prefix, self.policy.value)


def set_scope_policy(kind: str, *, data: dict, actor, reason: str = "", at=None) -> PolicySet:
    """Set the `kind` setting of `data["prefix"]` to the value in `data` (the kind's fields, as
    scope_policies.clean reads them). Leads only (PermissionDenied), within their scopes (PermissionDenied);
    a bad field is a ValidationError naming it. Setting the value a prefix already has writes nothing."""
    if kind not in ACTIONS:
        raise ValidationError({"kind": [f"One of: {', '.join(ACTIONS)}."]})
    if not actor.has_perm(SET_SCOPE_POLICIES):
        raise PermissionDenied(f"Only a lead sets {scope_policies.KIND_LABELS[kind]}s.")
    prefix, value = scope_policies.clean(kind, data)
    if not access.user_can_see_scope(actor, prefix):
        raise PermissionDenied(
            f"You can only set a {scope_policies.KIND_LABELS[kind]} within your scopes; {prefix} is outside them."
        )
    now = at or clock.now()
    with transaction.atomic():
        policy, created = ScopePolicy.objects.select_for_update().get_or_create(
            kind=kind,
            prefix=prefix,
            defaults={"value": value, "updated_at": now, "updated_by_label": actor.get_username()},
        )
        if not created and policy.value == value:
            return PolicySet(policy, changed=False)
        before = None if created else policy.shown
        if not created:
            policy.value, policy.version = value, policy.version + 1
            policy.updated_at, policy.updated_by_label = now, actor.get_username()
            policy.save(update_fields=["value", "version", "updated_at", "updated_by_label"])
        warnings = (
            ()
            if kind == HOLDOUT
            else tuple(scope_policies.precedence_warnings(kind, prefix, in_force(REVIEW), in_force(ADMISSION)))
        )
        said = reason.strip() or scope_policies.describe(kind, prefix, value)
        record_event(
            policy,
            actor=actor,
            action=ACTIONS[kind],
            before=before,
            after=policy.shown,
            reason=" ".join((said, *warnings)),
            at=now,
        )
    return PolicySet(policy, changed=True, warnings=warnings)
