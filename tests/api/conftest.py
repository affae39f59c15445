import pytest

from curation.services.tokens import create_agent_token
from tests.factories import Agent, active
from tests.redis_prefix import own_prefix


@pytest.fixture(autouse=True)
def fresh_rate_limits(fresh_rate_limits, settings):
    """Rate-limit windows must not leak between tests; a key prefix of its own for each test does it
    without flushing a Redis database that the Celery broker may share (under the run's prefix, which the
    run's cleanup reaches). On top of the project's own
    (tests/conftest.py), which holds the limiter's minute still: without it a minute turning between two
    requests of a test counting up to the limit reset the count."""
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": own_prefix()}}
    yield


@pytest.fixture
def make_agent(db):
    def make(name="billing-agent", scopes=("acme/billing-api",), **options):
        token, key = create_agent_token(name=name, scopes=list(scopes), **options)
        return Agent(key, token)

    return make


@pytest.fixture
def agent(make_agent):
    return make_agent()


@pytest.fixture
def approved(reviewer):
    """Make an active entry the way a reviewer would: submitted, then approved."""

    def approve(evidence=(), **overrides):
        return active(reviewer, evidence=evidence, **overrides)

    return approve
