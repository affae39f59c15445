"""`/mcp`: the MCP server over Streamable HTTP, served by memoryadmin itself for remote agents.

The tools and resources are the stdio server's (`memoryadmin_client.mcp_server`): each is one call of the
agent API, sent in this process (DjangoSender: a WSGI request on Django's threads, no socket and no HTTP
client). A request to /mcp is authenticated once, by the API's own token check and rate limit
(http.admit_to_mcp, the caller's address counted for bad tokens), made in the same trip to Django's threads
as its tool's API call (Admission): one in-process call for the check and the tool, which is then limited
to the token's scopes and validated exactly as `/api/v1/` is, without checking the token a second time.
Nothing is answered and no API call is made before the token is accepted; a refused token gets the API's
refusal, whatever the MCP server made of the request. Stateless, answering JSON: any worker answers any
request, and no session outlives one. Nothing here logs a token or a query."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from contextlib import asynccontextmanager
from urllib.parse import unquote, urlencode

import httpx
from django.http import HttpResponse
from memoryadmin_client import AsyncMemoryAdmin, Call
from memoryadmin_client.mcp_server import build_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from uvicorn.middleware.wsgi import build_environ

from curation.models import AgentToken

from .http import ADMITTED_TOKEN, admit_to_mcp

MCP_PATH = "/mcp"

# A line per stateless MCP request (the SDK) would only repeat the access log's /mcp line; warnings and
# errors still show.
logging.getLogger("mcp").setLevel(logging.WARNING)
# The /mcp request's headers its tools' API calls carry on: its Host and a proxy's forwarded headers
# (ALLOWED_HOSTS and X-Forwarded-Proto then see the caller's), and the token (which the gate accepted).
ADMISSION = "memoryadmin.mcp_admission"  # the request's Admission, in its ASGI scope
CARRIED = frozenset({b"host", b"x-forwarded-proto", b"x-forwarded-for", b"authorization"})


class DjangoSender:
    """The tools' API calls (the client library's Calls), handed to Django in this process as WSGI requests on
    its threads: no socket, no HTTP client, no ASGI exchange of events. Each is sent as the /mcp request's
    own: from the caller's address, with its Host and forwarded headers (so ALLOWED_HOSTS, a proxy's
    X-Forwarded-Proto and the API's logs see the agent that called /mcp, not this process), and carrying the
    token the door accepted (Admission), so the API does not check it again. The answer is read by the
    client library as an HTTP answer would be."""

    def __init__(self, admission: Admission, scope):
        self.admission = admission
        self.scope = {
            "type": "http",
            "http_version": "1.1",
            "scheme": scope.get("scheme", "http"),
            "root_path": "",
            "client": scope.get("client") or ("", 0),
            "server": scope.get("server"),
        }
        self.headers = [(name, value) for name, value in scope["headers"] if name in CARRIED] + [
            (b"accept", b"application/json"),
            (b"user-agent", b"memoryadmin-mcp-http"),
        ]

    async def __call__(self, call: Call) -> httpx.Response:
        headers = list(self.headers)
        body = b""
        if call.body is not None:  # as httpx encodes a json= body
            body = json.dumps(call.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if call.idempotency_key:
            headers.append((b"idempotency-key", call.idempotency_key.encode("latin-1")))
        request = {
            **self.scope,
            "method": call.method,
            "path": unquote(call.path),  # as ASGI gives it: decoded
            "query_string": urlencode(call.params).encode("ascii"),
            "headers": headers,
        }
        status, headers, content = await self.admission.answer(build_environ(request, {}, io.BytesIO(body)))
        return httpx.Response(status, headers=headers, content=content)


class Admission:
    """The door of one /mcp request: the API's own token check and rate limit (http.admit_to_mcp), on
    Django's threads with the caller's address and headers, made once. A tool's first API call takes it
    along, in the same trip to Django's threads (check, then the call, which carries the accepted token);
    a request answered without an API call (server/discover, tools/list, an SDK refusal) is checked on its
    own before its answer goes out. Until the token is accepted no API call is made."""

    def __init__(self, django_application, scope):
        self.django_application = django_application
        self.door = build_environ(scope, {}, io.BytesIO())
        self.outcome: AgentToken | HttpResponse | None = None  # the accepted token, or the refusal
        self.lock = asyncio.Lock()

    async def check(self) -> AgentToken | HttpResponse:
        async with self.lock:
            if self.outcome is None:
                self.outcome = await self.django_application.call(admit_to_mcp, self.door)
            return self.outcome

    async def answer(self, environ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Django's answer to an API call of this request (the refusal, if the token is refused)."""
        async with self.lock:
            if self.outcome is None:
                self.outcome, answer = await self.django_application.call(self._admit_and_answer, environ)
                return answer
        if isinstance(self.outcome, HttpResponse):
            return _as_answer(self.outcome)
        environ[ADMITTED_TOKEN] = self.outcome
        return await self.django_application.call(self.django_application.answer, environ)

    def _admit_and_answer(self, environ):
        outcome = admit_to_mcp(self.door)
        if isinstance(outcome, HttpResponse):
            return outcome, _as_answer(outcome)
        environ[ADMITTED_TOKEN] = outcome
        return outcome, self.django_application.answer(environ)


def _as_answer(response: HttpResponse) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
    return response.status_code, headers, response.content


class BearerTokenGate:
    """Lets a request to /mcp be answered only once the API accepts its token (Admission); its refusal (401,
    429) is answered as is, in place of whatever the MCP server would have answered."""

    def __init__(self, app, django_application):
        self.app, self.django_application = app, django_application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admission = Admission(self.django_application, scope)
        refused = False

        async def send_once_admitted(message):
            nonlocal refused
            if message["type"] == "http.response.start":
                outcome = await admission.check()  # made already if a tool called the API
                if isinstance(outcome, HttpResponse):
                    refused = True
                    kept = {k: v for k, v in outcome.items() if k.lower() in ("www-authenticate", "retry-after")}
                    await Response(outcome.content, outcome.status_code, kept, media_type="application/json")(
                        scope, receive, send
                    )
            if not refused:
                await send(message)

        await self.app({**scope, ADMISSION: admission}, receive, send_once_admitted)


def mcp_application(django_application):
    """The ASGI app of /mcp (with the lifespan that runs the MCP session manager). Its gate and its tools
    call the API through `django_application`, in this process."""

    @asynccontextmanager
    async def client_for(ctx):
        scope = ctx.request.scope
        sender = DjangoSender(scope[ADMISSION], scope)
        async with AsyncMemoryAdmin("", "", send=sender) as api:
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
