"""Settings kept per scope prefix, as pure rules: how many reviewers a scope's candidates need (`review`), the
share of its tasks served no memory or people's rules only (`holdout`), and who decides on its new candidates
(`admission`). Each is one kind of the same thing: a value per prefix, from the server's settings (the
defaults) and the leads' rows (a row replaces the setting of its prefix), resolved by the longest prefix
covering a scope. Here: the kinds, each kind's value cleaned from a form or a setting (one ValidationError
naming each bad field), the resolution, the value in words, and where a two-reviewer rule meets an
automatic admission policy (the two-reviewer rule wins there: an automatic approval leaves the candidate in
the queue for two reviewers; an automatic rejection still rejects)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from django.core.exceptions import ValidationError

from curation.rules import admission
from curation.rules.access import clean_scope, governing_prefix, scope_covers

REVIEW, HOLDOUT, ADMISSION = "review", "holdout", "admission"
KIND_CHOICES = ((REVIEW, "two-reviewer rule"), (HOLDOUT, "holdout fraction"), (ADMISSION, "admission policy"))
KINDS = tuple(kind for kind, _ in KIND_CHOICES)
KIND_LABELS = dict(KIND_CHOICES)

APPROVALS_CHOICES = (1, 2)
HOLDOUT_MAX = 0.5  # more than half the tasks without memory would cost a team more than it tells them
AUTOMATIC_APPROVAL_MODES = ("auto", "all")  # the admission modes that may approve without a person


# --- the one resolution -----------------------------------------------------------------------------------


def in_force(defaults: dict[str, dict], rows: Iterable[tuple[str, dict]]) -> dict[str, dict]:
    """Prefix -> value: the settings' defaults, then the leads' rows over them (a row wins on its prefix)."""
    policies = dict(defaults)
    policies.update(rows)
    return policies


def resolve(policies: dict[str, dict], scope: str) -> tuple[str, dict] | None:
    """The (prefix, value) of the longest prefix of `policies` covering `scope`; None when none does."""
    prefix = governing_prefix(policies, scope)
    return (prefix, policies[prefix]) if prefix is not None else None


def approvals_required(scope: str, reviews: dict[str, dict]) -> int:
    """1 or 2: what the review rule governing `scope` says (1 when none does)."""
    governing = resolve(reviews, scope)
    return governing[1]["approvals"] if governing else 1


def admission_policy(prefix: str, value: dict) -> admission.Policy:
    return admission.Policy(prefix, value["name"], value["mode"], value.get("evaluator", ""), value.get("threshold"))


# --- the server's settings as values ------------------------------------------------------------------------


def review_defaults(two_reviewer_scopes) -> dict[str, dict]:
    """CURATION["TWO_REVIEWER_SCOPES"] (a list of prefixes) as review values."""
    return {prefix.strip().rstrip("/"): {"approvals": 2} for prefix in two_reviewer_scopes if prefix.strip()}


def holdout_defaults(holdout: dict, rules_only: dict) -> dict[str, dict]:
    """CURATION_EVALUATION["HOLDOUT_FRACTIONS"] and ["RULES_ONLY_FRACTIONS"] (prefix -> share) as holdout values."""
    return {
        prefix: {"fraction": float(holdout.get(prefix, 0.0)), "rules_only": float(rules_only.get(prefix, 0.0))}
        for prefix in {*holdout, *rules_only}
    }


def admission_defaults(specs: dict) -> dict[str, dict]:
    """CURATION_ADMISSION (prefix -> {name, mode, evaluator, threshold}) as admission values."""
    return {prefix: clean(ADMISSION, {**spec, "prefix": prefix})[1] for prefix, spec in specs.items()}


# --- a value from a form --------------------------------------------------------------------------------------


def clean(kind: str, data: dict) -> tuple[str, dict]:
    """(prefix, value) of a `kind` setting from a form's or a setting's `data`; ValidationError naming each bad
    field otherwise."""
    if kind not in KINDS:
        raise ValidationError({"kind": [f"One of: {', '.join(KINDS)}."]})
    errors: dict[str, list[str]] = {}
    prefix = data.get("prefix")
    try:
        prefix = clean_scope(prefix.rstrip("/") if isinstance(prefix, str) else prefix)
    except ValidationError as exc:
        errors["prefix"] = exc.messages
    value = {}
    try:
        value = _CLEANERS[kind](data)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    return prefix, value


def _clean_review(data: dict) -> dict:
    try:
        approvals = int(data.get("approvals"))
    except (TypeError, ValueError):
        approvals = None
    if approvals not in APPROVALS_CHOICES or isinstance(data.get("approvals"), bool):
        raise ValidationError({"approvals": ["1 or 2 approvals."]})
    return {"approvals": approvals}


def _share(value, field: str) -> float:
    """A share from 0 to 0.5, given as a number or a text ("0.1" or "10%"); a missing rules-only share is 0."""
    message = {field: ["A number from 0 to 0.5 (or 0% to 50%)."]}
    if value in (None, ""):
        if field == "rules_only":
            return 0.0
        raise ValidationError(message)
    if isinstance(value, str):
        text = value.strip().rstrip("%").strip()
        try:
            number = float(text)
        except ValueError:
            raise ValidationError(message) from None
        value = number / 100 if value.strip().endswith("%") else number
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(message)
    if not 0 <= value <= HOLDOUT_MAX:
        raise ValidationError({field: [f"Between 0 and {HOLDOUT_MAX:g}: at most half the tasks go without memory."]})
    return round(float(value), 4)


def _clean_holdout(data: dict) -> dict:
    errors, shares = {}, {}
    for field in ("fraction", "rules_only"):
        try:
            shares[field] = _share(data.get(field), field)
        except ValidationError as exc:
            errors.update(exc.message_dict)
    if not errors and shares["fraction"] + shares["rules_only"] > HOLDOUT_MAX:
        errors["rules_only"] = [f"The holdout and the rules-only share together at most {HOLDOUT_MAX:g}."]
    if errors:
        raise ValidationError(errors)
    return shares


def _clean_admission(data: dict) -> dict:
    policy = admission.clean_policy({**data, "prefix": "x"})  # the prefix is cleaned once, by clean()
    return {"name": policy.name, "mode": policy.mode, "evaluator": policy.evaluator, "threshold": policy.threshold}


_CLEANERS = {REVIEW: _clean_review, HOLDOUT: _clean_holdout, ADMISSION: _clean_admission}


# --- in words ---------------------------------------------------------------------------------------------------


def describe(kind: str, prefix: str, value: dict) -> str:
    """The setting as one sentence: what the page says after saving and the Event's reason by default."""
    if kind == REVIEW:
        n = value["approvals"]
        return f"Candidates under {prefix} now need {n} approval{'s' if n > 1 else ''}."
    if kind == HOLDOUT:
        return f"Holdout of {prefix}: {value['fraction']:.0%} of its tasks get no memory" + (
            f", {value['rules_only']:.0%} people's rules only." if value["rules_only"] else "."
        )
    policy = admission_policy(prefix, value)
    return f"Candidates under {prefix}: {policy.rule} (signed {policy.actor_label})."


