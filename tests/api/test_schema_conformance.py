"""The API description matches the API: schemathesis generates requests for every operation of
/api/v1/openapi.json and checks that each answer's status code is documented, never a 5xx, and its body
matches the documented schema. Bounded and derandomized, so a run is the same run every time."""

import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from memoryadmin.wsgi import application

# What the description promises a client: no 5xx, only documented codes and content types, bodies as documented.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)

# Under input the description forbids, the API refuses it with a documented 4xx, never a 5xx and never a 2xx.
NEGATIVE_CHECKS = [not_a_server_error, status_code_conformance, negative_data_rejection]
negative_schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)
negative_schema.config.generation.update(modes=[GenerationMode.NEGATIVE], max_examples=10)


@pytest.fixture
def in_the_tests_transaction():
    """The application is called as a WSGI app, not through Django's test client: keep the request from
    closing the test's database connection when it ends, as the test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def bearer(db, lead, in_the_tests_transaction, settings):
    # The generated requests are many and fast: lift the per-token rate limit, as a load test would.
    settings.CURATION = {**settings.CURATION, "API_RATE_LIMIT": 100_000}
    from curation.services.tokens import create_agent_token

    _, key = create_agent_token(name="conformance", scopes=["acme"], actor=lead)
    return {"Authorization": f"Bearer {key}"}


@schema.parametrize()
@settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@pytest.mark.django_db
def test_every_operation_answers_as_documented(case, bearer):
    case.call_and_validate(headers=bearer, checks=CHECKS)


@negative_schema.parametrize()
@settings(
    max_examples=10,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@pytest.mark.django_db
def test_every_operation_refuses_what_the_description_forbids(case, bearer):
    case.call_and_validate(headers=bearer, checks=NEGATIVE_CHECKS)


def test_the_mcp_tools_require_what_the_api_requires():
    """An agent following the MCP tool's schema is never refused for a field the schema called optional."""
    from memoryadmin_client.mcp_server import AddEvidence, EvidenceItem, SubmitLesson

    from curation.api.openapi import schema as described

    components = described()["components"]["schemas"]
    for tool, component in ((SubmitLesson, "Candidate"), (EvidenceItem, "Evidence"), (AddEvidence, "Evidence")):
        required = set(tool.model_json_schema().get("required", ()))
        assert set(components[component]["required"]) <= required, tool.__name__
