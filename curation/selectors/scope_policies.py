"""Reads of the settings kept per scope prefix (review rules, holdout fractions, admission policies): the
server's settings as defaults (read here and nowhere else), the leads' ScopePolicy rows over them, and what
each kind's readers need from that, one query each; and the lead's page."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from curation.rules import access, admission, config, scope_policies
from curation.models import Event, ScopePolicy
from curation.rules.scope_policies import ADMISSION, HOLDOUT, KINDS, REVIEW

HISTORY_SHOWN = 30


def defaults(kind: str) -> dict[str, dict]:
    """Prefix -> value of `kind` from the server's settings (curation/rules/config.py): the defaults a lead's row
    replaces."""
    if kind == REVIEW:
        return scope_policies.review_defaults(config.TWO_REVIEWER_SCOPES.value)
    if kind == HOLDOUT:
        return scope_policies.holdout_defaults(config.HOLDOUT_FRACTIONS.value, config.RULES_ONLY_FRACTIONS.value)
    return scope_policies.admission_defaults(
        {
            prefix: {"name": p.name, "mode": p.mode, "evaluator": p.evaluator, "threshold": p.threshold}
            for prefix, p in config.CURATION_ADMISSION.value.items()
        }
    )


def in_force(kind: str) -> dict[str, dict]:
    """Prefix -> value of every `kind` setting in force: the defaults, a lead's row over its prefix. 1 query."""
    rows = ScopePolicy.objects.filter(kind=kind).values_list("prefix", "value")
    return scope_policies.in_force(defaults(kind), rows)


def review_rules() -> dict[str, int]:
    """Scope prefix -> approvals required (1 or 2)."""
    return {prefix: value["approvals"] for prefix, value in in_force(REVIEW).items()}


def approvals_required(scope: str) -> int:
    return scope_policies.approvals_required(scope, in_force(REVIEW))


def holdout_fractions() -> dict[str, tuple[float, float]]:
    """Scope prefix -> (holdout, people's rules only) shares."""
    return {prefix: (value["fraction"], value["rules_only"]) for prefix, value in in_force(HOLDOUT).items()}


def admission_policies() -> list[admission.Policy]:
    """Every admission policy in force, one per prefix, by prefix."""
    return [scope_policies.admission_policy(prefix, value) for prefix, value in sorted(in_force(ADMISSION).items())]


# --- the lead's page ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyRow:
    kind: str
    prefix: str
    value: dict
    source: str  # "setting" or "set by a lead"
    updated_at: datetime.datetime | None = None
    updated_by_label: str = ""
    version: int | None = None

    @property
    def shown(self) -> str:
        return scope_policies.shown(self.kind, self.value)

    @property
    def approvals(self) -> int | None:
        return self.value.get("approvals")

    @property
    def rule(self) -> str:
        """An admission policy's rule in words."""
        return scope_policies.admission_policy(self.prefix, self.value).rule if self.kind == ADMISSION else ""


@dataclass(frozen=True)
class Overlap:
    """A two-reviewer rule and an automatic admission policy governing some scopes together."""

    review_prefix: str
    admission_prefix: str
    note: str


def policy_rows(user) -> dict[str, list[PolicyRow]]:
    """Kind -> the settings in force that concern the user's scopes (a setting under one of them, or above
    it, which governs it too), by prefix. 1 query, 1 more for the user's scopes."""
    rows = {
        kind: {prefix: PolicyRow(kind, prefix, value, "setting") for prefix, value in defaults(kind).items()}
        for kind in KINDS
    }
    for policy in ScopePolicy.objects.all():
        rows[policy.kind][policy.prefix] = PolicyRow(
            policy.kind,
            policy.prefix,
            policy.value,
            "set by a lead",
            policy.updated_at,
            policy.updated_by_label,
            policy.version,
        )
    prefixes = access.user_scope_prefixes(user)
    return {
        kind: [
            by_prefix[prefix]
            for prefix in sorted(by_prefix)
            if prefixes is None or any(access.scopes_overlap(prefix, mine) for mine in prefixes)
        ]
        for kind, by_prefix in rows.items()
    }


def overlaps(rows: dict[str, list[PolicyRow]]) -> list[Overlap]:
    """Where the two-reviewer rules and automatic admission policies of `rows` (policy_rows) meet."""
    reviews = {row.prefix: row.value for row in rows[REVIEW]}
    admissions = {row.prefix: row.value for row in rows[ADMISSION]}
    return [
        Overlap(r, a, scope_policies.precedence_note(r, a, admissions[a]))
        for r, a in scope_policies.two_reviewer_overlaps(reviews, admissions)
    ]


def policy_history(user, limit: int = HISTORY_SHOWN) -> list[Event]:
    """The newest changes of settings under the user's scopes, newest first. 1 query."""
    prefixes = access.user_scope_prefixes(user)
    return list(
        Event.objects.filter(scope_policy__isnull=False)
        .filter(access.scope_q(prefixes, "scope_policy__prefix"))
        .select_related("scope_policy")
        .order_by("-created_at", "-id")[:limit]
    )
