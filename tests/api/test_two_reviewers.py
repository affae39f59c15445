"""What an agent sees of a two-reviewer scope: a first approval leaves its candidate pending and out of
memory, with the approval in its history; the second approval serves it."""

import pytest

from curation import services
from curation.rules.scope_policies import REVIEW
from curation.services.scope_policies import set_scope_policy

pytestmark = pytest.mark.django_db


def test_one_approval_of_two_serves_nothing_and_the_second_serves_it(agent, lead, reviewer, second_reviewer):
    set_scope_policy(REVIEW, data={"prefix": "acme/billing-api", "approvals": 2}, actor=lead)
    entry_id = agent.submit(trigger="Running the billing-api migrations twice").json()["id"]
    services.approve_candidate(entry_id, actor=reviewer, expected_version=1)

    detail = agent.get(f"entries/{entry_id}").json()
    assert (detail["status"], detail["queue_reason"]) == ("pending", "new")
    assert [e["action"] for e in detail["events"]][-1] == "first_approval"
    assert entry_id not in [e["id"] for e in agent.retrieve().json()["entries"]]

    services.approve_candidate(entry_id, actor=second_reviewer, expected_version=2)
    assert agent.get(f"entries/{entry_id}").json()["status"] == "active"
    assert entry_id in [e["id"] for e in agent.retrieve().json()["entries"]]
