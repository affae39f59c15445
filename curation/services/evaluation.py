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


def _clean_fraction(value) -> float:
    if isinstance(value, str):
        text = value.strip().rstrip("%").strip()
        try:
            number = float(text)
        except ValueError:
            raise ValidationError({"fraction": ["A number from 0 to 0.5 (or 0% to 50%)."]}) from None
        value = number / 100 if value.strip().endswith("%") else number
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError({"fraction": ["A number from 0 to 0.5 (or 0% to 50%)."]})
    if not 0 <= value <= HOLDOUT_MAX:
        raise ValidationError({"fraction": [f"Between 0 and {HOLDOUT_MAX:g}: at most half the tasks go without memory."]})
    return round(float(value), 4)


def set_holdout_fraction(*, actor, prefix, fraction, reason: str = "", at=None) -> HoldoutFraction:
    """Set the share of tasks under `prefix` that get no memory (0 turns the holdout off there). Leads
    only, within their scopes; the change is an Event on the setting."""
    if not actor.has_perm(PUBLISH):
        raise PermissionDenied("Only a lead sets holdout fractions.")
    errors = {}
    try:
        prefix = access.clean_scope(prefix.strip().rstrip("/") if isinstance(prefix, str) else prefix)
    except ValidationError as exc:
        errors["prefix"] = exc.messages
    try:
        fraction = _clean_fraction(fraction)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    if not access.user_can_see_scope(actor, prefix):
        raise ValidationError({"prefix": ["You can only set a holdout within your scopes."]})
    now = at or clock.now()
    with transaction.atomic():
        setting, created = HoldoutFraction.objects.select_for_update().get_or_create(
            prefix=prefix, defaults={"fraction": fraction, "updated_at": now, "updated_by_label": actor.get_username()})
        before = None if created else {"fraction": setting.fraction}
        if not created:
            if setting.fraction == fraction:
                return setting
            setting.fraction, setting.updated_at, setting.updated_by_label = fraction, now, actor.get_username()
            setting.save(update_fields=["fraction", "updated_at", "updated_by_label"])
        record_event(setting, actor=actor, action=EventAction.HOLDOUT_SET, before=before,
                     after={"prefix": prefix, "fraction": fraction},
                     reason=reason.strip() or f"holdout of {prefix} set to {fraction:.0%}", at=now)
    return setting


def tally_outcome(retrieval: Retrieval, *, success: bool, at) -> None:
    """Count a reported outcome for its day, scope and arm, and for each entry the task was given; call it
    in the feedback's transaction. One statement each, an insert or an increment."""
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
        if entry_ids:
            table = LessonTally._meta.db_table
            rows = ", ".join(["(%s, %s, 1, %s)"] * len(entry_ids))
            cursor.execute(
                f"INSERT INTO {table} (day, entry_id, tasks, successes) VALUES {rows} "
                f"ON CONFLICT (day, entry_id) DO UPDATE SET tasks = {table}.tasks + 1, "
                f"successes = {table}.successes + excluded.successes",
                [value for pk in entry_ids for value in (day, pk, won)],
            )
