"""`/mcp`: the MCP server over Streamable HTTP, served by memoryadmin itself for remote agents.

The tools and resources are the stdio server's (`memoryadmin_client.mcp_server`): each is one call of the
agent API, sent in this process (httpx's ASGI transport into Django, no socket) with the caller's own
`Authorization` header. So a request to /mcp is authenticated by the API's token check (`http.authenticate`,
here once at the door, then on every API call), limited to the token's scopes and rate limit, and
validated, exactly as `/api/v1/` is. Stateless, answering JSON: any worker answers any request, and no
session outlives one. Nothing here logs a token or a query."""

from __future__ import annotations

from contextlib import asynccontextmanager

import httpx
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from memoryadmin_client import AsyncMemoryAdmin
from memoryadmin_client.mcp_server import build_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse

from .http import ApiError, authenticate

MCP_PATH = "/mcp"


def _check_token(authorization: str) -> None:
    """The API's token check, with the connection handling Django's request cycle would give it."""
    close_old_connections()
    try:
        authenticate(authorization)
    finally:
        close_old_connections()


def _authorization(scope) -> str:
    return next((value.decode("latin-1") for name, value in scope["headers"] if name == b"authorization"), "")


class BearerTokenGate:
    """Refuses a request to /mcp without a usable agent token, answering as the API does (401 JSON)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            try:
                await sync_to_async(_check_token)(_authorization(scope))
            except ApiError as exc:
                response = JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def mcp_application(django_application):
    """The ASGI app of /mcp (with the lifespan that runs the MCP session manager). Its tools call the API
    through `django_application`, addressed with the caller's Host so that ALLOWED_HOSTS applies."""
    transport = httpx.ASGITransport(app=django_application)

    @asynccontextmanager
    async def client_for(ctx):
        request = ctx.request
        token = request.headers.get("authorization", "").partition(" ")[2].strip()  # the gate checked it
        # A proxy's X-Forwarded-Proto goes along, so Django sees the request as secure as the caller's was.
        forwarded = {name: request.headers[name] for name in ("x-forwarded-proto",) if name in request.headers}
        async with AsyncMemoryAdmin(f"{request.url.scheme}://{request.headers.get('host', 'localhost')}", token,
                                    transport=transport, headers=forwarded,
                                    user_agent="memoryadmin-mcp-http") as api:
            yield api

    server = build_server(client_for)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        # A bearer token is required on every request and Host is checked by Django's ALLOWED_HOSTS on
        # each API call, so the SDK's localhost-only DNS-rebinding guard would only refuse real hosts.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return BearerTokenGate(app)


def with_mcp(django_application):
    """The site's ASGI app: /mcp and the lifespan events (which start the MCP session manager; Django has no
    lifespan) go to the MCP app, everything else to Django."""
    mcp = mcp_application(django_application)

    async def application(scope, receive, send):
        serves_mcp = scope["type"] == "lifespan" or (scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH)
        await (mcp if serves_mcp else django_application)(scope, receive, send)

    return application
