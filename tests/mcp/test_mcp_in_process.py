"""A /mcp tool call is one in-process API call behind one token check: the door checks the token, the tool's
API call carries it, and the answer is the plain API call's."""

from __future__ import annotations

import httpx
import pytest

from memoryadmin_client import mcp_server

from curation.api import http as api_http
from memoryadmin.threaded_wsgi import ThreadedWSGI
from curation.models import Retrieval
from curation.services.tokens import create_agent_token
from tests.factories import active, publish_pending

pytestmark = pytest.mark.django_db(transaction=True)

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _tool_call(url: str, key: str, name: str, arguments: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx.post(f"{url}/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})


@pytest.fixture
def token_checks(monkeypatch):
    """How many times the API's token check ran."""
    calls = []
    check = api_http._authenticate

    def counted(request):
        calls.append(request.path)
        return check(request)

    monkeypatch.setattr(api_http, "_authenticate", counted)
    return calls


@pytest.fixture
def trips(monkeypatch):
    """The work handed to Django's threads, one item per trip."""
    trips = []
    call = ThreadedWSGI.call

    async def counted(self, function, *args):
        trips.append(function)
        return await call(self, function, *args)

    monkeypatch.setattr(ThreadedWSGI, "call", counted)
    return trips


def test_a_tool_call_checks_the_token_once_and_answers_what_the_api_answers(asgi_server, reviewer, token_checks):
    active(reviewer, scope="acme/billing-api", trigger="Rotating the webhook signing key", content="Deploy it first.")
    active(reviewer, scope="acme/billing-api", trigger="When the invoice export stalls", content="Restart it.")
    publish_pending()
    token, key = create_agent_token(name="mcp-agent", scopes=["acme/billing-api"])

    answer = _tool_call(asgi_server, key, "search_memory", {"scope": "acme/billing-api", "query": "signing key"})

    assert answer.status_code == 200
    assert len(token_checks) == 1  # at the door; the tool's API call carried the accepted token
    result = answer.json()["result"]
    assert not result["isError"]
    found = result["structuredContent"]
    plain = httpx.post(
        f"{asgi_server}/api/v1/memory/search",
        json={"scope": "acme/billing-api", "q": "signing key"},
        headers={"Authorization": f"Bearer {key}"},
    ).json()
    assert [e["trigger"] for e in found["entries"]] == [e["trigger"] for e in plain["entries"]]
    assert [e["trigger"] for e in found["entries"]] == ["Rotating the webhook signing key"]
    # Both reads were recorded for the agent's token, the tool's with the query it sent.
    recorded = Retrieval.objects.get(pk=found["retrieval_id"])
    assert (recorded.token_id, recorded.query, recorded.scope) == (token.pk, "signing key", "acme/billing-api")


def test_a_tool_call_as_the_sdks_client_sends_it_is_one_trip_to_django_answered_in_json(
    asgi_server, reviewer, token_checks, trips, monkeypatch
):
    """The SDK's client speaks 2026-07-28: one self-contained POST naming the method and tool in headers. The
    token check and the tool's API call are one trip to Django's threads. The Mcp-Param headers are checked
    against the tool's input schema, which the server built once: no call renders a tool's JSON schema
    (pydantic's slowest work) again."""
    active(reviewer, scope="acme/billing-api", trigger="Rotating the webhook signing key", content="Deploy it first.")
    publish_pending()
    _, key = create_agent_token(name="mcp-agent", scopes=["acme/billing-api"])
    rendered = []
    render = mcp_server.ToolSpec.tool
    monkeypatch.setattr(mcp_server.ToolSpec, "tool", lambda spec: rendered.append(spec.name) or render(spec))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "search_memory",
            "arguments": {"scope": "acme/billing-api", "query": "signing"},
            "_meta": meta,
        },
    }
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}", "Mcp-Protocol-Version": "2026-07-28"}

    answer = httpx.post(
        f"{asgi_server}/mcp", json=body, headers={**headers, "Mcp-Method": "tools/call", "Mcp-Name": "search_memory"}
    )

    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    result = answer.json()["result"]
    assert not result["isError"]
    assert [e["trigger"] for e in result["structuredContent"]["entries"]] == ["Rotating the webhook signing key"]
    assert rendered == [] and len(token_checks) == 1
    assert len(trips) == 1  # the check, then the search with the accepted token
    # tools/list still gives every tool with its schema, from the same objects.
    listed = httpx.post(
        f"{asgi_server}/mcp",
        json={"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": meta}},
        headers={**headers, "Mcp-Method": "tools/list"},
    )
    tools = {tool["name"]: tool for tool in listed.json()["result"]["tools"]}
    assert list(tools) == list(mcp_server.TOOLS) and rendered == []
    assert len(token_checks) == 2 and len(trips) == 2  # no API call: the check alone
    assert tools["search_memory"]["inputSchema"] == mcp_server.SearchMemory.model_json_schema()


def test_a_tool_call_is_limited_to_the_tokens_scopes_without_a_second_check(asgi_server, token_checks):
    _, key = create_agent_token(name="mcp-agent", scopes=["acme/billing-api"])

    answer = _tool_call(asgi_server, key, "search_memory", {"scope": "globex/web", "query": "anything"})

    assert answer.status_code == 200 and len(token_checks) == 1
    result = answer.json()["result"]
    assert result["isError"] and "globex/web" in result["content"][0]["text"]
    assert not Retrieval.objects.exists()


def test_a_bad_token_is_refused_at_the_door_and_calls_no_tool(asgi_server, token_checks):
    answer = _tool_call(asgi_server, "ma_not-a-token", "search_memory", {"scope": "acme", "query": "x"})

    assert answer.status_code == 401
    assert answer.json() == {"error": "This token is unknown, revoked or expired."}
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert len(token_checks) == 1 and not Retrieval.objects.exists()
