"""What an outside probe sees of the hardening: throttled sign-ins and token guesses, pages no cache keeps,
a Content-Security-Policy, error pages that never show Django's debug page, and production settings
that `check --deploy` finds clean and that refuse a placeholder secret."""

import itertools
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from curation.services.tokens import create_agent_token
from memoryadmin.settings import local_secret_key
from tests.factories import PASSWORD, Agent, client_for, make_user

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db
_addresses = (f"10.{n // 250}.{n % 250}.{os.getpid() % 250}" for n in itertools.count(1))


def an_address() -> str:
    """A client address of its own for each test: throttle counters live in the cache (Redis on the
    PostgreSQL run), which outlives a test's database."""
    return next(_addresses)


def sign_in(username, password, address):
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})


# --- login throttling ----------------------------------------------------------------------------------------


def test_five_failed_sign_ins_lock_the_user_name_from_any_address(settings):
    lena = make_user("lena", "lead")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in("lena", "wrong", an_address()).status_code == 200  # the form again, with its error
    assert sign_in("lena", "wrong", an_address()).status_code == 429  # the fifth failure locks
    locked = sign_in("lena", PASSWORD, an_address())  # the right password, from yet another address
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Sign-in locked for a while" in page and "Try again in 15 minutes" in page
    assert "_auth_user_id" not in Client().session.keys()
    # Another user is not held back.
    make_user("rita", "reviewer")
    assert sign_in("rita", PASSWORD, an_address()).status_code == 302
    assert lena.is_active


def test_failed_sign_ins_from_one_address_lock_that_address(settings):
    make_user("rita", "reviewer")
    address = an_address()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(f"guess-{n}", "wrong", address)
    assert sign_in("rita", PASSWORD, address).status_code == 429
    assert sign_in("rita", PASSWORD, an_address()).status_code == 302


def test_a_success_resets_the_count(settings):
    make_user("rita", "reviewer")
    address = an_address()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("rita", "wrong", address)
    assert sign_in("rita", PASSWORD, address).status_code == 302
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("rita", "wrong", address)
    assert sign_in("rita", PASSWORD, address).status_code == 302


def test_behind_the_proxy_the_forwarded_client_is_throttled_not_the_proxy(settings):
    settings.TRUSTED_PROXIES = 1
    make_user("rita", "reviewer")
    proxy, attacker = an_address(), an_address()
    for n in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR=proxy).post(
            "/accounts/login/", {"username": f"guess-{n}", "password": "x"}, HTTP_X_FORWARDED_FOR=f"1.2.3.4, {attacker}"
        )
    through = Client(REMOTE_ADDR=proxy)
    assert (
        through.post(
            "/accounts/login/", {"username": "rita", "password": PASSWORD}, HTTP_X_FORWARDED_FOR=attacker
        ).status_code
        == 429
    )
    assert (
        through.post(
            "/accounts/login/", {"username": "rita", "password": PASSWORD}, HTTP_X_FORWARDED_FOR=an_address()
        ).status_code
        == 302
    )


def test_a_secret_typed_as_the_user_name_is_never_recorded():
    from axes.models import AccessAttempt

    address = an_address()
    sign_in("AKIAZ3MPLE7QWERTY123", "whatever", address)
    sign_in("lena", "wrong", address)
    names = list(AccessAttempt.objects.filter(ip_address=address).values_list("username", flat=True))
    assert "lena" in names and not any("AKIAZ3MPLE7QWERTY123" in (name or "") for name in names)
    assert any(name and "[REDACTED" in name for name in names)


# --- bad agent tokens ------------------------------------------------------------------------------------------


