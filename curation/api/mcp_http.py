"""`/mcp`: the MCP server over Streamable HTTP, served by memoryadmin itself for remote agents.

The tools and resources are the stdio server's (`memoryadmin_client.mcp_server`): each is one call of the
agent API, sent in this process (httpx's ASGI transport into Django, no socket) with the caller's own
`Authorization` header. So a request to /mcp is authenticated by the API's own token check (at the door,
GET /api/v1/token, then on every API call), limited to the token's scopes and rate limit, and validated,
exactly as `/api/v1/` is; there is no second token check. Stateless, answering JSON: any worker answers any request, and no
session outlives one. Nothing here logs a token or a query."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

import httpx
from memoryadmin_client import AsyncMemoryAdmin
from memoryadmin_client.mcp_server import build_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response

MCP_PATH = "/mcp"

# A line per in-process API call (httpx) and per stateless MCP request (the SDK) would only repeat the
# access log's /mcp line; warnings and errors still show.
for _name in ("httpx", "mcp"):
    logging.getLogger(_name).setLevel(logging.WARNING)
FORWARDED = ("host", "x-forwarded-proto", "x-forwarded-for")  # what the API calls carry on


def _api_headers(headers) -> dict[str, str]:
    """The caller's address, for the API calls made on its behalf (ALLOWED_HOSTS and a proxy's
    X-Forwarded-Proto then see them as the caller's)."""
    return {name: headers[name] for name in FORWARDED if name in headers}


def _transport(django_application, client) -> httpx.ASGITransport:
    """The in-process transport of one caller's API calls, from the caller's own address: the API's limit on
    bad tokens and its logs count the agent that called /mcp, not this process (httpx's default client
    address is 127.0.0.1 for every call, which would put every MCP caller behind one counter)."""
    host, port = client if client else ("", 0)
    return httpx.ASGITransport(app=django_application, client=(host, port))


class BearerTokenGate:
    """Lets a request to /mcp in only with a token the API accepts: it asks the API (GET /api/v1/token,
    in this process, from the caller's address) with the caller's Authorization, and answers the API's
    refusal (401, 429) as is."""

    def __init__(self, app, django_application):
        self.app, self.django_application = app, django_application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
            async with httpx.AsyncClient(
                transport=_transport(self.django_application, scope.get("client")), base_url="http://localhost"
            ) as api:
                answer = await api.get(
                    "/api/v1/token",
                    headers={**_api_headers(headers), "authorization": headers.get("authorization", "")},
                )
            if answer.status_code != 200:
                kept = {k: v for k, v in answer.headers.items() if k.lower() in ("www-authenticate", "retry-after")}
                await Response(answer.content, answer.status_code, kept, media_type="application/json")(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)


def mcp_application(django_application):
    """The ASGI app of /mcp (with the lifespan that runs the MCP session manager). Its gate and its tools
    call the API through `django_application`, in this process."""

    @asynccontextmanager
    async def client_for(ctx):
        request = ctx.request
        token = request.headers.get("authorization", "").partition(" ")[2].strip()  # the gate checked it
        transport = _transport(django_application, request.scope.get("client"))
        async with AsyncMemoryAdmin(
            f"{request.url.scheme}://{request.headers.get('host', 'localhost')}",
            token,
            transport=transport,
            headers=_api_headers(request.headers),
            user_agent="memoryadmin-mcp-http",
        ) as api:
            yield api

    server = build_server(client_for)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # A bearer token is required on every request and Host is checked by Django's ALLOWED_HOSTS on
        # each API call, so the SDK's localhost-only DNS-rebinding guard would only refuse real hosts.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return BearerTokenGate(app, django_application)


def with_mcp(django_application):
    """The site's ASGI app: /mcp and the lifespan events (which start the MCP session manager; Django has no
    lifespan) go to the MCP app, everything else to Django."""
    mcp = mcp_application(django_application)

    async def application(scope, receive, send):
        serves_mcp = scope["type"] == "lifespan" or (scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH)
        await (mcp if serves_mcp else django_application)(scope, receive, send)

    return application
