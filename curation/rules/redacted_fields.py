"""Text columns that redact what they store: the one place every text on its way to the database passes,
whatever wrote it (a save, a bulk_create, an update()) and whoever typed it (an agent, a reviewer, a lead).

A service that must flag what it found, or check a length on what is stored, redacts its input first
(redaction.redact_fields); the column then finds nothing more, and the second look costs a dictionary
lookup (redaction remembers clean texts). A column cut to its length is cut after redaction, so no part
of a secret is left by the cut. Every free-text column of curation/models.py is one of these;
tests/unit/test_redacted_columns.py fails on a new one that is not."""

from __future__ import annotations

from django.db import models

from curation.rules.redaction import redact, remember_clean


def _remember_stored(value) -> None:
    """Every string of a value read from a redacting column: it was redacted on its way in."""
    if isinstance(value, str):
        remember_clean(value)
    elif isinstance(value, list):
        for item in value:
            _remember_stored(item)
    elif isinstance(value, dict):
        for item in value.values():
            _remember_stored(item)


def redacted(value, field: str):
    """`value` with every string in it redacted: text, or the lists and objects of a JSON column."""
    if isinstance(value, str):
        return redact(value, field)[0]
    if isinstance(value, list):
        return [redacted(item, field) for item in value]
    if isinstance(value, dict):
        return {key: redacted(item, field) for key, item in value.items()}
    return value


class _Redacting:
    # What migrations see: redaction changes no schema, so the column stays the plain field there.
    plain_path = ""

    def _clean(self, value):
        value = redacted(value, self.name)
        if isinstance(value, str) and self.max_length and isinstance(self, models.CharField):
            value = value[: self.max_length]  # a redacted value may be longer; cut after redacting
        return value

    def stored(self, value):
        """What this column stores of `value`: for a writer whose statement does not pass by the field."""
        return self._clean(value)

    def pre_save(self, model_instance, add):
        """save() and bulk_create(): the instance holds what the row holds."""
        value = self._clean(super().pre_save(model_instance, add))
        setattr(model_instance, self.attname, value)
        return value

    def from_db_value(self, value, expression, connection):
        """What the row holds was redacted when written: writing it again (an Event's snapshot of the entry)
        need not scan it again."""
        parent = getattr(super(), "from_db_value", None)
        if parent is not None:
            value = parent(value, expression, connection)
        _remember_stored(value)
        return value

    def get_db_prep_save(self, value, connection):
        """update() passes here without pre_save."""
        if not hasattr(value, "resolve_expression"):
            value = self._clean(value)
        return super().get_db_prep_save(value, connection)

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, self.plain_path, args, kwargs


class RedactedTextField(_Redacting, models.TextField):
    plain_path = "django.db.models.TextField"


class RedactedCharField(_Redacting, models.CharField):
    plain_path = "django.db.models.CharField"


class RedactedJSONField(_Redacting, models.JSONField):
    plain_path = "django.db.models.JSONField"
