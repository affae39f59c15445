"""No client names its own address. Every server the product starts trusts no forwarded header itself (the
application reads X-Forwarded-For only behind TRUSTED_PROXIES proxies), and /mcp makes its API calls from
the caller's address, so login and bad-token limits count the real client."""

import asyncio
import runpy
from pathlib import Path

import pytest
from click.testing import CliRunner  # noqa: F401  (uvicorn's command line is a click command)
from uvicorn.main import main as uvicorn_main
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from curation.api.mcp_http import mcp_application
from tests.live import run_async, threaded_django
from tests.unit.test_access_log import shipped_config

ROOT = Path(__file__).resolve().parents[2]


def _client_seen(trusted_hosts) -> tuple:
    """The client address an app behind uvicorn's proxy-header handling sees, for a request from this host
    that claims another address."""
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"]

    scope = {
        "type": "http",
        "client": ("127.0.0.1", 40000),
        "scheme": "http",
        "headers": [(b"x-forwarded-for", b"203.0.113.66")],
    }
    run_async(lambda: ProxyHeadersMiddleware(app, trusted_hosts=trusted_hosts)(scope, None, None))
    return seen["client"]


def test_the_shipped_gunicorn_trusts_no_forwarded_header():
    config = shipped_config()
    assert _client_seen(config.forwarded_allow_ips) == ("127.0.0.1", 40000)
    # uvicorn's and gunicorn's own default trusts this host: the shipped configuration is what refuses it
    assert _client_seen("127.0.0.1") == ("203.0.113.66", 0)


def test_the_demo_server_trusts_no_forwarded_header():
    command = runpy.run_path(str(ROOT / "scripts" / "demo.py"))["web_command"]("8000")
    assert command[1:3] == ["-m", "uvicorn"]
    context = uvicorn_main.make_context("uvicorn", command[3:])
    assert context.params["proxy_headers"] is False


async def _call(app, client, token) -> int:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "http_version": "1.1",
        "client": client,
        "server": ("testserver", 80),
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
        ],
    }
    statuses = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0]


async def _while_serving(app, calls) -> list[int]:
    """`_call` for each (client, token) of `calls`, while the app runs: its lifespan started, as the ASGI
    server starts it."""
    inbox, outbox = asyncio.Queue(), asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    lifespan = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put))
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    try:
        return [await _call(app, client, token) for client, token in calls]
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await lifespan


@pytest.mark.django_db(transaction=True)
def test_mcp_counts_bad_tokens_per_caller_not_per_process(settings):
    settings.CURATION = {**settings.CURATION, "API_BAD_TOKEN_LIMIT": 2}
    guesser, bystander = ("203.0.113.7", 50000), ("198.51.100.9", 50001)
    calls = [(guesser, f"ma_guess{n}") for n in range(3)] + [(bystander, "ma_mistyped")]
    with threaded_django() as django_application:
        app = mcp_application(django_application)
        answers = run_async(lambda: _while_serving(app, calls))
    assert answers[:3] == [401, 401, 429]
    # Another agent calling /mcp is not held back by the guesser's count.
    assert answers[3] == 401
