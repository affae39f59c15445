"""Two tokens, two scopes: neither sees the other by retrieval, by id, or through evidence."""

from types import SimpleNamespace

import pytest

from curation.rules import access
from curation.models import Evidence

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_worlds(make_agent, approved):
    billing = make_agent("billing-agent", scopes=["acme/billing-api"])
    web = make_agent("web-agent", scopes=["acme/web"])
    billing_entry = approved(scope="acme/billing-api", trigger="Deploying the service", content="Billing secret sauce.")
    web_entry = approved(scope="acme/web", trigger="Deploying the service", content="Web secret sauce.")
    return billing, web, billing_entry, web_entry


def test_retrieval_returns_only_own_scope(two_worlds):
    billing, web, billing_entry, web_entry = two_worlds
    assert [e["id"] for e in billing.retrieve(scope="acme/billing-api", q="deploying").json()["entries"]] == [
        billing_entry.pk
    ]
    assert [e["id"] for e in web.retrieve(scope="acme/web", q="deploying").json()["entries"]] == [web_entry.pk]
    assert billing.retrieve(scope="acme/web").status_code == 403
    assert web.retrieve(scope="acme/billing-api").status_code == 403


def test_ids_of_the_other_scope_are_404(two_worlds):
    billing, web, billing_entry, web_entry = two_worlds
    assert billing.get(f"entries/{web_entry.pk}").status_code == 404
    assert web.get(f"entries/{billing_entry.pk}").status_code == 404
    assert billing.get(f"entries/{billing_entry.pk}").status_code == 200


def test_evidence_cannot_be_added_across_scopes(two_worlds):
    billing, web, billing_entry, web_entry = two_worlds
    response = billing.post(
        f"entries/{web_entry.pk}/evidence", {"kind": "review", "signal": "external", "excerpt": "sneaky"}
    )
    assert response.status_code == 404
    assert not Evidence.objects.filter(excerpt="sneaky").exists()


def test_submissions_cannot_land_in_the_other_scope(two_worlds):
    billing, web, *_ = two_worlds
    assert billing.submit(scope="acme/web/frontend").status_code == 403
    assert web.submit(scope="acme/billing-api/container").status_code == 403
    batch = billing.post(
        "candidates/batch",
        {"candidates": [{"scope": "acme/web", "kind": "fact", "trigger": "t", "content": "c", "signal": "self"}]},
    ).json()
    assert batch["results"][0]["status"] == 403


def test_an_exact_duplicate_in_another_scope_is_not_merged_across(two_worlds):
    billing, web, billing_entry, web_entry = two_worlds
    body = billing.submit(
        scope="acme/billing-api/container", trigger="Deploying the service", content="Web secret sauce."
    ).json()
    assert body["created"] is True and body["id"] != web_entry.pk


def test_a_token_covers_its_prefixes_and_what_lies_below_them_only():
    token = SimpleNamespace(scopes=["acme/billing-api", "beta"])
    assert access.token_covers(token, "acme/billing-api") and access.token_covers(token, "acme/billing-api/container")
    assert access.token_covers(token, "beta/x")
    for outside in ("acme", "acme/billing-api-v2", "acme/web", "betamax"):
        assert not access.token_covers(token, outside), outside
    assert not access.token_covers(SimpleNamespace(scopes=[]), "acme")
