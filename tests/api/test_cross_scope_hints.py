"""A submission's answer names only the near duplicates and conflict partners its token may read; the
links and conflicts themselves are kept for the reviewers who may read both."""

import pytest

from curation.models import Conflict, SimilarEntry
from tests.factories import CONFIG, NEAR, NO_REBASE, REBASE, api_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def above(approved):
    """Active entries of acme, an ancestor scope the billing token does not cover: one a near duplicate of
    NEAR, one contradicted by NO_REBASE."""
    return approved(scope="acme", **CONFIG), approved(scope="acme", **REBASE)


def test_a_submission_names_no_entry_the_token_cannot_read(agent, make_agent, above):
    similar, contradicted = above
    for body in (
        agent.submit(scope="acme/billing-api/container", **NEAR).json(),
        agent.submit(scope="acme/billing-api", **NO_REBASE).json(),
    ):
        assert body["created"] is True and body["duplicates"] == [] and body["conflicts"] == []
    # Kept for reviewers: the link and the conflict exist.
    assert SimilarEntry.objects.filter(similar=similar).exists()
    assert Conflict.objects.filter(entry_a=contradicted).exists()
    assert agent.get(f"entries/{similar.pk}").status_code == 404


def test_a_batch_names_no_entry_the_token_cannot_read(agent, above):
    body = agent.post(
        "candidates/batch",
        {
            "candidates": [
                api_candidate(scope="acme/billing-api/container", **NEAR),
                api_candidate(scope="acme/billing-api", **NO_REBASE),
            ]
        },
    ).json()
    assert [(r["duplicates"], r["conflicts"]) for r in body["results"]] == [([], []), ([], [])]
    assert Conflict.objects.count() == 1 and SimilarEntry.objects.filter(similar__scope="acme").count() == 2


def test_a_token_that_reads_the_other_scope_is_told(make_agent, above):
    similar, contradicted = above
    wide = make_agent("acme-agent", scopes=["acme"])
    assert wide.submit(scope="acme/billing-api/container", **NEAR).json()["duplicates"] == [similar.pk]
    [conflict] = wide.submit(scope="acme/billing-api", **NO_REBASE).json()["conflicts"]
    assert Conflict.objects.get(pk=conflict).entry_a_id == contradicted.pk


def test_an_entry_s_history_does_not_name_a_conflict_partner_the_token_cannot_read(agent, approved):
    parent = approved(scope="acme", **REBASE)
    child_id = agent.submit(scope="acme/billing-api", **NO_REBASE).json()["id"]
    [conflict] = Conflict.objects.filter(entry_a=parent)
    events = agent.get(f"entries/{child_id}").json()["events"]
    [opened] = [e for e in events if e["action"] == "conflict_opened"]
    assert opened["reason"] == "about a conflict with an entry outside your scopes"
    assert not any(f"#{parent.pk}" in e["reason"] or "onto main" in e["reason"] for e in events) and conflict
