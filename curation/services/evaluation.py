"""Holdout evaluation's writes: a lead's holdout fraction for a scope prefix (with its Event), and the
tallies of reported outcomes per day, scope and arm, and per entry, that the learning dashboard reads."""

from __future__ import annotations

import math

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction

from curation import access, clock
from curation.models import EventAction, HoldoutFraction, LessonTally, OutcomeTally, Retrieval
from curation.permissions import PUBLISH

from .events import record_event

HOLDOUT_MAX = 0.5  # more than half the tasks without memory would cost a team more than it tells them


def _clean_fraction(value, field: str) -> float:
    message = {field: ["A number from 0 to 0.5 (or 0% to 50%)."]}
    if value in (None, ""):
        return 0.0 if field == "rules_only" else _refuse(message)
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


def _refuse(errors):
    raise ValidationError(errors)


def set_holdout_fraction(*, actor, prefix, fraction, rules_only=0.0, reason: str = "", at=None) -> HoldoutFraction:
    """Set the share of tasks under `prefix` that get no memory (0 turns the holdout off there) and the
    share served people's rules only (human corrections and preferences). Leads only, within their
    scopes; together at most half the tasks; the change is an Event on the setting."""
    if not actor.has_perm(PUBLISH):
        raise PermissionDenied("Only a lead sets holdout fractions.")
    errors = {}
    try:
        prefix = access.clean_scope(prefix.strip().rstrip("/") if isinstance(prefix, str) else prefix)
    except ValidationError as exc:
        errors["prefix"] = exc.messages
    for field, value in (("fraction", fraction), ("rules_only", rules_only)):
        try:
            cleaned = _clean_fraction(value, field)
        except ValidationError as exc:
            errors.update(exc.message_dict)
        else:
            fraction, rules_only = (cleaned, rules_only) if field == "fraction" else (fraction, cleaned)
    if not errors and fraction + rules_only > HOLDOUT_MAX:
        errors["rules_only"] = [f"The holdout and the rules-only share together at most {HOLDOUT_MAX:g}."]
    if errors:
        raise ValidationError(errors)
    if not access.user_can_see_scope(actor, prefix):
        raise ValidationError({"prefix": ["You can only set a holdout within your scopes."]})
    now = at or clock.now()
    values = {"fraction": fraction, "rules_only": rules_only}
    with transaction.atomic():
        setting, created = HoldoutFraction.objects.select_for_update().get_or_create(
            prefix=prefix, defaults={**values, "updated_at": now, "updated_by_label": actor.get_username()})
        before = None if created else {"fraction": setting.fraction, "rules_only": setting.rules_only}
        if not created:
            if before == values:
                return setting
            setting.fraction, setting.rules_only = fraction, rules_only
            setting.updated_at, setting.updated_by_label = now, actor.get_username()
            setting.save(update_fields=["fraction", "rules_only", "updated_at", "updated_by_label"])
        record_event(setting, actor=actor, action=EventAction.HOLDOUT_SET, before=before,
                     after={"prefix": prefix, **values},
                     reason=reason.strip() or f"holdout of {prefix} set to {fraction:.0%}"
                     + (f", people's rules only {rules_only:.0%}" if rules_only else ""), at=now)
    return setting


def tally_outcome(retrieval: Retrieval, *, success: bool, at, charged=None) -> None:
    """Count a reported outcome for its day, scope and arm, and for each entry the task was given (and, among
    them, those it is charged to: `charged`, every one given when None); call it in the feedback's
    transaction. One statement each, an insert or an increment."""
    day, won = at.date(), int(success)
    with connection.cursor() as cursor:
        table = OutcomeTally._meta.db_table
        cursor.execute(
            f"INSERT INTO {table} (day, scope, arm, tasks, successes) VALUES (%s, %s, %s, 1, %s) "
            f"ON CONFLICT (day, scope, arm) DO UPDATE SET tasks = {table}.tasks + 1, "
            f"successes = {table}.successes + excluded.successes",
            [day, retrieval.scope, retrieval.arm, won],
        )
        entry_ids = sorted(set(retrieval.entry_ids))
        charged = set(entry_ids if charged is None else charged)
        if entry_ids:
            table = LessonTally._meta.db_table
            rows = ", ".join(["(%s, %s, 1, %s, %s, %s)"] * len(entry_ids))
            cursor.execute(
                f"INSERT INTO {table} (day, entry_id, tasks, successes, charged_tasks, charged_successes) "
                f"VALUES {rows} ON CONFLICT (day, entry_id) DO UPDATE SET tasks = {table}.tasks + 1, "
                f"successes = {table}.successes + excluded.successes, "
                f"charged_tasks = {table}.charged_tasks + excluded.charged_tasks, "
                f"charged_successes = {table}.charged_successes + excluded.charged_successes",
                [value for pk in entry_ids
                 for value in (day, pk, won, int(pk in charged), won * int(pk in charged))],
            )
