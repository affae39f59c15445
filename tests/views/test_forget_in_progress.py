"""A console write made while a forget request is being approved is refused at once and saves nothing
(selectors.forgets.ForgetInProgress): every page that can meet the refusal says so to the person, in the
words the queues' cards use (409), rather than a 422 that shows nothing or an error page. On PostgreSQL with
the forgetting lock really held by an approval being written; on both databases with the service refusing."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from curation.models import Entry, MemoryVersion, SkillProposal
from curation.selectors import releases as release_reads
from curation.selectors.forgets import ForgetInProgress
from curation.services import skills as skill_service
from tests.factories import a_forget_being_approved, active, client_for, nominated, page_text, publish_pending, report
from tests.views.test_import_page import FIXTURES, zipped

HTMX = {"HTTP_HX_REQUEST": "true"}
MESSAGE = ForgetInProgress.MESSAGE
IMPORTS = reverse("curation:imports")
PUBLISH = reverse("curation:release-publish")


def refused(*args, **kwargs):
    raise ForgetInProgress


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path


def preview(client):
    upload = SimpleUploadedFile("skills.zip", zipped(FIXTURES / "skills"))
    return client.post(IMPORTS, {"action": "preview", "format": "skills", "scope": "acme/platform", "file": upload})


# --- PostgreSQL: an approval really being written ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_publish_while_a_forget_is_approved_says_so_and_publishes_nothing(on_postgres, lead, reviewer):
    active(reviewer, scope="acme/web", trigger="Deploying the web app", content="Run the smoke tests first.")
    client = client_for(lead)
    with a_forget_being_approved():
        response = client.post(PUBLISH, {"summary": "weekly", "acknowledge": "yes"})
    assert response.status_code == 409 and MESSAGE in page_text(response)
    assert release_reads.published_version().number == 1 and MemoryVersion.objects.count() == 1
    # Once the approval is written the same click goes through.
    assert client.post(PUBLISH, {"summary": "weekly", "acknowledge": "yes"}).status_code == 302
    assert release_reads.published_version().number == 2


@pytest.mark.django_db(transaction=True)
def test_an_import_preview_while_a_forget_is_approved_says_so_and_stages_nothing(on_postgres, lead, data_dir):
    client = client_for(lead)
    with a_forget_being_approved():
        response = preview(client)
    assert response.status_code == 409 and MESSAGE in page_text(response)
    assert "import_upload" not in client.session and not Entry.objects.exists()
    assert preview(client).status_code == 200 and "import_upload" in client.session


@pytest.mark.django_db(transaction=True)
def test_a_skill_draft_saved_while_a_forget_is_approved_answers_the_409_card(on_postgres, reviewer):
    proposal = nominated()
    client = client_for(reviewer)
    edit = reverse("curation:skill-edit", args=[proposal.pk])
    with a_forget_being_approved():
        response = client.post(edit, {"version": 1, "pitfalls": "Check the replica lag first."}, **HTMX)
    assert response.status_code == 409 and MESSAGE in page_text(response)
    assert SkillProposal.objects.get(pk=proposal.pk).version == 1


# --- both databases: the service refuses -------------------------------------------------------------------


@pytest.mark.django_db
def test_a_refused_publish_shows_the_message(lead, reviewer, monkeypatch):
    active(reviewer, scope="acme/web", trigger="Deploying the web app", content="Run the smoke tests first.")
    monkeypatch.setattr("curation.views.releases.publish_version", refused)
    response = client_for(lead).post(PUBLISH, {"summary": "weekly", "acknowledge": "yes"})
    assert response.status_code == 409 and MESSAGE in page_text(response)
    assert release_reads.published_version().number == 1


@pytest.mark.django_db
def test_a_refused_rollback_shows_the_message(lead, reviewer, monkeypatch):
    active(reviewer, scope="acme/web", trigger="Deploying the web app", content="Run the smoke tests first.")
    publish_pending()
    monkeypatch.setattr("curation.views.releases.rollback_version", refused)
    response = client_for(lead).post("/releases/1/rollback/", {"reason": "v2 misled the agent"}, follow=True)
    assert MESSAGE in page_text(response) and release_reads.published_version().number == 2


@pytest.mark.django_db
def test_a_refused_import_preview_shows_the_message(lead, data_dir, monkeypatch):
    monkeypatch.setattr("curation.views.imports.import_memory", refused)
    client = client_for(lead)
    response = preview(client)
    assert response.status_code == 409 and MESSAGE in page_text(response)
    assert "import_upload" not in client.session


@pytest.mark.django_db
def test_a_refused_import_says_it_stopped_and_how_to_finish(lead, data_dir, monkeypatch):
    client = client_for(lead)
    assert preview(client).status_code == 200
    upload = client.session["import_upload"]["id"]
    monkeypatch.setattr("curation.views.imports.import_memory", refused)
    response = client.post(IMPORTS, {"action": "import", "upload": upload})
    assert response.status_code == 409
    assert "A forget request is being approved at this moment: the import stopped." in page_text(response)
    assert not Entry.objects.exists()


@pytest.mark.django_db
def test_a_refused_skill_retire_shows_the_message(lead, monkeypatch):
    proposal = nominated()
    report(proposal, ["success"] * 5)
    skill_service.approve_skill(proposal.pk, actor=lead, expected_version=1)
    proposal.refresh_from_db()
    monkeypatch.setattr(skill_service, "retire_skill", refused)
    response = client_for(lead).post(
        reverse("curation:skill-retire", args=[proposal.slug]),
        {"version": proposal.version, "reason": "old"},
        follow=True,
    )
    assert MESSAGE in page_text(response)
    assert SkillProposal.objects.get(pk=proposal.pk).status == SkillProposal.Status.APPROVED
