import json
import uuid

import pytest
from django.test import Client

from curation.services.tokens import create_agent_token

from conftest import active, candidate_data


class Agent:
    """A test client that speaks to the agent API with one token."""

    def __init__(self, key: str, token=None):
        self.key, self.token = key, token
        self.client = Client()

    def headers(self, extra=None):
        return {"HTTP_AUTHORIZATION": f"Bearer {self.key}", **(extra or {})}

    def post(self, path, body, *, content_type="application/json", **extra):
        if isinstance(body, bytes):  # sent as is, whatever charset the content type claims
            return self.client.generic("POST", f"/api/v1/{path}", data=body, CONTENT_TYPE=content_type,
                                       **self.headers(extra))
        data = body if isinstance(body, str) else json.dumps(body)
        return self.client.post(f"/api/v1/{path}", data=data, content_type=content_type, **self.headers(extra))

    def get(self, path, **params):
        return self.client.get(f"/api/v1/{path}", params, **self.headers())

    def submit(self, **overrides):
        return self.post("candidates", api_candidate(**overrides))

    def retrieve(self, scope="acme/billing-api/container", **params):
        return self.get("memory", scope=scope, **params)


def api_candidate(**overrides):
    data = candidate_data(signal="external")
    data.pop("confidence")
    data.update(overrides)
    return data


@pytest.fixture(autouse=True)
def fresh_rate_limits(settings):
    """Rate-limit windows must not leak between tests; a key prefix of its own for each test does it
    without flushing a Redis database that the Celery broker may share."""
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}}
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
