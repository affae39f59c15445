"""Every process keeps the token and the published version's number it read (selectors.read_cache); a
revoke and a publish reach this process and every other one on their very next request."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from django.db import connection

from curation.infra import redis as infra_redis
from curation.models import AgentToken
from curation.selectors import read_cache
from curation.services.tokens import create_agent_token, revoke_agent_token
from tests.factories import Agent, publish_pending
from tests.redis_prefix import own_prefix

ROOT = Path(__file__).resolve().parent.parent.parent


def _redis_url(settings) -> str:
    configured = settings.CACHES["default"]
    if configured["BACKEND"].endswith(".RedisCache"):
        return configured["LOCATION"]
    return os.environ.get("MEMORYADMIN_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def shared_cache(settings):
    """The cache every process shares (Redis), under a key prefix of this test's own; skipped where no Redis
    answers (the read cache keeps nothing without one: every read asks the database)."""
    url = _redis_url(settings)
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip(f"no Redis at {url}")
    prefix = own_prefix()
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "KEY_PREFIX": prefix}
    }
    return url, prefix


def _make_agent(name="cached-agent"):
    token, key = create_agent_token(name=name, scopes=["acme/billing-api"])
    agent = Agent(key, token)
    agent.publish_first = False  # the publishes are the test's own
    return agent


def _kept_tokens() -> int:
    return len(read_cache._state["tokens"])


@pytest.mark.django_db
def test_a_revoked_token_is_refused_on_its_very_next_request_in_the_same_process(shared_cache, lead):
    agent = _make_agent()
    assert agent.get("token").status_code == 200
    assert agent.get("token").status_code == 200
    assert _kept_tokens() == 1  # the second request read this process's copy

    revoke_agent_token(agent.token.pk, actor=lead)

    refused = agent.get("token")
    assert refused.status_code == 401
    assert refused.json()["error"] == "This token is unknown, revoked or expired."


@pytest.mark.django_db
def test_a_publish_is_read_by_the_next_request(shared_cache, lead, approved):
    agent = _make_agent()
    approved(scope="acme/billing-api", trigger="When the nightly export stalls", content="Restart the exporter.")
    first = publish_pending()
    assert agent.get("memory", scope="acme/billing-api", q="export").json()["memory_version"] == first.number

    approved(scope="acme/billing-api", trigger="When the invoice queue backs up", content="Drain the queue first.")
    second = publish_pending()

    answer = agent.get("memory", scope="acme/billing-api", q="invoice queue").json()
    assert answer["memory_version"] == second.number
    assert [e["trigger"] for e in answer["entries"]] == ["When the invoice queue backs up"]


@pytest.mark.django_db
def test_without_a_shared_cache_nothing_is_kept(settings, lead):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    agent = _make_agent()
    assert agent.get("token").status_code == 200
    assert _kept_tokens() == 0
    revoke_agent_token(agent.token.pk, actor=lead)
    assert agent.get("token").status_code == 401


# Another process: a Python that reads through the same selectors, on the same database and Redis, and
# answers one line per command.
OTHER_PROCESS = """
import json, sys, django
django.setup()
from curation.rules import clock
from curation.selectors import read_cache
for line in sys.stdin:
    command, _, argument = line.strip().partition(" ")
    if command == "token":
        found = read_cache.token(argument, clock.wall())
        print(json.dumps({"usable": found is not None, "kept": len(read_cache._state["tokens"])}), flush=True)
    elif command == "published":
        print(json.dumps({"number": read_cache.published_number()}), flush=True)
