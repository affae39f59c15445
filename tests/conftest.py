import os

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client

from curation import services
from curation.models import ScopeGrant

# Playwright's sync API runs an event loop in the test thread; Django's ORM is still used synchronously.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

PASSWORD = "correct-horse-battery"


def pytest_collection_modifyitems(config, items):
    """The PostgreSQL run must really run on PostgreSQL, and postgres-only tests must not vanish from it."""
    if os.environ.get("MEMORYADMIN_REQUIRE_POSTGRES") == "1":
        from django.conf import settings

        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"MEMORYADMIN_REQUIRE_POSTGRES=1 but the database engine is {engine}")


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """Test users log in many times; the production hasher's cost buys nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def active(actor, at=None, evidence=(), **fields):
    """An active entry made the way a reviewer makes one: submitted by an agent, then approved."""
    entry = services.create_candidate(data=candidate_data(**fields), evidence=list(evidence), actor_label="agent:ci",
                                      at=at)
    return services.approve_candidate(entry.pk, actor=actor, expected_version=entry.version, at=at)


@pytest.fixture
def on_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (runs in the PostgreSQL pass of `make test`)")


def make_user(username, role=None, scopes=()):
    user = User.objects.create_user(username, password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    for prefix in scopes:
        ScopeGrant.objects.create(user=user, prefix=prefix)
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions


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


def candidate_data(**overrides):
    data = {
        "kind": "failure_lesson",
        "scope": "acme/billing-api/container",
        "trigger": "Editing config files inside the billing-api container",
        "content": "Confirm the repository root with `git rev-parse --show-toplevel` before editing config.",
        "boundary": "Does not apply on the host checkout, where the root is fixed.",
        "conditions": ["container", "config"],
        "signal": "self",
        "confidence": 0.7,
    }
    data.update(overrides)
    return data


@pytest.fixture
def make_candidate(db):
    def make(evidence=(), **overrides):
        return services.create_candidate(data=candidate_data(**overrides), evidence=list(evidence), actor_label="agent:ci")

    return make
