"""memoryadmin's Python client (`MemoryAdmin`, `AsyncMemoryAdmin`) and its MCP server (`memoryadmin-mcp`)."""

from .client import AsyncMemoryAdmin, Call, MemoryAdmin, RetryPolicy
from .errors import (
    AuthenticationError,
    Conflict,
    InvalidInput,
    MemoryAdminError,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
    TransportError,
)

__all__ = [
    "AsyncMemoryAdmin",
    "AuthenticationError",
    "Call",
    "Conflict",
    "InvalidInput",
    "MemoryAdmin",
    "MemoryAdminError",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "TransportError",
]
