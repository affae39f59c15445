"""Field checks shared by every way an entry's text comes in (forms, the agent API, seed data)."""

import datetime
import math
import re

from django.core.exceptions import ValidationError

from curation.rules import trust
from curation.rules.access import clean_scope
from curation.models import CONTENT_MAX, TRIGGER_MAX, Evidence, Kind, Signal

TEXT_MAX = 2000
# The choices' values, read once (a TextChoices' `.values` builds its list again at each read). Tuples: a
# membership test compares as the list's did, so an unhashable value sent as a choice is refused, not raised.
_KINDS = tuple(Kind.values)
_SIGNALS = tuple(Signal.values)
_EVIDENCE_KINDS = tuple(Evidence.EvidenceKind.values)
_POLARITIES = tuple(Evidence.Polarity.values)
_SOURCES = tuple(trust.Source.values)


def _text(errors, data, field, *, required, max_length):
    value = data.get(field, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        errors[field] = "Must be text."
        return None
    value = value.strip()
    if required and not value:
        errors[field] = "This field is required."
    elif len(value) > max_length:
        errors[field] = f"At most {max_length} characters (this has {len(value)})."
    return value


def clean_conditions(value) -> list[str]:
    """Keywords, as a list or as comma/newline separated text from a form."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = re.split(r"[,\n]", value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValidationError("Conditions are a list of keywords.")
    cleaned = [v.strip() for v in value if v.strip()]
    if len(cleaned) > 50 or any(len(v) > 200 for v in cleaned):
        raise ValidationError("At most 50 conditions of at most 200 characters each.")
    return cleaned


def clean_entry_fields(data: dict, *, fields) -> dict:
    """Clean the named fields of `data`; raise one ValidationError with a message per bad field."""
    errors: dict[str, str] = {}
    cleaned: dict = {}
    for field in fields:
        if field == "scope":
            try:
                cleaned["scope"] = clean_scope(data.get("scope"))
            except ValidationError as exc:
                errors["scope"] = exc.messages[0]
        elif field == "trigger":
            cleaned["trigger"] = _text(errors, data, "trigger", required=True, max_length=TRIGGER_MAX)
        elif field == "content":
            cleaned["content"] = _text(errors, data, "content", required=True, max_length=CONTENT_MAX)
        elif field in ("boundary", "recheck_when", "source_task"):
            limit = 255 if field == "source_task" else TEXT_MAX
            cleaned[field] = _text(errors, data, field, required=False, max_length=limit)
        elif field == "conditions":
            try:
                cleaned["conditions"] = clean_conditions(data.get("conditions"))
            except ValidationError as exc:
                errors["conditions"] = exc.messages[0]
        elif field == "kind":
            if data.get("kind") not in _KINDS:
                errors["kind"] = f"One of: {', '.join(_KINDS)}."
            cleaned["kind"] = data.get("kind")
        elif field == "signal":
            if data.get("signal") not in _SIGNALS:
                errors["signal"] = f"One of: {', '.join(_SIGNALS)}."
            cleaned["signal"] = data.get("signal")
        elif field == "review_by":
            value = data.get("review_by")
            if value in (None, ""):
                cleaned["review_by"] = None
            elif isinstance(value, datetime.date):
                cleaned["review_by"] = value
            else:
                try:
                    cleaned["review_by"] = datetime.date.fromisoformat(str(value))
                except ValueError:
                    errors["review_by"] = "A date as YYYY-MM-DD."
        elif field == "confidence":
            value = data.get("confidence")
            if value is None or value == "":
                cleaned["confidence"] = None
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                errors["confidence"] = "A number from 0 to 1."
            else:
                cleaned["confidence"] = float(value)
        else:
            raise ValueError(f"unknown entry field {field!r}")
    if errors:
        raise ValidationError({k: [v] for k, v in errors.items()})
    return cleaned


def clean_evidence(item: dict, *, sender: str = trust.Sender.AGENT) -> dict:
    """One piece of evidence, checked; `sender`: who sends it (trust.Sender): an agent token may not send a
    person's decision (trust.claim_refusal)."""
    errors: dict[str, str] = {}
    if not isinstance(item, dict):
        raise ValidationError({"evidence": ["Each piece of evidence is an object."]})
    kind = item.get("kind")
    if kind not in _EVIDENCE_KINDS:
        errors["kind"] = f"One of: {', '.join(_EVIDENCE_KINDS)}."
    signal = item.get("signal")
    if signal not in _SIGNALS:
        errors["signal"] = f"One of: {', '.join(_SIGNALS)}."
    polarity = item.get("polarity", Evidence.Polarity.SUPPORTS)
    if polarity not in _POLARITIES:
        errors["polarity"] = "supports or contradicts."
    excerpt = _text(errors, item, "excerpt", required=True, max_length=4000)
    task_ref = _text(errors, item, "task_ref", required=False, max_length=255)
    evaluator = _text(errors, item, "evaluator", required=False, max_length=100)
    score = item.get("score")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
    ):
        errors["score"] = "A number."
    if score is not None and not evaluator and "evaluator" not in errors:
        errors["evaluator"] = "Name the evaluator that gave the score."
    observed_at = item.get("observed_at")
    if isinstance(observed_at, str):
        try:
            observed_at = datetime.datetime.fromisoformat(observed_at)
        except ValueError:
            errors["observed_at"] = "A date-time in ISO 8601."
    if isinstance(observed_at, datetime.datetime) and observed_at.tzinfo is None:
        observed_at = observed_at.replace(tzinfo=datetime.timezone.utc)
    if observed_at is not None and not isinstance(observed_at, datetime.datetime):
        errors["observed_at"] = "A date-time in ISO 8601."
    source = item.get("source") or trust.Source.OWN
    if source not in _SOURCES:
        errors["source"] = f"One of: {', '.join(_SOURCES)}."
    elif "kind" not in errors and (
        refusal := trust.claim_refusal(source, kind=kind, evaluator=evaluator or "", sender=sender)
    ):
        errors["source"] = refusal
    if errors:
        raise ValidationError({k: [v] for k, v in errors.items()})
    return {
        "kind": kind,
        "source": source,
        "signal": signal,
        "polarity": polarity,
        "excerpt": excerpt,
        "task_ref": task_ref,
        "evaluator": evaluator,
        "score": float(score) if score is not None else None,
        "observed_at": observed_at,
    }


def unknown_fields(data: dict, allowed, where: str = "") -> dict:
    """An error per field not in `allowed`: unknown fields are refused, not dropped, so that a typo
    such as `tigger` does not pass unnoticed."""
    return {f"{where}{key}": ["Unknown field."] for key in sorted(set(data) - set(allowed))}
