"""Reads of agent tokens: the one an API call presents, and the list leads manage."""

from __future__ import annotations

import hashlib

from curation.models import AgentToken

from .sql import TOKEN_BY_HASH_SQL


def hash_key(key: str) -> str:
    """What is stored of a token's secret: its SHA-256, never the secret."""
    return hashlib.sha256(key.encode()).hexdigest()


def token_for_key(key: str, now) -> AgentToken | None:
    """The usable token with this secret, or None (unknown, revoked or expired alike)."""
    # raw(): on every API call, and the ORM's query building is a third of this lookup's time
    token = next(iter(AgentToken.objects.raw(TOKEN_BY_HASH_SQL, [hash_key(key)])), None)
    if token is None or not token.is_usable(now):
        return None
    return token


def agent_tokens() -> list[AgentToken]:
    """Every agent token, the live ones first, by name."""
    return list(AgentToken.objects.order_by("revoked_at", "name"))
