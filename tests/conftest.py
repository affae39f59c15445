import os

import pytest
import redis
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection

from curation import services
from tests.factories import candidate_data, make_user

# Playwright's sync API runs an event loop in the test thread; Django's ORM is still used synchronously.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    """The PostgreSQL run must really run on PostgreSQL, and postgres-only tests must not vanish from it."""
    if os.environ.get("MEMORYADMIN_REQUIRE_POSTGRES") == "1":
        engine = django_settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"MEMORYADMIN_REQUIRE_POSTGRES=1 but the database engine is {engine}")


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit counters live in the cache, which outlives a test's database (where token ids are reused):
    each test starts with none. On Redis only those keys go: the broker may share the database."""
    config = django_settings.CACHES["default"]
    if config["BACKEND"].endswith(".RedisCache"):
        client = redis.Redis.from_url(config["LOCATION"])
        keys = list(client.scan_iter(match="*:api-*"))
        if keys:
            client.delete(*keys)
        client.close()
    else:
        cache.clear()


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """Test users log in many times; the production hasher's cost buys nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def on_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (runs in the PostgreSQL pass of `make test`)")


@pytest.fixture
def reviewer(db):
    return make_user("rita", "reviewer")


@pytest.fixture
def second_reviewer(db):
    return make_user("rob", "reviewer")


@pytest.fixture
def lead(db):
    return make_user("lena", "lead")


@pytest.fixture
def auditor(db):
    return make_user("aude", "auditor")


@pytest.fixture
def scoped_reviewer(db):
    """A reviewer limited to acme/billing-api."""
    return make_user("sam", "reviewer", scopes=["acme/billing-api"])


@pytest.fixture
def nobody(db):
    """Signed in, but with no role."""
    return make_user("nora")


@pytest.fixture
def make_candidate(db):
    def make(evidence=(), **overrides):
        return services.create_candidate(data=candidate_data(**overrides), evidence=list(evidence), actor_label="agent:ci")

    return make
