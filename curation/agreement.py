"""Two-reviewer agreement, as pure rules: how many approvals a scope's candidates need. The rules are a
mapping of scope prefix -> approvals (1 or 2), from CURATION["TWO_REVIEWER_SCOPES"] and the leads'
ReviewRule rows (selectors.review_rules reads both); the longest prefix that covers the scope wins, so a
lead can require two for `acme` and one again for `acme/sandbox`."""

from __future__ import annotations

from curation.access import governing_prefix

APPROVALS_CHOICES = (1, 2)


def approvals_required(scope: str, rules: dict[str, int]) -> int:
    """1 or 2: what the longest prefix of `rules` covering `scope` says (1 when none does)."""
    prefix = governing_prefix(rules, scope)
    return rules[prefix] if prefix is not None else 1


def merged_rules(setting_prefixes, rows) -> dict[str, int]:
    """The settings' two-reviewer prefixes, then the leads' rows (prefix, approvals) over them."""
    rules = {prefix.rstrip("/"): 2 for prefix in setting_prefixes}
    rules.update({prefix: approvals for prefix, approvals in rows})
    return rules