"""


class OtherProcess:
    def __init__(self, redis_url: str, prefix: str):
        db = connection.settings_dict
        if connection.vendor == "postgresql":
            url = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        else:
            url = f"sqlite:///{db['NAME']}"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
            "DATABASE_URL": url,
            "REDIS_URL": redis_url,
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-c", OTHER_PROCESS.replace("django.setup()", _with_prefix(prefix))],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the other process ended"
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def _with_prefix(prefix: str) -> str:
    """django.setup() with the test's cache key prefix (the settings read REDIS_URL; the prefix is the test's)."""
    return f"from django.conf import settings; settings.CACHES['default']['KEY_PREFIX'] = {prefix!r}; django.setup()"


@pytest.mark.django_db(transaction=True)
def test_a_revoke_and_a_publish_reach_another_process_on_its_next_request(shared_cache, lead, approved):
    agent = _make_agent()
    approved(scope="acme/billing-api", trigger="When the nightly export stalls", content="Restart the exporter.")
    first = publish_pending()
    other = OtherProcess(*shared_cache)
    try:
        assert other.ask(f"token {agent.key}") == {"usable": True, "kept": 1}
        assert other.ask(f"token {agent.key}") == {"usable": True, "kept": 1}  # its own copy now
        assert other.ask("published") == {"number": first.number}

        revoke_agent_token(agent.token.pk, actor=lead)
        assert AgentToken.objects.get(pk=agent.token.pk).revoked_at is not None
        assert other.ask(f"token {agent.key}") == {"usable": False, "kept": 0}

        approved(scope="acme/billing-api", trigger="When the invoice queue backs up", content="Drain it first.")
        second = publish_pending()
        assert other.ask("published") == {"number": second.number}
    finally:
        other.close()


@pytest.fixture
def redis_trips(monkeypatch):
    """Round trips to Redis: each command sent alone, and each pipeline or one_trip (its commands sent
    together)."""
    trips = []
    command, pipeline, together = redis.Redis.execute_command, redis.client.Pipeline.execute, infra_redis.one_trip

    def one(self, *args, **options):
        trips.append(args[0])
        return command(self, *args, **options)

    def many(self, *args, **options):
        trips.append(tuple(c[0][0] for c in self.command_stack))
        return pipeline(self, *args, **options)

    def one_trip(found, *commands):
        trips.append(tuple(c[0] for c in commands))
        return together(found, *commands)

    monkeypatch.setattr(redis.Redis, "execute_command", one)
    monkeypatch.setattr(redis.client.Pipeline, "execute", many)
    monkeypatch.setattr(infra_redis, "one_trip", one_trip)
    return trips


@pytest.mark.django_db
def test_a_kept_token_is_counted_in_the_same_round_trip_as_the_generation(shared_cache, settings, redis_trips):
    """An API call whose token this process keeps asks Redis once before its handler: the read cache's
    generation and the rate limit's count together. The count is the token's: past the limit, a 429."""
    settings.CURATION = {**settings.CURATION, "API_RATE_LIMIT": 3}
    agent = _make_agent()
    assert agent.get("token").status_code == 200  # the token read from the database, then kept
    redis_trips.clear()

    assert agent.get("token").status_code == 200
    assert redis_trips == [("GET", "INCR", "EXPIRE")]
    assert agent.get("token").status_code == 200
    refused = agent.get("token")
    assert refused.status_code == 429
    assert refused.json()["error"].startswith("Rate limit of 3 requests a minute reached")


@pytest.mark.django_db
def test_a_kept_token_revoked_since_is_refused_and_counted_as_a_bad_one(shared_cache, lead, settings):
    settings.CURATION = {**settings.CURATION, "API_BAD_TOKEN_LIMIT": 1}
    agent = _make_agent()
    assert agent.get("token").status_code == 200
    revoke_agent_token(agent.token.pk, actor=lead)
    assert agent.get("token").status_code == 401
    assert agent.get("token").status_code == 429  # the bad-token limit of its address


@pytest.mark.django_db
def test_the_generation_stays_readable_through_the_cache_api(shared_cache, lead):
    """Processes of an older release read the generation through Django's cache API: during a rolling
    deploy they still read it (and so a revoke made by either release)."""
    from django.core.cache import cache

    agent = _make_agent()
    assert agent.get("token").status_code == 200
    made = cache.get(read_cache.GENERATION_KEY)
    revoke_agent_token(agent.token.pk, actor=lead)
    moved = cache.get(read_cache.GENERATION_KEY)
    assert isinstance(made, str) and isinstance(moved, str) and made != moved
    assert agent.get("token").status_code == 401
