"""The Python client (clients/python) against a live memoryadmin (pytest-django's live_server)."""

from __future__ import annotations

import http.server
import json
import threading
import time
import uuid

import httpx
import pytest
from memoryadmin_client import (
    AsyncMemoryAdmin,
    AuthenticationError,
    InvalidInput,
    MemoryAdmin,
    NotFound,
    PermissionDenied,
    RateLimited,
    RetryPolicy,
    TransportError,
)

from curation.rules.evaluation import HOLDOUT, assign_arm
from curation.models import Entry, Feedback, ForgetRequest, IdempotentAnswer
from curation.services import approve_candidate
from tests.factories import publish_pending, set_holdout
from tests.live import run_async, token_key

pytestmark = pytest.mark.django_db(transaction=True)

LESSON = dict(
    scope="acme/billing-api",
    kind="failure_lesson",
    signal="external",
    trigger="Rotating the billing-api webhook signing key",
    content="Deploy the new signing key to every worker before revoking the old one.",
    evidence=[
        {"kind": "tool_output", "signal": "external", "excerpt": "worker-3: webhook signature mismatch after rotation"}
    ],
)


class Recording(httpx.HTTPTransport):
    """The real transport, noting each request's method, URL and headers."""

    def __init__(self):
        super().__init__()
        self.requests: list[httpx.Request] = []

    def handle_request(self, request):
        self.requests.append(request)
        return super().handle_request(request)


def test_the_sync_client_submits_searches_and_reports(live_server, lead):
    transport = Recording()
    with MemoryAdmin(live_server.url, token_key("py-agent", ["acme/billing-api"]), transport=transport) as api:
        assert api.token()["scopes"] == ["acme/billing-api"]
        submitted = api.submit_candidate(**LESSON)
        assert submitted["status"] == "pending" and submitted["created"] is True
        entry = Entry.objects.get(pk=submitted["id"])
        approve_candidate(entry.pk, actor=lead, expected_version=entry.version)
        publish_pending()  # agents read the published version

        found = api.search_memory("acme/billing-api", "webhook signing key rotation", k=3, task_ref="task-7")
        assert [e["id"] for e in found["entries"]] == [entry.pk] and LESSON["content"] in found["context"]
        search = transport.requests[-1]
        assert search.method == "POST" and search.url.path == "/api/v1/memory/search" and not search.url.query
        assert json.loads(search.content)["q"] == "webhook signing key rotation"

        outcome = api.report_outcome(found["retrieval_id"], "success", utility=0.9, used=[entry.pk])
        assert outcome["recorded"] is True
        assert json.loads(transport.requests[-1].content)["used"] == [entry.pk]  # the lessons the agent applied
        assert Feedback.objects.get(retrieval_id=found["retrieval_id"]).used_entry_ids == [entry.pk]
        assert outcome["entries"][0]["lift"]["tasks_with"] == 1
        assert api.report_outcome(found["retrieval_id"], "success")["recorded"] is False
        detail = api.get_entry(entry.pk)
        # One success, no tasks without it yet (the baseline's flat prior, 1/2), 20 pseudo-tasks: +(1 - 1/2) / 21.
        assert detail["confidence"] == pytest.approx(entry.confidence + 0.5 / 21, abs=1e-4)
        added = api.add_evidence(entry.pk, kind="test_result", signal="external", excerpt="drill passed")
        assert added["evidence"]["excerpt"] == "drill passed"
        assert api.list_skills("acme/billing-api") == {"skills": [], "next_after": None, "memory_version": 2}
        forget = api.request_forget(entry_id=entry.pk, reason="the user asked to forget it")
        assert (forget["entry_id"], forget["state"]) == (entry.pk, "open")
        assert ForgetRequest.objects.get(pk=forget["id"]).reason == "the user asked to forget it"
        # A task pinned to the version it started with reads the same memory after a later publish.
        pinned = found["memory_version"]
        later = api.submit_candidate(**{**LESSON, "trigger": "Rotating the webhook key again"})
        approve_candidate(later["id"], actor=lead, expected_version=1)
        publish_pending()
        again = api.search_memory("acme/billing-api", "webhook signing key rotation", k=3, version=pinned)
        assert (again["memory_version"], [e["id"] for e in again["entries"]]) == (pinned, [entry.pk])
    # Every submission carried an idempotency key; nothing else did.
    keyed = [(r.method, r.url.path) for r in transport.requests if "Idempotency-Key" in r.headers]
    assert keyed == [("POST", "/api/v1/candidates")] * 2


