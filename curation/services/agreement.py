"""How many reviewers a scope's candidates need: a lead's decision, with its Event."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from curation import access, agreement, clock
from curation.models import EventAction, ReviewRule
from curation.permissions import SET_REVIEW_RULES

from .events import record_event


def set_review_rule(prefix: str, *, approvals, actor, reason: str = "", at=None) -> ReviewRule:
    """Candidates under `prefix` need `approvals` (1 or 2) reviewers' approval from now on; the longest
    matching prefix wins. A scoped lead sets rules only inside their scopes."""
    if not actor.has_perm(SET_REVIEW_RULES):
        raise PermissionDenied("Only a lead sets how many reviewers a scope needs.")
    errors = {}
    try:
        prefix = access.clean_scope((prefix or "").strip().rstrip("/"))
    except ValidationError as exc:
        errors["prefix"] = exc.messages
    if not errors and not prefix:
        errors["prefix"] = ["Name a scope prefix, e.g. acme/billing-api."]
    if not errors and not access.user_can_see_scope(actor, prefix):
        errors["prefix"] = ["You can only set the rule of a scope you review."]
    try:
        approvals = int(approvals)
    except (TypeError, ValueError):
        approvals = None
    if approvals not in agreement.APPROVALS_CHOICES:
        errors["approvals"] = ["1 or 2 approvals."]
    if errors:
        raise ValidationError(errors)
    now = at or clock.now()
    with transaction.atomic():
        rule = ReviewRule.objects.select_for_update().filter(prefix=prefix).first()
        before = {"prefix": prefix, "approvals": rule.approvals} if rule else None
        if rule is None:
            rule = ReviewRule.objects.create(prefix=prefix, approvals=approvals, updated_at=now)
        else:
            rule.approvals, rule.updated_at = approvals, now
            rule.save(update_fields=["approvals", "updated_at"])
        record_event(rule, actor=actor, action=EventAction.REVIEW_RULE_SET, reason=reason.strip(),
                     before=before, after={"prefix": prefix, "approvals": approvals}, at=now)
    return rule
