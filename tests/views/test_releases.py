"""The releases page, the diff, the preview and the export zip, for every role."""

import io
import zipfile

import pytest

from curation.models import MemoryVersion
from curation.selectors import releases as reads
from curation.services.releases import publish_version
from tests.factories import active, client_for, make_user, page_text


@pytest.fixture
def pending(reviewer):
    return active(reviewer, scope="acme/billing-api", boundary="", trigger="Rotating the webhook signing key")


def test_the_page_shows_pending_changes_with_their_cause_and_checks(lead, pending):
    response = client_for(lead).get("/releases/")
    text = page_text(response)
    assert response.status_code == 200
    assert f"#{pending.pk}" in text and "acme/billing-api" in text and "Rotating the webhook signing key" in text
    assert "approved by rita" in text  # the Event that caused it
    assert "No boundary (when it does not hold)" in text
    assert "Publish version" in text


def test_a_lead_publishes_only_after_acknowledging(lead, pending):
    client = client_for(lead)
    refused = client.post("/releases/publish/", {"summary": "billing"})
    assert refused.status_code == 422 and "must be acknowledged" in page_text(refused)
    assert reads.published_version().number == 1

    done = client.post("/releases/publish/", {"summary": "billing", "acknowledge": "yes"}, follow=True)
    assert "Published version 2: 1 added" in page_text(done)
    assert reads.published_version().number == 2
    assert MemoryVersion.objects.get(number=2).published_by == lead


def test_a_lead_rolls_back_with_a_reason(lead, pending):
    publish_version(actor=lead, summary="v2", acknowledge=True)
    client = client_for(lead)
    assert client.post("/releases/1/rollback/", {"reason": ""}, follow=True).status_code == 200
    assert reads.published_version().number == 2  # no reason, no rollback
    done = client.post("/releases/1/rollback/", {"reason": "v2 misled the billing agent"}, follow=True)
    assert "Version 1 is the published one again" in page_text(done)
    assert reads.published_version().number == 1


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_reviewers_and_auditors_read_but_cannot_publish_or_roll_back(role, lead, pending):
    publish_version(actor=lead, summary="v2", acknowledge=True)
    client = client_for(make_user(f"{role}-x", role))
    page = client.get("/releases/")
    assert page.status_code == 200 and "Publish version" not in page_text(page)
    assert client.get("/releases/diff/?a=1&b=2").status_code == 200
    assert client.post("/releases/publish/", {"summary": "x", "acknowledge": "yes"}).status_code == 403
    assert client.post("/releases/1/rollback/", {"reason": "x"}).status_code == 403
    assert reads.published_version().number == 2


def test_a_scoped_lead_publishes_only_under_their_scopes(reviewer):
    web = active(reviewer, scope="acme/web", boundary="b")
    scoped = make_user("lou", "lead", scopes=["acme/billing-api"])
    client = client_for(scoped)
    assert f"#{web.pk}" not in page_text(client.get("/releases/"))
    assert client.post("/releases/publish/", {"summary": "all"}).status_code == 403
    assert client.post("/releases/publish/", {"summary": "web", "scope": "acme/web"}).status_code == 403
    assert reads.published_version().number == 1


def test_the_diff_page_and_json(lead, pending):
    publish_version(actor=lead, summary="v2", acknowledge=True)
    client = client_for(lead)
    page = client.get("/releases/diff/?a=1&b=2")
    assert "1 added" in page_text(page) and f"#{pending.pk}" in page_text(page)
    data = client.get("/releases/diff.json?a=1&b=2").json()
    assert data["added"] == 1 and data["changes"][0]["entry"] == pending.pk
    assert data["changes"][0]["after"]["trigger"] == "Rotating the webhook signing key"
    assert client.get("/releases/diff.json?a=1&b=9").status_code == 404


def test_the_diff_hides_what_lies_outside_the_readers_scopes(lead, reviewer):
    active(reviewer, scope="acme/web", boundary="b")
    publish_version(actor=lead, summary="v2")
    scoped = make_user("sally", "auditor", scopes=["acme/billing-api"])
    assert client_for(scoped).get("/releases/diff.json?a=1&b=2").json()["changes"] == []


