"""Agent tokens: made once (the secret is shown then and never again), revoked by a lead. A lead limited
to scope prefixes makes and revokes only tokens within them; the operator's command (no actor) any."""

from __future__ import annotations

import datetime
import re
import secrets

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from curation.rules import access, clock
from curation.rules.access import clean_scope
from curation.models import AgentToken, EventAction
from curation.rules.permissions import MANAGE_TOKENS
from curation.rules.redaction import redact
from curation.selectors import read_cache
from curation.selectors.tokens import hash_key, token_name_taken

from .events import record_event

TOKEN_PREFIX = "ma_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_DURATION = re.compile(r"^(\d{1,5})([dhm])$")


def parse_duration(text: str) -> datetime.timedelta:
    """`30d`, `12h` or `90m`: how long a token lives."""
    match = _DURATION.match((text or "").strip())
    if not match or int(match[1]) == 0:
        raise ValidationError({"expires": ["A duration such as 30d, 12h or 90m."]})
    amount, unit = int(match[1]), match[2]
    return datetime.timedelta(**{{"d": "days", "h": "hours", "m": "minutes"}[unit]: amount})


def create_agent_token(
    *,
    name: str,
    scopes,
    expires_in: datetime.timedelta | None = None,
    key: str | None = None,
    actor=None,
    at=None,
) -> tuple[AgentToken, str]:
    """A new token and its secret. Only the hash is stored: the caller shows the secret once.
    `key` lets a demo set-up choose the secret; it must still be long and random-looking."""
    if actor is not None and not actor.has_perm(MANAGE_TOKENS):
        raise PermissionDenied("Only leads manage agent tokens.")
    errors = {}
    name = (name or "").strip()
    if findings := redact(name, "name")[1]:  # a pasted key, say: refused, so never stored or logged
        errors["name"] = [
            f"This looks like a secret ({findings[0].kind}), not a name: name the token after its "
            "agent; its secret is made for you."
        ]
    elif not _NAME.match(name):
        errors["name"] = ["1 to 100 characters: letters, digits, '.', '_' or '-'."]
    cleaned_scopes = []
    for scope in scopes or []:
        try:
            cleaned_scopes.append(clean_scope(scope))
        except ValidationError as exc:
            errors.setdefault("scopes", []).append(f"{scope!r}: {exc.messages[0]}")
    if not cleaned_scopes and "scopes" not in errors:
        errors["scopes"] = ["A token needs at least one scope, e.g. acme/billing-api."]
    if actor is not None and (beyond := [s for s in cleaned_scopes if not access.user_can_see_scope(actor, s)]):
        errors.setdefault("scopes", []).append(
            f"Outside your scopes ({access.reach_of(actor)}): {', '.join(beyond)}. "
            "A token reaches no further than its maker's grants."
        )
    if key is not None and len(key) < 16:
        errors["key"] = ["A chosen token must be at least 16 characters."]
    if errors:
        raise ValidationError(errors)
    now = at or clock.now()
    key = key or TOKEN_PREFIX + secrets.token_urlsafe(32)
    taken = ValidationError({"name": [f"A token named {name!r} already exists: choose another name."]})
    try:
        with transaction.atomic():
            if token_name_taken(actor, name):
                raise taken
            token = AgentToken.objects.create(
                name=name,
                key_prefix=key[:10],
                key_hash=hash_key(key),
                scopes=sorted(set(cleaned_scopes)),
                expires_at=now + expires_in if expires_in else None,
                created_by=actor,
                created_at=now,
            )
            record_event(
                token,
                actor=actor,
                action=EventAction.TOKEN_CREATED,
                at=now,
                reason=f"scopes {', '.join(token.scopes)}"
                + (f"; expires {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "; no expiry"),
                after={
                    "name": token.name,
                    "key_prefix": token.key_prefix,
                    "scopes": token.scopes,
                    "expires_at": token.expires_at.isoformat() if token.expires_at else None,
                },
            )
    except IntegrityError:
        # The maker's own token beyond their present grants, or a chosen secret in use: nothing of anyone
        # else's is named.
        if AgentToken.objects.filter(key_hash=hash_key(key)).exists():
            raise ValidationError({"key": ["This secret is in use: choose another."]}) from None
        raise taken from None
    return token, key


def revoke_agent_token(token_id: int, *, actor, at=None) -> AgentToken:
    """The token stops working now. Revoking a revoked token changes nothing and writes nothing.
    AgentToken.DoesNotExist for a token reaching beyond the actor's grants, as for an unknown one."""
    if not actor.has_perm(MANAGE_TOKENS):
        raise PermissionDenied("Only leads manage agent tokens.")
    now = at or clock.now()
    with transaction.atomic():
        token = AgentToken.objects.select_for_update().get(pk=token_id)
        if not access.user_can_see_all(actor, token.scopes):
            raise AgentToken.DoesNotExist
        if token.revoked_at is None:
            token.revoked_at = now
            token.revoked_by = actor
            token.save(update_fields=["revoked_at", "revoked_by"])
            read_cache.forget()  # every process's copy of it, on its next request
            record_event(
                token,
                actor=actor,
                action=EventAction.TOKEN_REVOKED,
                at=now,
                before={"revoked_at": None},
                after={"revoked_at": now.isoformat()},
            )
    return token
