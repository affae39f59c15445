"""A published version decays as the live rows do: a release holds what confidence is derived from, so
agents reading an old version see its lessons fade and fall under the retrieval floor without a publish."""

import datetime
import math

import pytest
from django.utils import timezone

from curation.rules import clock, lifecycle

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"


def _read(agent, at):
    with clock.running_at(at):
        return agent.retrieve(scope=SCOPE).json()


def test_a_published_lesson_fades_and_leaves_the_answers_without_a_new_version(agent, approved):
    approved(
        scope=SCOPE,
        signal="external",
        confidence=0.8,
        evidence=[{"kind": "test_result", "signal": "external", "excerpt": "green"}],
    )
    rules = lifecycle.rules()
    now = timezone.now()
    first = _read(agent, now)
    [hit] = first["entries"]
    assert hit["confidence"] == pytest.approx(0.8, abs=1e-3)

    half_year = _read(agent, now + datetime.timedelta(days=180))
    assert half_year["memory_version"] == first["memory_version"]
    assert [e["confidence"] for e in half_year["entries"]] == [pytest.approx(0.8 * 0.95**6, abs=1e-3)]

    days_to_floor = rules.decay_period_days * math.log(rules.retrieve_at_least / 0.8) / math.log(rules.decay_factor)
    faded = _read(agent, now + datetime.timedelta(days=days_to_floor + 2))
    assert faded["memory_version"] == first["memory_version"] and faded["entries"] == []
