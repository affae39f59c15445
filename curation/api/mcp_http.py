"""`/mcp`: the MCP server over Streamable HTTP, served by memoryadmin itself for remote agents.

The tools and resources are the stdio server's (`memoryadmin_client.mcp_server`): each is one call of the
agent API, sent in this process (DjangoTransport: a WSGI request on Django's threads, no socket). A request
to /mcp is authenticated once, at the door, by the API's own token check and rate limit (http.admit_to_mcp, the
caller's address counted for bad tokens); the token it accepted travels with the tool's API call, which is
then limited to the token's scopes and validated exactly as `/api/v1/` is, without checking the token a
second time. Stateless, answering JSON: any worker answers any request, and no
session outlives one. Nothing here logs a token or a query."""

from __future__ import annotations

import io
import logging
from contextlib import asynccontextmanager

import httpx
from django.http import HttpResponse
from memoryadmin_client import AsyncMemoryAdmin
from memoryadmin_client.mcp_server import build_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from uvicorn.middleware.wsgi import build_environ

from .http import ADMITTED_TOKEN, admit_to_mcp

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


class DjangoTransport(httpx.AsyncBaseTransport):
    """The tools' API calls, handed to Django in this process as WSGI requests on its threads (no socket, no
    ASGI exchange of events): from the caller's own address, so the API's logs count the agent that called
    /mcp, not this process; carrying the token the gate accepted, so the API does not check it again."""

    def __init__(self, django_application, client, token):
        self.django_application, self.client, self.token = django_application, client or ("", 0), token

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        environ = build_environ(
            {
                "type": "http",
                "http_version": "1.1",
                "method": request.method,
                "scheme": request.url.scheme,
                "path": request.url.path,
                "query_string": request.url.query,
                "root_path": "",
                "headers": [(name.lower(), value) for name, value in request.headers.raw],  # as ASGI sends them
                "client": self.client,
                "server": (request.url.host, request.url.port or (443 if request.url.scheme == "https" else 80)),
            },
            {},
            io.BytesIO(body),
        )
        environ[ADMITTED_TOKEN] = self.token
        status, headers, content = await self.django_application.call(self.django_application.answer, environ)
        return httpx.Response(status, headers=headers, content=content, request=request)


class BearerTokenGate:
    """Lets a request to /mcp in only with a token the API accepts: the API's own check (http.admit_to_mcp)
    runs on Django's threads with the caller's address and headers, and its refusal (401, 429) is answered
    as is. The accepted token goes on in the request's scope, for its tools' API calls."""

    def __init__(self, app, django_application):
        self.app, self.django_application = app, django_application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            environ = build_environ(scope, {}, io.BytesIO())
            admitted = await self.django_application.call(admit_to_mcp, environ)
            if isinstance(admitted, HttpResponse):
                kept = {k: v for k, v in admitted.items() if k.lower() in ("www-authenticate", "retry-after")}
                await Response(admitted.content, admitted.status_code, kept, media_type="application/json")(
                    scope, receive, send
                )
                return
            scope = {**scope, ADMITTED_TOKEN: admitted}
        await self.app(scope, receive, send)


def mcp_application(django_application):
    """The ASGI app of /mcp (with the lifespan that runs the MCP session manager). Its gate and its tools
    call the API through `django_application`, in this process."""

    @asynccontextmanager
    async def client_for(ctx):
        request = ctx.request
        token = request.headers.get("authorization", "").partition(" ")[2].strip()  # the gate checked it
        transport = DjangoTransport(django_application, request.scope.get("client"), request.scope[ADMITTED_TOKEN])
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
