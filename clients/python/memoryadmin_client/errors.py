"""The agent API's refusals as exceptions: the status, the API's message and its per-field messages."""

from __future__ import annotations


class MemoryAdminError(Exception):
    """An answer of 4xx or 5xx. `errors` maps a field (`scope`, `evidence[0].kind`) to its messages."""

    def __init__(
        self, status: int, message: str, errors: dict[str, list[str]] | None = None, retry_after: float | None = None
    ):
        self.status, self.message, self.errors, self.retry_after = status, message, errors or {}, retry_after
        super().__init__(self.describe())

    def describe(self) -> str:
        """The message and every field's messages on one line, e.g. for a model to read."""
        fields = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in self.errors.items())
        return f"{self.message} ({fields})" if fields else self.message


class AuthenticationError(MemoryAdminError):
    """401: the token is missing, unknown, revoked or expired."""


class PermissionDenied(MemoryAdminError):
    """403: the token does not cover that scope."""


class NotFound(MemoryAdminError):
    """404: no such item in the token's scopes (an item outside them answers the same)."""


class Conflict(MemoryAdminError):
    """409: the item is in a state that refuses this (a skill already decided)."""


class InvalidInput(MemoryAdminError):
    """400, 413, 415 or 422: the request is malformed or some fields are not valid (see `errors`)."""


class RateLimited(MemoryAdminError):
    """429 after the retries ran out; `retry_after` is the server's Retry-After in seconds."""


class ServerError(MemoryAdminError):
    """5xx after the retries ran out."""


class TransportError(MemoryAdminError):
    """The server could not be reached (status 0)."""


_BY_STATUS = {401: AuthenticationError, 403: PermissionDenied, 404: NotFound, 409: Conflict, 429: RateLimited}


def error_for(status: int, body: object, retry_after: float | None = None) -> MemoryAdminError:
    """The exception for an error answer; its JSON body is `{"error": ..., "errors": {...}}`."""
    message, errors = f"HTTP {status}", None
    if isinstance(body, dict):
        message = str(body.get("error") or message)
        if isinstance(body.get("errors"), dict):
            errors = {str(k): [str(m) for m in (v if isinstance(v, list) else [v])] for k, v in body["errors"].items()}
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else InvalidInput)
    return cls(status, message, errors, retry_after)
