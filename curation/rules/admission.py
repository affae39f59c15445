"""Admission policies as pure functions: which policy governs a scope (the longest prefix wins) and what it
decides about a new candidate from the candidate's evidence. The submission service writes the decision;
this only says what it is and why (the rule, in the words the queue and the audit show)."""

from __future__ import annotations

import math

import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from curation.rules.access import clean_scope, governing_prefix

MODES = ("manual", "auto", "all", "none")
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Policy:
    prefix: str
    name: str
    mode: str
    evaluator: str = ""
    threshold: float | None = None

    @property
    def actor_label(self) -> str:
        return f"policy:{self.name}"

    @property
    def rule(self) -> str:
        if self.mode == "auto":
            return f"auto: approve when {self.evaluator} scored at least {self.threshold:g}, else reject"
        return {
            "all": "all: approve every new candidate",
            "none": "none: reject every new candidate",
            "manual": "manual: people decide",
        }[self.mode]


@dataclass(frozen=True)
class Decision:
    approve: bool
    reason: str


def clean_policy(data: dict) -> Policy:
    """A policy from a form or a setting; one ValidationError naming each bad field."""
    errors: dict[str, list[str]] = {}
    try:
        prefix = clean_scope(data.get("prefix"))
    except ValidationError as exc:
        errors["prefix"] = exc.messages
        prefix = ""
    name = str(data.get("name") or "").strip()
    if not NAME_PATTERN.match(name):
        errors["name"] = ["Lower-case letters, digits, '.', '_' or '-', at most 64."]
    mode = data.get("mode")
    if mode not in MODES:
        errors["mode"] = [f"One of: {', '.join(MODES)}."]
    evaluator = str(data.get("evaluator") or "").strip()
    threshold = data.get("threshold")
    if threshold in ("", None):
        threshold = None
    else:
        try:
            threshold = float(threshold)
        except (TypeError, ValueError, OverflowError):
            threshold = None
        if threshold is None or isinstance(data.get("threshold"), bool) or not math.isfinite(threshold):
            errors["threshold"] = ["A number (no NaN or infinity)."]
            threshold = None
    if mode == "auto":
        if not evaluator or len(evaluator) > 100:
            errors["evaluator"] = ["Name the evaluator whose score decides (at most 100 characters)."]
        if threshold is None and "threshold" not in errors:
            errors["threshold"] = ["The score at or above which a candidate is approved."]
    if errors:
        raise ValidationError(errors)
    if mode != "auto":
        evaluator, threshold = "", None
    return Policy(prefix, name, mode, evaluator, threshold)


def governing(policies, scope: str) -> Policy | None:
    """The policy of the longest prefix covering `scope` (None: manual, as without policies)."""
    by_prefix = {p.prefix: p for p in policies}
    prefix = governing_prefix(by_prefix, scope)
    return by_prefix[prefix] if prefix is not None else None


def decide(policy: Policy, evidence) -> Decision | None:
    """What `policy` decides for a new candidate with `evidence` (dicts with polarity, evaluator, score);
    None when people decide."""
    if policy.mode == "all":
        return Decision(True, policy.rule)
    if policy.mode == "none":
        return Decision(False, policy.rule)
    if policy.mode != "auto":
        return None
    scores = [
        e["score"]
        for e in evidence
        if e.get("polarity", "supports") == "supports"
        and e.get("evaluator") == policy.evaluator
        and e.get("score") is not None
    ]
    best = max(scores, default=None)
    if best is not None and best >= policy.threshold:
        return Decision(True, f"{policy.rule}: score {best:g}")
    seen = f"best score {best:g}" if best is not None else f"no score from {policy.evaluator}"
    return Decision(False, f"{policy.rule}: {seen}")


def standing(decision: Decision | None, approvals_required: int) -> Decision | None:
    """The policy's decision as it stands under the scope's review rule. The two-reviewer rule wins over an
    automatic approval: in a scope that needs two reviewers, a candidate the policy would approve stays in
    the queue for them (None: people decide); an automatic rejection stands (it activates nothing)."""
    if decision is not None and decision.approve and approvals_required >= 2:
        return None
    return decision
