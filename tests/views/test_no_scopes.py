"""Every scope is a grant of its own: a person without scope grants reads and acts on nothing, and taking
away a lead's last grant narrows their reach to nothing, never widens it to everything. The console says
so, and who grants scopes."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from curation.models import AgentToken, Entry, Event, ScopeGrant, Status
from curation.rules import access
from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db

TRIGGER = "Editing config files inside the billing-api container"
NO_SCOPES = "You have no scopes yet"


def fresh(user):
    return User.objects.get(pk=user.pk)


def test_taking_away_a_leads_last_grant_leaves_them_no_entries_and_nothing_to_act_on(make_candidate):
    lead = make_user("bill", "lead", scopes=["acme/billing-api"])
    entry = make_candidate()
    other = make_candidate(scope="globex/web", trigger="Deploying the globex frontend")
    client = client_for(lead)
    page = client.get(reverse("curation:candidates")).content.decode()
    assert TRIGGER in page and "Deploying the globex frontend" not in page and NO_SCOPES not in page

    ScopeGrant.objects.filter(user=lead).delete()
    assert access.user_scope_prefixes(fresh(lead)) == []
    client = client_for(fresh(lead))
    page = client.get(reverse("curation:candidates")).content.decode()
    assert TRIGGER not in page and "Deploying the globex frontend" not in page
    assert NO_SCOPES in page and "An administrator grants scopes in the admin (Scope grants)." in page
    for shown in (entry, other):
        assert client.get(reverse("curation:entry", args=[shown.pk])).status_code == 404
        response = client.post(reverse("curation:candidate-approve", args=[shown.pk]), {"version": 1})
        assert response.status_code == 404
        assert Entry.objects.get(pk=shown.pk).status == Status.PENDING
    assert not Event.objects.filter(actor=lead).exists()
    response = client.post("/agents/tokens/new/", {"name": "reach", "scopes": "acme/billing-api", "expires": ""})
    assert response.status_code == 422 and "Outside your scopes (none yet" in response.content.decode()
    assert not AgentToken.objects.exists()


def test_every_scope_is_a_grant_like_any_other(make_candidate):
    make_candidate()
    make_candidate(scope="globex/web", trigger="Deploying the globex frontend")
    everywhere = make_user("lena", "lead", scopes=[access.EVERY_SCOPE])
    page = client_for(everywhere).get(reverse("curation:candidates")).content.decode()
    assert TRIGGER in page and "Deploying the globex frontend" in page and NO_SCOPES not in page
    nowhere = make_user("nell", "reviewer", scopes=())
    page = client_for(nowhere).get(reverse("curation:candidates")).content.decode()
    assert TRIGGER not in page and "Deploying the globex frontend" not in page and NO_SCOPES in page


def test_a_superuser_reads_every_scope_without_a_grant(make_candidate):
    make_candidate()
    root = User.objects.create_superuser("root", password="x")
    assert access.user_scope_prefixes(fresh(root)) is None
    page = client_for(root).get(reverse("curation:candidates")).content.decode()
    assert TRIGGER in page and NO_SCOPES not in page


def test_the_every_scope_grant_is_made_in_the_admin_and_named_there(reviewer):
    root = User.objects.create_superuser("root", password="x")
    nell = make_user("nell", "reviewer", scopes=())
    response = client_for(root).post("/admin/curation/scopegrant/add/", {"user": nell.pk, "prefix": "*"})
    assert response.status_code == 302
    assert access.user_scope_prefixes(fresh(nell)) is None
    listing = client_for(root).get("/admin/curation/scopegrant/").content.decode()
    assert "for every scope" in client_for(root).get("/admin/curation/scopegrant/add/").content.decode()
    assert "*" in listing
