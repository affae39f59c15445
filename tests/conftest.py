import os
import time
from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Max
from django.utils import timezone
from django.db.migrations.executor import MigrationExecutor

from curation import services
from curation.infra import redis
from curation.models import Entry, Event, MemoryVersion, PublishedVersion
from tests import redis_prefix
from tests.factories import candidate_data, make_user

# Playwright's sync API runs an event loop in the test thread; Django's ORM is still used synchronously.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Tests read the rows an agent's read writes right after it: each read writes its own, unless a test turns
# the buffer on (config.overriding(BUFFER_RETRIEVALS=True); tests/services/test_retrieval_buffer.py).
os.environ["MEMORYADMIN_BUFFER_RETRIEVALS"] = "false"


def pytest_collection_modifyitems(config, items):
    """The PostgreSQL run must really run on PostgreSQL, and postgres-only tests must not vanish from it."""
    if os.environ.get("MEMORYADMIN_REQUIRE_POSTGRES") == "1":
        engine = django_settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"MEMORYADMIN_REQUIRE_POSTGRES=1 but the database engine is {engine}")
    if redis.cache_url() and django_settings.CACHES["default"]["KEY_PREFIX"] != redis_prefix.RUN_PREFIX:
        raise pytest.UsageError(  # the tests would write, and forget, another prefix's keys
            "The settings' Redis key prefix is not the test run's: run pytest with the addopts of pyproject.toml "
            "(-p tests.redis_prefix)"
        )


def pytest_sessionfinish(session):
    """What the run left in Redis (read generations, rate counters, its queues) goes with it: its keys only."""
    redis_prefix.delete_keys()


def _version_one() -> None:
    """What `migrate` leaves on an empty database: version 1, holding nothing, published. (Migration 0021
    builds it from the entries of its day's schema; a flushed database has none.)"""
    assert not Entry.objects.exists(), "version 1 is made on an empty database"
    now = timezone.now()
    version = MemoryVersion.objects.create(
        number=1,
        summary="Version 1: the active entries and approved skills at the upgrade.",
        published_by_label="migration",
        added=0,
        pending_from_event=(Event.objects.aggregate(n=Max("pk"))["n"] or 0) + 1,
        created_at=now,
    )
    PublishedVersion.objects.create(id=1, version=version, switched_at=now)


@pytest.fixture(autouse=True)
def memory_version_one(request):
    """The database as `migrate` leaves it: version 1 published. A transactional test's flush (and a
    migration test that migrates back and forth) empties the tables the migration filled."""
    if not {"db", "transactional_db", "live_server"} & set(
        request.fixturenames
    ) and not request.node.get_closest_marker("django_db"):
        return
    request.getfixturevalue(
        "transactional_db"
        if "transactional_db" in request.fixturenames or "live_server" in request.fixturenames
        else "db"
    )
    if not PublishedVersion.objects.exists():
        _version_one()


@pytest.fixture
def migrates_back():
    """For a test that migrates the database to an older state: the latest schema again afterwards, so the
    tests after it run on the tables they expect."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture(autouse=True)
def fresh_rate_limits(monkeypatch):
    """Rate-limit counters live in the cache, which outlives a test's database (where token ids are reused):
    each test starts with none. On Redis only those keys go, and only the test run's own (tests/redis_prefix.py):
    the broker, and a running install, may share the database.

    The limiter's one-minute window is held in the middle of the current minute: a real minute may turn
    between two requests of a slow run, and a test counting requests up to a limit would then see none."""
    held = time.time() // 60 * 60 + 30
    monkeypatch.setattr("curation.api.http.time", SimpleNamespace(time=lambda: held))
    if redis.cache_url() is None:
        cache.clear()
    redis_prefix.delete_keys(":api-*")  # the buffered reads are "api-" keys too


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
        return services.create_candidate(
            data=candidate_data(**overrides), evidence=list(evidence), actor_label="agent:ci"
        )

    return make
