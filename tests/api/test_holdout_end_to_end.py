"""2,000 simulated tasks with a known effect (memory +10 points) go through the agent API; the evaluation
API and the learning dashboard find it, within their 95% interval."""

import random
import re

import pytest

from curation.models import Retrieval
from tests.factories import client_for, publish_pending, set_holdout

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"
TASKS = 2000
SUCCESS = {"memory": 0.70, "holdout": 0.60}


def test_a_known_effect_is_reported_within_its_interval(agent, approved, lead, settings):
    settings.CURATION = {**settings.CURATION, "API_RATE_LIMIT": 0}  # 4,000 requests in well under a minute
    approved(scope=SCOPE, signal="external", confidence=0.9)
    publish_pending()
    agent.publish_first = False
    set_holdout("acme", 0.5)
    outcomes = random.Random(20261203)
    for i in range(TASKS):
        answer = agent.post("memory/search", {"scope": f"{SCOPE}/container", "q": "config", "task_ref": f"sim-{i}"})
        body = answer.json()
        assert (body["entries"] == []) == (body["arm"] == "holdout")
        outcome = "success" if outcomes.random() < SUCCESS[body["arm"]] else "failure"
        assert agent.post("feedback", {"retrieval_id": body["retrieval_id"], "outcome": outcome}).status_code == 200
    held_out = Retrieval.objects.filter(arm="holdout").count()
    assert 900 < held_out < 1100  # half of the tasks, by their hash

    figures = agent.get("evaluation", scope="acme/billing-api").json()["windows"]["7"]
    assert figures["tasks"] == TASKS and figures["verdict"] == "helps"
    low, high = figures["difference"]["ci95"]
    assert low <= 10.0 <= high and low > 0
    for arm in ("memory", "holdout"):
        rate_low, rate_high = figures[arm]["ci95"]
        assert rate_low <= SUCCESS[arm] <= rate_high

    page = client_for(lead).get("/learning/", {"scope": "acme"})
    text = re.sub(r"\s+", " ", page.content.decode())
    verdict = re.search(
        r'id="verdict-30"><strong>30 days:</strong> (memory helps: ([+-][\d.]+) points, 95% CI '
        r'([+-][\d.]+) to ([+-][\d.]+), 2,000 tasks)',
        text,
    )
    assert verdict, "the dashboard states the verdict"
    assert float(verdict.group(3)) <= 10.0 <= float(verdict.group(4))
    assert figures["text"] == verdict.group(1)  # the page and the API say the same
