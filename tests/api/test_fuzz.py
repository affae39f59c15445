"""No input ever makes the agent API answer 500: property-based bodies and parameters for every endpoint."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.models import Kind, Signal
from tests.factories import nominated

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def field(*good):
    """Mostly plausible values for a field, often wrong ones."""
    return st.sampled_from(good) | json_values if good else json_values


evidence = st.fixed_dictionaries(
    {},
    optional={
        "kind": field("tool_output", "review", "gossip"),
        "signal": field(*Signal.values),
        "polarity": field("supports", "contradicts", "maybe"),
        "excerpt": field("exit 1", "", "x" * 4001),
        "task_ref": field("task-1"),
        "observed_at": field("2026-11-30T10:00:00Z", "yesterday", "2026-13-45"),
    },
)
candidate = st.fixed_dictionaries(
    {},
    optional={
        "scope": field("acme/billing-api", "acme/billing-api/x", "acme/web", "Acme", "a//b", "/", ""),
        "kind": field(*Kind.values),
        "signal": field(*Signal.values),
        "trigger": field("When deploying", "", "t" * 501),
        "content": field("Drain the queue first.", "c" * 4001),
        "conditions": field(["a", "b"], [], "a, b"),
        "boundary": field(""),
        "recheck_when": field(""),
        "review_by": field("2027-01-01", "2027-02-30", "soon"),
        "confidence": field(0.5, 1.5, -1, float("nan")),
        "source_task": field("task-9"),
        "evidence": st.lists(evidence, max_size=3) | json_values,
        "extra": json_values,
    },
)


def _assert_handled(response):
    assert response.status_code < 500, response.content[:500]
    json.loads(response.content)  # every answer, refusals included, is JSON


@FUZZ
@given(body=candidate | json_values)
def test_submit_never_500(agent, body):
    _assert_handled(agent.post("candidates", json.dumps(body)))


@FUZZ
@given(items=st.lists(candidate | json_values, max_size=4) | json_values)
def test_batch_never_500(agent, items):
    _assert_handled(agent.post("candidates/batch", json.dumps({"candidates": items})))


@FUZZ
@given(
    params=st.fixed_dictionaries(
        {},
        optional={
            "scope": field("acme/billing-api", "acme", "acme/billing-api/container"),
            "q": st.text(max_size=60),
            "k": field("5", "0", "21", "-3", "1e3"),
            "min_confidence": field("0.5", "nan", "inf", "-0"),
            "budget_chars": field("2000", "199", "9" * 30),
            "task_ref": st.text(max_size=20),
        },
    )
)
def test_memory_never_500(agent, params):
    params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}
    params = {k: v.replace("\x00", "") for k, v in params.items()}
    _assert_handled(agent.get("memory", **params))


@FUZZ
@given(
    body=st.fixed_dictionaries(
        {},
        optional={
            "retrieval_id": field("00000000-0000-0000-0000-000000000000", "nope"),
            "outcome": field("success", "failure"),
            "utility": field(0.5, 2, float("inf")),
            "used": field([1, 2], [], "all"),
        },
    )
    | json_values
)
def test_feedback_never_500(agent, body):
    _assert_handled(agent.post("feedback", json.dumps(body)))


@FUZZ
@given(entry_id=st.integers(min_value=0, max_value=2**63), body=evidence | json_values)
def test_entry_endpoints_never_500(agent, approved, entry_id, body):
    _assert_handled(agent.get(f"entries/{entry_id}"))
    _assert_handled(agent.post(f"entries/{entry_id}/evidence", json.dumps(body)))


@FUZZ
@given(
    raw=st.binary(max_size=200),
    content_type=st.sampled_from(
        ["application/json", "application/json; charset=latin-1", "text/plain", "", "multipart/form-data"]
    ),
)
def test_raw_bodies_never_500(agent, raw, content_type):
    _assert_handled(agent.post("candidates", raw, content_type=content_type))
    _assert_handled(agent.post("feedback", raw, content_type=content_type))


@pytest.fixture
def skill(db):
    return nominated(scope="acme/billing-api")


@FUZZ
@given(
    slug=field("running-migrations-in-the-billing-api-container", "x" * 65, "Bad_Slug", "a--b", "%00", ""),
    body=st.fixed_dictionaries(
        {},
        optional={
            "outcome": field("success", "failure", "maybe"),
            "task_ref": field("task-1", "", "t" * 256),
            "notes": field("fine", "\x00", "n" * 4001),
            "extra": json_values,
        },
    )
    | json_values,
)
def test_skill_trials_never_500(agent, skill, slug, body):
    slug = slug if isinstance(slug, str) else json.dumps(slug)
    _assert_handled(agent.post(f"skills/{slug.replace('/', '')}/trials", json.dumps(body)))
    _assert_handled(agent.get(f"skills/{slug.replace('/', '')}"))


@FUZZ
@given(
    params=st.fixed_dictionaries(
        {},
        optional={
            "scope": field("acme/billing-api", "acme", "acme/web", "A//b", ""),
            "limit": field("1", "0", "201", "x"),
            "after": field("a", "Bad Slug", "x" * 65),
        },
    )
)
def test_skill_list_never_500(agent, skill, params):
    params = {k: (v if isinstance(v, str) else json.dumps(v)).replace("\x00", "") for k, v in params.items()}
    _assert_handled(agent.get("skills", **params))