def test_guessing_tokens_is_rate_limited_per_address_and_good_tokens_pass(settings):
    settings.CURATION = {**settings.CURATION, "API_BAD_TOKEN_LIMIT": 3}
    address = an_address()
    guesser = Client(REMOTE_ADDR=address)
    answers = [
        guesser.get("/api/v1/memory", {"scope": "acme"}, HTTP_AUTHORIZATION=f"Bearer ma_guess{n}") for n in range(4)
    ]
    assert [a.status_code for a in answers] == [401, 401, 401, 429]
    assert "Too many requests with an unknown token" in answers[-1].json()["error"]
    assert int(answers[-1]["Retry-After"]) >= 1
    lead = make_user("lena", "lead")
    _, key = create_agent_token(name="ci", scopes=["acme"], actor=lead)
    good = Client(REMOTE_ADDR=address).get("/api/v1/memory", {"scope": "acme"}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert good.status_code == 200


# --- caches ------------------------------------------------------------------------------------------------------


def test_token_pages_history_exports_and_api_answers_are_never_stored(make_candidate):
    lead = make_user("lena", "lead")
    console = client_for(lead)
    token, key = create_agent_token(name="ci", scopes=["acme"], actor=lead)
    entry = make_candidate()
    answers = {
        "token list": console.get("/agents/tokens/"),
        "new token": console.post("/agents/tokens/new/", {"name": "web", "scopes": "acme", "expires": "1h"}),
        "revoke": console.post(f"/agents/tokens/{token.pk}/revoke/"),
        "history export": console.get(f"/entries/{entry.pk}/history.json"),
        "api answer": Agent(key).retrieve(scope="acme"),
        "api refusal": Agent("ma_wrong").retrieve(scope="acme"),
    }
    for what, response in answers.items():
        assert response.status_code < 500, what
        assert "no-store" in response["Cache-Control"], what


# --- headers and error pages ----------------------------------------------------------------------------------------


def test_every_console_page_carries_the_content_security_policy():
    for response in (Client().get("/accounts/login/"), client_for(make_user("rita", "reviewer")).get("/")):
        policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
        assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"


def test_unknown_pages_and_server_errors_show_our_pages_not_the_debug_page(monkeypatch):
    reviewer = client_for(make_user("rita", "reviewer"))
    missing = reviewer.get("/no/such/page/")
    assert missing.status_code == 404
    assert "There is nothing here in your scopes." in missing.content.decode()
    assert "URLconf" not in missing.content.decode()

    def broken(*args, **kwargs):
        raise RuntimeError("a bug that reaches the user")

    monkeypatch.setattr("curation.views.dashboard.board_reads.dashboard", broken)
    reviewer.raise_request_exception = False
    failed = reviewer.get("/")
    assert failed.status_code == 500
    page = failed.content.decode()
    assert "Something went wrong on our side" in page
    assert "Traceback" not in page and "a bug that reaches the user" not in page


def test_health_check_needs_no_session_and_escapes_the_https_redirect(settings):
    settings.SECURE_SSL_REDIRECT = True
    assert Client().get("/healthz/").content == b"ok\n"
    redirected = Client().get("/accounts/login/")
    assert redirected.status_code == 301 and redirected["Location"].startswith("https://")


# --- production settings --------------------------------------------------------------------------------------------

PRODUCTION = {
    "DEBUG": "false",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_COOKIES": "true",
    "HTTPS_PROXY_HEADER": "true",
}


def manage(*args, **env):
    # The test run's own switches (tests/conftest.py allows Playwright's loop beside the ORM) are not a deployment's.
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings", **env},
    )


def test_check_deploy_is_clean_with_the_production_settings(tmp_path):
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        SECRET_KEY=secrets.token_urlsafe(50),
        MEMORYADMIN_DATA_DIR=str(tmp_path),
        **PRODUCTION,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_names_what_the_embedded_default_leaves_off(tmp_path):
    result = manage("check", "--deploy", MEMORYADMIN_DATA_DIR=str(tmp_path))
    # The insecure session cookie is named for the installed sessions app (W010): the session middleware is the
    # project's own, which agent API calls skip, so Django no longer names it for the middleware too (W012).
    for check in ("security.W004", "security.W008", "security.W010", "memoryadmin.W001"):
        assert check in result.stderr, check


@pytest.mark.parametrize("key", ["insecure-compose-key-set-SECRET_KEY-in-.env", "short", "x" * 40])
def test_a_placeholder_or_short_secret_key_refuses_to_start(tmp_path, key):
    result = manage("check", SECRET_KEY=key, MEMORYADMIN_DATA_DIR=str(tmp_path), **PRODUCTION)
    assert result.returncode != 0
    assert "SECRET_KEY must be a random value of 50 or more characters" in result.stderr


def test_without_a_secret_key_one_is_made_once_and_kept_private(tmp_path):
    key = local_secret_key(tmp_path)
    assert len(key) >= 60 and local_secret_key(tmp_path) == key
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600
