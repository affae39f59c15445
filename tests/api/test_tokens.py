"""Agent tokens: the command prints the secret once, the console lets leads create and revoke."""

import datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from curation.models import AgentToken, Event
from curation.selectors.tokens import hash_key
from tests.factories import Agent, client_for, make_user, page_text

pytestmark = pytest.mark.django_db


def test_command_prints_the_token_once_and_stores_only_its_hash():
    out, err = StringIO(), StringIO()
    call_command(
        "create_agent_token",
        "ci-bot",
        "--scope",
        "acme/billing",
        "--scope",
        "acme/web",
        "--expires",
        "30d",
        stdout=out,
        stderr=err,
    )
    key = out.getvalue().strip()
    token = AgentToken.objects.get(name="ci-bot")
    assert key.startswith("ma_") and len(key) > 40
    assert token.key_hash == hash_key(key) and key not in str(AgentToken.objects.values().get())
    assert token.scopes == ["acme/billing", "acme/web"]
    assert abs(token.expires_at - (timezone.now() + datetime.timedelta(days=30))) < datetime.timedelta(minutes=1)
    assert "shown once" in err.getvalue()
    assert Agent(key).get("memory", scope="acme/web").status_code == 200


@pytest.mark.parametrize(
    "args, message",
    [
        (["bad name!", "--scope", "acme"], "name"),
        (["ok", "--scope", "Acme Corp"], "Illegal scope segment"),
        (["ok"], "at least one scope"),
        (["ok", "--scope", "acme", "--expires", "forever"], "30d"),
    ],
)
def test_command_refuses_bad_input(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("create_agent_token", *args, stdout=StringIO(), stderr=StringIO())
    assert not AgentToken.objects.exists()


def test_a_lead_creates_a_token_in_the_console_and_sees_it_once(client, lead):
    client.force_login(lead)
    response = client.post(
        "/agents/tokens/new/", {"name": "web-agent", "scopes": "acme/web, acme/docs", "expires": "12h"}
    )
    assert response.status_code == 201
    page = response.content.decode()
    key = page.split('id="new-token-secret">')[1].split("<")[0]
    assert key.startswith("ma_") and "will not be shown again" in page
    assert "no-store" in response["Cache-Control"].split(", ")
    listing = client.get("/agents/tokens/").content.decode()
    assert "web-agent" in listing and key not in listing and key[:10] in listing
    assert Agent(key).get("memory", scope="acme/docs").status_code == 200
    token = AgentToken.objects.get(name="web-agent")
    [created] = Event.objects.filter(token=token)
    assert (created.action, created.actor, created.entry_id, created.entry_label) == (
        "token_created",
        lead,
        None,
        "agent:web-agent",
    )
    assert created.after["scopes"] == ["acme/docs", "acme/web"] and created.after["key_prefix"] == key[:10]
    assert key not in str(created.after) + created.reason  # the secret is never stored, not even in history


def test_console_form_errors_are_422(client, lead):
    client.force_login(lead)
    response = client.post("/agents/tokens/new/", {"name": "", "scopes": "", "expires": "soon"})
    assert response.status_code == 422
    page = response.content.decode()
    assert "A duration such as 30d" in page
    assert not AgentToken.objects.exists()


def test_a_lead_revokes_a_token_and_it_stops_working(client, lead, make_agent):
    agent = make_agent("to-revoke")
    assert agent.retrieve(scope="acme/billing-api").status_code == 200
    client.force_login(lead)
    response = client.post(f"/agents/tokens/{agent.token.pk}/revoke/", {"confirm": "yes"})
    assert response.status_code == 302
    token = AgentToken.objects.get(pk=agent.token.pk)
    assert token.revoked_at is not None and token.revoked_by == lead
    revoked = Event.objects.get(token=token, action="token_revoked")
    assert (revoked.actor, revoked.after) == (lead, {"revoked_at": token.revoked_at.isoformat()})
    client.post(
        f"/agents/tokens/{agent.token.pk}/revoke/", {"confirm": "yes"}
    )  # again: nothing changes, nothing is written
    assert Event.objects.filter(token=token, action="token_revoked").count() == 1
    assert agent.retrieve(scope="acme/billing-api").status_code == 401
    assert "revoked" in client.get("/agents/tokens/").content.decode()
    assert (
        client.post("/agents/tokens/987654/revoke/", {"confirm": "yes"}).status_code == 404
    )  # an unknown token, not a 500


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_only_leads_manage_tokens(client, request, role, make_agent):
    user = request.getfixturevalue(role)
    agent = make_agent("kept")
    client.force_login(user)
    assert client.get("/agents/tokens/").status_code == 403
    assert client.post("/agents/tokens/new/", {"name": "x", "scopes": "acme"}).status_code == 403
    assert client.post(f"/agents/tokens/{agent.token.pk}/revoke/", {"confirm": "yes"}).status_code == 403
    assert AgentToken.objects.get(pk=agent.token.pk).revoked_at is None
    assert AgentToken.objects.count() == 1


@pytest.fixture
def billing_lead(db):
    """A lead limited to acme/billing-api."""
    return make_user("bill", "lead", scopes=["acme/billing-api"])


def test_a_scoped_lead_cannot_mint_a_token_beyond_their_grants(billing_lead):
    client = client_for(billing_lead)
    for scopes in ("globex", "acme", "acme/billing-api, globex", "acme/billing-api-v2"):
        response = client.post("/agents/tokens/new/", {"name": "reach", "scopes": scopes, "expires": ""})
        assert response.status_code == 422
        assert "Outside your scopes (acme/billing-api)" in response.content.decode()
    assert not AgentToken.objects.exists()
    response = client.post(
        "/agents/tokens/new/", {"name": "own", "scopes": "acme/billing-api/container", "expires": ""}
    )
    assert response.status_code == 201
    assert AgentToken.objects.get().scopes == ["acme/billing-api/container"]


def test_a_scoped_lead_sees_and_revokes_only_tokens_within_their_grants(billing_lead, make_agent):
    own = make_agent("billing-bot", scopes=["acme/billing-api/container"])
    other = make_agent("globex-bot", scopes=["globex"])
    mixed = make_agent("mixed-bot", scopes=["acme/billing-api", "globex"])
    client = client_for(billing_lead)
    listing = client.get("/agents/tokens/").content.decode()
    assert "billing-bot" in listing and "globex-bot" not in listing and "mixed-bot" not in listing
    unknown = client.post("/agents/tokens/999999/revoke/", {"confirm": "yes"})
    for agent in (other, mixed):
        response = client.post(f"/agents/tokens/{agent.token.pk}/revoke/", {"confirm": "yes"})
        assert (response.status_code, page_text(response)) == (404, page_text(unknown))  # as if it did not exist
        assert AgentToken.objects.get(pk=agent.token.pk).revoked_at is None
        assert not Event.objects.filter(token=agent.token, action="token_revoked").exists()
    assert other.retrieve(scope="globex").status_code == 200
    assert client.post(f"/agents/tokens/{own.token.pk}/revoke/", {"confirm": "yes"}).status_code == 302
    assert AgentToken.objects.get(pk=own.token.pk).revoked_by == billing_lead


def test_a_lead_granted_every_scope_manages_every_token(lead, make_agent):
    make_agent("globex-bot", scopes=["globex"])
    client = client_for(lead)
    assert "globex-bot" in client.get("/agents/tokens/").content.decode()
    assert client.post("/agents/tokens/new/", {"name": "any", "scopes": "globex/web", "expires": ""}).status_code == 201


def test_revoking_asks_for_confirmation_and_says_what_was_revoked(client, lead, make_agent):
    agent = make_agent("ci-runner")
    client.force_login(lead)
    page = client.get("/agents/tokens/").content.decode()
    assert "Agents using “ci-runner”" in page and 'name="confirm" value="yes"' in page
    unconfirmed = client.post(f"/agents/tokens/{agent.token.pk}/revoke/", follow=True).content.decode()
    assert "Nothing revoked" in unconfirmed
    assert AgentToken.objects.get(pk=agent.token.pk).revoked_at is None
    done = client.post(f"/agents/tokens/{agent.token.pk}/revoke/", {"confirm": "yes"}, follow=True).content.decode()
    assert f"Revoked “ci-runner” ({agent.token.key_prefix}…): agents using it now get 401." in done


def test_a_new_token_has_a_copy_button(client, lead):
    client.force_login(lead)
    page = client.post("/agents/tokens/new/", {"name": "fresh", "scopes": "acme/web", "expires": ""}).content.decode()
    assert 'data-copy="new-token-secret"' in page and 'id="new-token-secret"' in page


def test_a_token_name_taken_beyond_the_leads_scopes_is_neither_revealed_nor_refused(billing_lead, lead, make_agent):
    make_agent("probe-globex", scopes=["globex"])
    make_agent("billing-bot", scopes=["acme/billing-api/container"])
    client = client_for(billing_lead)

    made = client.post("/agents/tokens/new/", {"name": "probe-globex", "scopes": "acme/billing-api", "expires": ""})
    assert made.status_code == 201  # a globex token's name is not the billing lead's business
    assert "already exists" not in page_text(made)
    mine = AgentToken.objects.get(name="probe-globex", scopes=["acme/billing-api"])
    assert mine.created_by == billing_lead
    assert AgentToken.objects.filter(name="probe-globex").count() == 2

    # A name the lead can see in their own list is still refused, in words naming only that token.
    for name in ("probe-globex", "billing-bot"):
        again = client.post("/agents/tokens/new/", {"name": name, "scopes": "acme/billing-api", "expires": ""})
        assert again.status_code == 422
        assert f"A token named &#x27;{name}&#x27; already exists" in page_text(again)
    assert AgentToken.objects.filter(name="probe-globex").count() == 2

    # A lead who sees every token sees both, so the name is taken for them.
    everyone = client_for(lead).post(
        "/agents/tokens/new/", {"name": "probe-globex", "scopes": "initech", "expires": ""}
    )
    assert everyone.status_code == 422 and "already exists" in page_text(everyone)


def test_the_operators_command_refuses_a_name_any_token_has(make_agent):
    make_agent("probe-globex", scopes=["globex"])
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_agent_token", "probe-globex", "--scope", "acme", stdout=StringIO(), stderr=StringIO())
    assert AgentToken.objects.filter(name="probe-globex").count() == 1
