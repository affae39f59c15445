"""A scope with '.' or '..' segments is refused with a 422 that says why, wherever the console takes one:
the edit and split forms, every queue's filter, the skills list, a token's scopes and a scope grant."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from curation.models import AgentToken, Entry, ScopeGrant, Status
from curation.services import conflicts
from tests.factories import active, client_for

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
WHY = "may not be &#x27;.&#x27; or &#x27;..&#x27;"
DOTTED = ["acme/../globex", "acme/./billing-api", "./acme", "acme/.."]


@pytest.mark.parametrize("scope", DOTTED)
def test_edit_and_approve_refuses_a_dotted_scope(reviewer, make_candidate, scope):
    entry = make_candidate()
    response = client_for(reviewer).post(
        reverse("curation:candidate-edit", args=[entry.pk]),
        {"version": 1, "scope": scope, "trigger": "t", "content": "c"},
        **HTMX,
    )
    assert response.status_code == 422 and WHY in response.content.decode()
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.scope) == (Status.PENDING, "acme/billing-api/container")


def test_a_split_refuses_a_dotted_scope(lead):
    a = active(
        lead,
        scope="acme/billing-api",
        trigger="Merging a feature branch into main",
        content="Always rebase before merging.",
        conditions=[],
    )
    b = active(
        lead,
        scope="acme/billing-api",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        conditions=[],
    )
    [conflict] = [c for c in conflicts.detect_conflicts_for(b) if c.entry_a_id == a.pk]
    response = client_for(lead).post(
        reverse("curation:conflict-split", args=[conflict.pk]),
        {
            "a_scope": "acme/billing-api/../globex",
            "a_conditions": "",
            "b_scope": "acme/billing-api/container",
            "b_conditions": "",
            "version_a": a.version,
            "version_b": b.version,
        },
        **HTMX,
    )
    assert response.status_code == 422 and WHY in response.content.decode()
    assert Entry.objects.get(pk=a.pk).scope == "acme/billing-api"


@pytest.mark.parametrize("page", ["candidates", "conflicts", "consolidation", "skills-queue", "skills"])
@pytest.mark.parametrize("scope", DOTTED)
def test_every_scope_filter_refuses_a_dotted_scope(reviewer, page, scope):
    name = "scope" if page == "skills" else "f-scope"  # a queue's filters have their own namespace
    response = client_for(reviewer).get(reverse(f"curation:{page}"), {name: scope})
    assert response.status_code == 422 and WHY in response.content.decode()
    assert client_for(reviewer).get(reverse(f"curation:{page}"), {name: "acme/v1.2"}).status_code == 200


@pytest.mark.parametrize("scope", DOTTED)
def test_a_token_for_a_dotted_scope_is_refused(lead, scope):
    response = client_for(lead).post("/agents/tokens/new/", {"name": "dotted", "scopes": scope, "expires": ""})
    assert response.status_code == 422 and WHY in response.content.decode()
    assert not AgentToken.objects.exists()


@pytest.mark.parametrize("scope", DOTTED)
def test_a_scope_grant_for_a_dotted_scope_is_refused(reviewer, scope):
    admin = User.objects.create_superuser("root", password="x")
    response = client_for(admin).post("/admin/curation/scopegrant/add/", {"user": reviewer.pk, "prefix": scope})
    assert response.status_code == 422 and WHY in response.content.decode()
    assert list(ScopeGrant.objects.values_list("prefix", flat=True)) == ["*"]  # the reviewer's own, and no other
    assert (
        client_for(admin)
        .post("/admin/curation/scopegrant/add/", {"user": reviewer.pk, "prefix": "acme/v1.2"})
        .status_code
        == 302
    )


SPACED = [" acme/billing-api", "acme/billing-api ", " acme "]
NO_SPACES = "No spaces before or after a scope"


@pytest.mark.parametrize("scope", SPACED)
def test_edit_and_approve_refuses_spaces_around_a_scope_and_trims_nothing(reviewer, make_candidate, scope):
    entry = make_candidate()
    response = client_for(reviewer).post(
        reverse("curation:candidate-edit", args=[entry.pk]),
        {"version": 1, "scope": scope, "trigger": "t", "content": "c"},
        **HTMX,
    )
    assert response.status_code == 422 and NO_SPACES in response.content.decode()
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.scope) == (Status.PENDING, "acme/billing-api/container")


@pytest.mark.parametrize("page", ["candidates", "conflicts", "consolidation", "skills-queue", "skills"])
def test_every_scope_filter_refuses_spaces_around_a_scope(reviewer, page):
    name = "scope" if page == "skills" else "f-scope"
    response = client_for(reviewer).get(reverse(f"curation:{page}"), {name: " acme/billing-api"})
    assert response.status_code == 422 and NO_SPACES in response.content.decode()


def test_a_scope_grant_with_spaces_around_it_is_refused(reviewer):
    admin = User.objects.create_superuser("root", password="x")
    before = list(ScopeGrant.objects.values_list("user", "prefix"))
    response = client_for(admin).post("/admin/curation/scopegrant/add/", {"user": reviewer.pk, "prefix": " acme "})
    assert response.status_code == 422 and NO_SPACES in response.content.decode()
    assert list(ScopeGrant.objects.values_list("user", "prefix")) == before
