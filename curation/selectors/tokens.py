"""Reads of agent tokens: the one an API call presents, and the list leads manage."""

from __future__ import annotations

import hashlib

from curation.rules import access
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


def agent_tokens(user) -> list[AgentToken]:
    """The agent tokens whose scopes all lie within the user's grants (every token for a `*` grant or a
    superuser, none for a user without grants), the live ones first, by name. Filtered here rather than in SQL: the scopes are a JSON list,
    and the tokens are a short list."""
    tokens = AgentToken.objects.order_by("revoked_at", "name")
    return [token for token in tokens if access.user_can_see_all(user, token.scopes)]


def token_name_taken(user, name: str) -> bool:
    """Is `name` taken among the tokens this person can see (any token, for the operator's command: no
    user)? A token beyond their grants neither blocks the name nor is revealed by the answer."""
    same_name = AgentToken.objects.filter(name=name).only("scopes")
    return any(user is None or access.user_can_see_all(user, token.scopes) for token in same_name)
