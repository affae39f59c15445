"""The user name a failed sign-in is recorded under (django-axes keeps it in its attempts table and counts
lockouts by it). Whatever was typed into the name field, a pasted password or key included, is redacted
first: the attempts table, the admin and the logs never hold a secret a person typed in the wrong box."""

from __future__ import annotations

from curation.rules.redaction import redact


def attempted_username(request, credentials=None) -> str | None:
    typed = (credentials or {}).get("username")
    if typed is None:
        typed = getattr(request, "POST", {}).get("username")
    if not typed:
        return typed
    stored, _ = redact(str(typed), "username")
    return stored[:150]