def shown(kind: str, value: dict) -> str:
    """The value alone, short, for a table cell."""
    if kind == REVIEW:
        return f"{value['approvals']} approval{'s' if value['approvals'] > 1 else ''}"
    if kind == HOLDOUT:
        return f"{value['fraction']:.0%} holdout" + (
            f", {value['rules_only']:.0%} people's rules only" if value["rules_only"] else ""
        )
    return f"policy:{value['name']}, {admission_policy('', value).rule}"


# --- where a two-reviewer rule meets an automatic admission policy ------------------------------------------


def two_reviewer_overlaps(reviews: dict[str, dict], admissions: dict[str, dict]) -> list[tuple[str, str]]:
    """(review prefix, admission prefix) for each two-reviewer rule and automatic admission policy (auto, all)
    that govern some scope together: the policy's prefix lies under the rule's (or is it) and the rule is the
    one governing it, or the rule's lies under the policy's and the policy is the one governing it. There the
    two-reviewer rule wins."""
    pairs = set()
    for a_prefix, policy in admissions.items():
        if policy["mode"] not in AUTOMATIC_APPROVAL_MODES:
            continue
        governing = resolve(reviews, a_prefix)
        if governing and governing[1]["approvals"] == 2:
            pairs.add((governing[0], a_prefix))
        for r_prefix, rule in reviews.items():
            if (
                rule["approvals"] == 2
                and r_prefix != a_prefix
                and scope_covers(a_prefix, r_prefix)
                and governing_prefix(admissions, r_prefix) == a_prefix
            ):
                pairs.add((r_prefix, a_prefix))
    return sorted(pairs)


def precedence_note(review_prefix: str, a_prefix: str, policy: dict) -> str:
    """The sentence a lead reads where a two-reviewer rule and an automatic admission policy meet."""
    return (
        f"Candidates under {review_prefix} need two reviewers, and admission policy policy:{policy['name']} "
        f"({policy['mode']}) of {a_prefix} governs some of them: the two-reviewer rule wins, so its automatic "
        f"approvals leave those candidates in the queue for two reviewers; its automatic rejections still "
        f"reject."
    )


def precedence_warnings(kind: str, prefix: str, reviews: dict[str, dict], admissions: dict[str, dict]) -> list[str]:
    """What a lead who just set the `kind` setting of `prefix` is told, given what is in force after it: each
    place where that setting and one of the other kind meet (a two-reviewer rule and an automatic admission
    policy)."""
    side = 0 if kind == REVIEW else 1 if kind == ADMISSION else None
    if side is None:
        return []
    return [
        precedence_note(r, a, admissions[a])
        for r, a in two_reviewer_overlaps(reviews, admissions)
        if (r, a)[side] == prefix
    ]