def test_the_preview_shows_the_draft_or_a_version(lead, pending):
    client = client_for(lead)
    params = {"scope": "acme/billing-api/container", "q": "webhook signing", "k": "5", "budget": "2000"}
    draft = page_text(client.get("/preview/", {**params, "version": "draft"}))
    assert "The pending draft: 1 entry" in draft and "Rotating the webhook signing key" in draft
    published = page_text(client.get("/preview/", {**params, "version": "published"}))
    assert "Version 1: 0 entries" in published
    bad = client.get("/preview/", {**params, "version": "77"})
    assert bad.status_code == 422


def test_the_export_zip_is_the_published_version_in_the_users_scopes(lead, reviewer):
    billing = active(reviewer, scope="acme/billing-api", boundary="b", trigger="Billing lesson one")
    active(reviewer, scope="acme/web", boundary="b", trigger="Web lesson two")
    publish_version(actor=lead, summary="v2")
    scoped = make_user("sue", "auditor", scopes=["acme/billing-api"])
    response = client_for(scoped).get("/releases/export.zip")
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert sorted(archive.namelist()) == ["MEMORY.md", "topics/acme/billing-api.md"]
    assert f"#{billing.pk} When billing lesson one" in archive.read("topics/acme/billing-api.md").decode()
    assert client_for(scoped).get("/releases/export.zip").content == response.content  # same bytes again


def test_a_publish_under_other_scopes_says_only_that_to_a_reader_of_other_scopes(lead):
    """A globex-only publish's summary names globex work: an acme reader (a scoped user, an acme token) is
    told only that a release of other scopes happened, on the page, the diff, the zip and the API export."""
    from curation.services.tokens import create_agent_token
    from tests.factories import Agent

    active(lead, scope="acme/billing-api", trigger="Deploying billing", content="Run the smoke tests first.")
    publish_version(actor=lead, summary="billing smoke tests", acknowledge=True)
    active(lead, scope="globex/payments", trigger="Paying Initrode", content="Use the Initrode escrow account.")
    globex = publish_version(actor=lead, summary="Initrode acquisition escrow", scope_prefix="globex", acknowledge=True)
    acme_reader = client_for(make_user("ann", "reviewer", scopes=["acme"]))
    page = acme_reader.get("/releases/").content.decode()
    assert "Initrode" not in page and "a release of other scopes" in page and "(under globex)" not in page
    assert "billing smoke tests" in page
    diff = acme_reader.get("/releases/diff/", {"a": globex.number - 1, "b": globex.number}).content.decode()
    assert "Initrode" not in diff
    archive = zipfile.ZipFile(io.BytesIO(acme_reader.get("/releases/export.zip").content))
    assert not any("Initrode" in archive.read(name).decode() for name in archive.namelist())
    _, key = create_agent_token(name="acme-agent", scopes=["acme/billing-api"])
    export = Agent(key).get("export").json()
    assert "Initrode" not in str(export) and "a release of other scopes" in export["files"]["MEMORY.md"]
    assert "Initrode acquisition escrow" in client_for(lead).get("/releases/").content.decode()


def test_the_diff_names_its_two_versions_and_shows_lists_as_words(lead):
    from curation import services
    from curation.models import Entry

    entry = active(
        lead, scope="acme/tools", trigger="Reviewing a change", content="Run the linters.", conditions=["git", "review"]
    )
    first = publish_version(actor=lead, summary="tools", acknowledge=True)
    entry = services.candidates.send_back_for_recheck(entry.pk, actor=lead, expected_version=entry.version)
    services.edit_and_approve(
        entry.pk,
        actor=lead,
        expected_version=Entry.objects.get(pk=entry.pk).version,
        changes={"conditions": ["git", "merge"]},
    )
    second = publish_version(actor=lead, summary="merging", acknowledge=True)
    body = client_for(lead).get("/releases/diff/", {"a": first.number, "b": second.number}).content.decode()
    assert f"version {first.number}</th>" in body and f"version {second.number}</th>" in body
    assert "draft</th>" not in body and "[&#x27;git&#x27;" not in body
    assert "git, review" in body and "git, merge" in body
