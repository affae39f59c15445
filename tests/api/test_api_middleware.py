"""An agent API call skips the console's session, signed-in user and messages middleware (CPU on every
agent read, for nothing it reads); the console keeps every one of them."""

import pytest
from django.test import Client

from curation.api import http
from curation.infra.middleware import is_agent_api_call

pytestmark = pytest.mark.django_db


def test_an_unknown_api_endpoint_answers_json_even_to_a_post_without_a_csrf_token():
    browser = Client(enforce_csrf_checks=True)
    answer = browser.post("/api/v1/nothing-here", {"a": "b"})
    assert answer.status_code == 404 and answer["Content-Type"] == "application/json"
    assert "No such endpoint" in answer.json()["error"]
    assert "sessionid" not in answer.cookies and "csrftoken" not in answer.cookies


def test_an_agent_read_answers_by_its_token_alone(agent, approved, monkeypatch):
    """The request an agent's read is answered from carries no session, signed-in user or messages: the console's
    middleware did not run for it."""
    seen = []
    authenticate = http._authenticate
    monkeypatch.setattr(http, "_authenticate", lambda request: seen.append(request) or authenticate(request))
    approved(scope="acme/billing-api", trigger="When the queue backs up", content="Drain it first.")
    answer = agent.retrieve(scope="acme/billing-api", q="queue")
    assert answer.status_code == 200 and len(answer.json()["entries"]) == 1
    assert "Cookie" not in answer.get("Vary", "") and not answer.cookies
    assert [hasattr(seen[0], name) for name in ("user", "_messages", "session")] == [False, False, False]


def test_the_console_keeps_its_csrf_check_and_its_session(lead):
    browser = Client(enforce_csrf_checks=True)
    refused = browser.post("/accounts/login/", {"username": "lena", "password": "x"})
    assert refused.status_code == 403  # no CSRF token: refused as before
    browser.force_login(lead)
    assert browser.get("/").status_code == 200
    assert browser.get("/api/v1/docs").status_code == 200  # the API's HTML page is the console's


@pytest.mark.parametrize(
    ("path", "agent_call"),
    [("/api/v1/memory", True), ("/api/v1/nothing", True), ("/api/v1/docs", False), ("/", False), ("/apiary", False)],
)
def test_which_requests_are_agent_api_calls(rf, path, agent_call):
    assert is_agent_api_call(rf.get(path)) is agent_call


def test_every_answer_carries_the_content_security_policy_built_once(agent, lead, monkeypatch, settings):
    """The policy header is django-csp's, on an agent's answer and a console page alike; it is built once
    for the settings, not for every response, and built anew when the settings name another."""
    from csp import utils

    from curation.infra import middleware

    policy = utils.build_policy()
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    builds = []
    monkeypatch.setattr(middleware, "build_policy", lambda **kw: builds.append(kw) or utils.build_policy(**kw))
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": dict(settings.CONTENT_SECURITY_POLICY["DIRECTIVES"])}
    browser = Client()
    browser.force_login(lead)
    answers = [agent.get("token"), agent.get("token"), browser.get("/"), browser.get("/")]
    assert [a.status_code for a in answers] == [200] * 4
    assert {a["Content-Security-Policy"] for a in answers} == {policy}
    assert [b for b in builds if not b["report_only"]] == [{"report_only": False}]  # once for all four answers

    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    assert agent.get("token")["Content-Security-Policy"] == "default-src 'none'"