def test_a_repeated_submission_with_its_key_writes_once(live_server):
    key = str(uuid.uuid4())
    with MemoryAdmin(live_server.url, token_key("py-agent", ["acme/billing-api"])) as api:
        first = api.submit_candidate(**LESSON, idempotency_key=key)
        again = api.submit_candidate(**LESSON, idempotency_key=key)
    assert again == first
    assert Entry.objects.filter(trigger=LESSON["trigger"]).count() == 1
    assert IdempotentAnswer.objects.count() == 1


def test_refusals_are_exceptions_with_the_apis_per_field_messages(live_server):
    with MemoryAdmin(live_server.url, token_key("py-agent", ["acme/billing-api"])) as api:
        with pytest.raises(InvalidInput) as bad:
            api.submit_candidate(**{**LESSON, "kind": "rumour", "trigger": ""})
        assert bad.value.status == 422 and set(bad.value.errors) >= {"kind", "trigger"}
        assert "kind:" in str(bad.value)
        with pytest.raises(InvalidInput) as bad_k:
            api.search_memory("acme/billing-api", "x", k=0)
        assert bad_k.value.errors == {"k": ["From 1 to 20."]}
        with pytest.raises(PermissionDenied):
            api.search_memory("globex", "x")
        with pytest.raises(NotFound):
            api.get_entry(999999)
        with pytest.raises(NotFound):
            api.get_skill("no-such-skill")
    with pytest.raises(AuthenticationError) as unknown:
        MemoryAdmin(live_server.url, "not-a-token").token()
    assert unknown.value.message == "This token is unknown, revoked or expired."


def test_the_async_client_makes_the_same_calls(live_server, lead):
    key = token_key("async-agent", ["acme/billing-api"])

    async def scenario():
        async with AsyncMemoryAdmin(live_server.url, key) as api:
            submitted = await api.submit_candidate(**LESSON)
            entry = Entry.objects.get(pk=submitted["id"])
            approve_candidate(entry.pk, actor=lead, expected_version=entry.version)
            publish_pending()  # agents read the published version
            found = await api.search_memory("acme/billing-api", "webhook")
            assert [e["id"] for e in found["entries"]] == [entry.pk]
            assert (await api.report_outcome(found["retrieval_id"], "failure"))["recorded"] is True
            with pytest.raises(InvalidInput) as bad:
                await api.search_memory("acme/../x")
            assert "scope" in bad.value.errors

    run_async(scenario)
    # One failure is no evidence of harm: it costs the lesson a little and sends nobody a card.
    entry = Entry.objects.get(trigger=LESSON["trigger"])
    assert entry.queued_at is None and entry.base_confidence == pytest.approx(0.85 - 0.5 / 21)


def test_the_live_rate_limit_answers_rate_limited_with_retry_after(live_server, settings):
    settings.CURATION = {**settings.CURATION, "API_RATE_LIMIT": 2}
    with MemoryAdmin(
        live_server.url, token_key("busy-agent", ["acme"]), retry=RetryPolicy(attempts=2, max_wait=0.5)
    ) as api:
        api.token()
        api.token()
        with pytest.raises(RateLimited) as limited:
            api.token()  # the server's Retry-After (the rest of the minute) is over max_wait: raised at once
    assert limited.value.status == 429 and 1 <= limited.value.retry_after <= 61
    assert "Rate limit of 2 requests a minute reached" in limited.value.message


class Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 429 (Retry-After: 1), then 503 without Retry-After, then the created answer."""

    answers = []
    seen: list[tuple[str, str | None, float]] = []

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        Flaky.seen.append((self.path, self.headers.get("Idempotency-Key"), time.monotonic()))
        status, headers, body = Flaky.answers.pop(0)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky_server():
    Flaky.seen = []
    Flaky.answers = [
        (429, {"Retry-After": "1"}, {"error": "Rate limit of 600 requests a minute reached."}),
        (503, {}, {"error": "Service unavailable."}),
        (201, {}, {"id": 7, "status": "pending", "created": True}),
    ]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_429_and_a_503_are_retried_with_the_same_idempotency_key(flaky_server, flavour):
    retry = RetryPolicy(attempts=3, backoff=0.05)
    if flavour == "sync":
        with MemoryAdmin(flaky_server, "token", retry=retry) as api:
            answer = api.submit_candidate(**LESSON)
    else:

        async def submit():
            async with AsyncMemoryAdmin(flaky_server, "token", retry=retry) as api:
                return await api.submit_candidate(**LESSON)

        answer = run_async(submit)
    assert answer == {"id": 7, "status": "pending", "created": True}
    (path, key, first), (_, key2, second), (_, key3, third) = Flaky.seen
    assert path == "/api/v1/candidates" and key and key == key2 == key3
    assert second - first >= 0.95  # it waited what Retry-After said
    assert third - second < 0.5  # then backed off on its own schedule


def test_an_unreachable_server_is_a_transport_error():
    with MemoryAdmin("http://127.0.0.1:9", "token", retry=RetryPolicy(attempts=2, backoff=0.01)) as api:
        with pytest.raises(TransportError) as unreachable:
            api.token()
    assert unreachable.value.status == 0 and "Could not reach" in unreachable.value.message


def test_the_client_passes_the_holdout_arm_and_reads_the_evaluation(live_server, lead):
    set_holdout("acme/billing-api", 0.5)
    held = next(f"task-{i}" for i in range(1000) if assign_arm("acme/billing-api", f"task-{i}", 0.5) == HOLDOUT)
    with MemoryAdmin(live_server.url, token_key("py-agent", ["acme/billing-api"])) as api:
        submitted = api.submit_candidate(**LESSON)
        approve_candidate(submitted["id"], actor=lead, expected_version=1)
        publish_pending()
        found = api.search_memory("acme/billing-api", "webhook signing key rotation", task_ref=held)
        assert (found["arm"], found["entries"], found["context"]) == ("holdout", [], "")
        assert api.report_outcome(found["retrieval_id"], "failure")["arm"] == "holdout"
        assert Entry.objects.get(pk=submitted["id"]).hit_count == 0  # the holdout's outcome moved nothing
        figures = api.evaluation("acme/billing-api", days=7)
        assert figures["windows"]["7"]["holdout"]["tasks"] == 1
        with pytest.raises(InvalidInput):
            api.evaluation("acme/billing-api", days=12)


def test_an_async_client_given_a_sender_reads_refuses_and_retries_as_over_http():
    """A server answering the API in its own process (/mcp) hands the client a sender in place of HTTP: the
    Calls and the reading of their answers stay the client's."""
    sent = []
    answers = [
        httpx.Response(
            429, headers={"Retry-After": "0"}, json={"error": "Rate limit of 600 requests a minute reached."}
        ),
        httpx.Response(201, json={"id": 7, "status": "pending", "created": True}),
        httpx.Response(400, json={"error": "Some fields are not valid.", "errors": {"scope": ["No such scope."]}}),
    ]

    async def send(call):
        sent.append(call)
        return answers.pop(0)

    async def scenario():
        async with AsyncMemoryAdmin("", "", send=send, retry=RetryPolicy(attempts=3, backoff=0.01)) as api:
            created = await api.submit_candidate(**LESSON)
            with pytest.raises(InvalidInput) as refused:
                await api.search_memory("acme/nowhere", "signing key")
        return created, refused.value

    created, refused = run_async(scenario)

    assert created == {"id": 7, "status": "pending", "created": True}
    assert [(c.method, c.path) for c in sent] == [
        ("POST", "/api/v1/candidates"),
        ("POST", "/api/v1/candidates"),
        ("POST", "/api/v1/memory/search"),
    ]
    assert sent[0].idempotency_key and sent[0].idempotency_key == sent[1].idempotency_key  # the 429 was retried
    assert refused.status == 400 and refused.errors == {"scope": ["No such scope."]}
