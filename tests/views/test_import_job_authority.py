"""An import job is run with the authority of the lead who confirmed it as it is when the worker runs it: a lead
whose role or scope was taken away in between imports nothing, and the job's page says why."""

from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from curation.models import Entry, ImportJob, ScopeGrant
from curation.services.import_jobs import run_job
from tests.factories import client_for, make_user
from tests.views.test_import_page import preview, queued, zipped  # noqa: F401 (queued is a fixture)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path


def confirmed_import(client, queued):  # noqa: F811
    preview(client, zipped(FIXTURES / "claude-code"), "cc.zip", "claude-code", "acme/app")
    [dry_id] = queued
    run_job(dry_id)
    response = client.post(reverse("curation:import-job", args=[dry_id]), {"action": "import"})
    assert response.status_code == 302
    return queued[-1]


def test_a_lead_whose_scope_was_removed_after_confirming_imports_nothing(queued):  # noqa: F811
    lead = make_user("lee", "lead", scopes=["acme/app", "acme/web"])
    client = client_for(lead)
    job_id = confirmed_import(client, queued)
    ScopeGrant.objects.filter(user=lead, prefix="acme/app").delete()  # taken away before the worker ran it

    job = run_job(job_id)
    assert job.state == ImportJob.State.FAILED and Entry.objects.count() == 0
    page = client.get(reverse("curation:import-job", args=[job_id])).content.decode()
    assert "Refused when the worker ran it: lee no longer imports memory into acme/app" in page
    assert "Nothing was imported." in page
    # Delivered again (a lost worker), it stays refused and imports nothing.
    assert run_job(job_id).state == ImportJob.State.FAILED and Entry.objects.count() == 0


def test_a_lead_who_lost_the_role_imports_nothing(queued):  # noqa: F811
    lead = make_user("lee", "lead", scopes=["acme/app"])
    job_id = confirmed_import(client_for(lead), queued)
    lead.groups.remove(Group.objects.get(name="lead"))
    job = run_job(job_id)
    assert job.state == ImportJob.State.FAILED and "lee no longer imports memory into acme/app" in job.error
    assert Entry.objects.count() == 0


def test_a_lead_who_keeps_the_role_and_scope_imports(queued):  # noqa: F811
    lead = make_user("lee", "lead", scopes=["acme/app"])
    job_id = confirmed_import(client_for(lead), queued)
    assert run_job(job_id).state == ImportJob.State.DONE and Entry.objects.count() == 13
