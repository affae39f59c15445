"""The lead's upload page: a file or a zip, its format and a scope within the lead's; a dry-run preview that
writes nothing, then the import on confirmation; role and scope checked on the server at each step; a zip
bomb or a path outside the archive refused in words."""

import io
import os
import time
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from curation.models import Entry, ImportJob, ImportRecord, SkillProposal
from curation.services import import_jobs, imports
from curation.services.import_jobs import run_job
from curation.views import imports as import_views
from tests.factories import client_for, make_user

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"
PAGE = reverse("curation:imports")
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path


def zipped(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def preview(client, data: bytes, name: str, format: str, scope: str):
    return client.post(
        PAGE,
        {"action": "preview", "format": format, "scope": scope, "file": SimpleUploadedFile(name, data)},
    )


def test_a_lead_previews_then_imports_a_zip(lead):
    client = client_for(lead)
    assert "Preview (dry run)" in client.get(PAGE).content.decode()
    response = preview(client, zipped(FIXTURES / "skills"), "skills.zip", "skills", "acme/platform")
    text = response.content.decode()
    assert response.status_code == 200 and "Dry run: skills.zip as skills into" in text
    assert "waits for review; a skill proposal for a lead" in text and "Nothing was written." in text
    assert "not an Agent Skill: no description" in text
    assert Entry.objects.count() == SkillProposal.objects.count() == 0
    upload = client.session["import_upload"]["id"]
    assert (settings.DATA_DIR / "uploads" / upload).is_file()
    response = client.post(PAGE, {"action": "import", "upload": upload})
    assert response.status_code == 200 and "Imported skills.zip into" in response.content.decode()
    assert Entry.objects.filter(scope="acme/platform").count() == 2 and SkillProposal.objects.count() == 2
    assert set(ImportRecord.objects.values_list("imported_by_label", flat=True)) == {"import:skills by lena"}
    assert not (settings.DATA_DIR / "uploads" / upload).exists()
    # The same confirmation again finds nothing to import: no second import.
    again = client.post(PAGE, {"action": "import", "upload": upload})
    assert again.status_code == 400 and "no previewed upload" in again.content.decode()
    assert Entry.objects.count() == 2


def test_a_single_file_and_a_cancel(lead):
    client = client_for(lead)
    data = (FIXTURES / "mem0" / "export.json").read_bytes()
    assert preview(client, data, "export.json", "mem0", "acme/support").status_code == 200
    upload = client.session["import_upload"]["id"]
    response = client.post(PAGE, {"action": "cancel", "upload": upload})
    assert "Cancelled: nothing was imported." in response.content.decode()
    assert Entry.objects.count() == 0 and not (settings.DATA_DIR / "uploads" / upload).exists()


@pytest.mark.parametrize("role", ["reviewer", "auditor", None])
def test_only_leads_reach_the_page(role):
    client = client_for(make_user("someone", role))
    assert client.get(PAGE).status_code == 403
    data = (FIXTURES / "markdown" / "team-notes.md").read_bytes()
    assert preview(client, data, "notes.md", "markdown", "acme").status_code == 403
    assert Entry.objects.count() == 0


def test_a_scope_outside_the_leads_is_refused():
    client = client_for(make_user("lee", "lead", scopes=["acme/web"]))
    data = (FIXTURES / "markdown" / "team-notes.md").read_bytes()
    response = preview(client, data, "notes.md", "markdown", "acme/billing")
    assert (
        response.status_code == 400 and "acme/billing is outside your scopes (acme/web)." in response.content.decode()
    )
    assert preview(client, data, "notes.md", "markdown", "acme/web/ui").status_code == 200
    assert Entry.objects.count() == 0


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"../escape.md": b"- out"}, "names a path outside the archive; nothing was read."),
        ({"/etc/notes.md": b"- out"}, "names a path outside the archive; nothing was read."),
        ({"bomb.md": b"a" * (20 * 1024 * 1024)}, "refused as a zip bomb; nothing was read."),
    ],
)
def test_a_dangerous_zip_is_refused_in_words(lead, members, message):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED)
    response = preview(client_for(lead), buffer.getvalue(), "memory.zip", "markdown", "acme")
    assert response.status_code == 400 and message in response.content.decode()
    assert Entry.objects.count() == 0 and not (settings.DATA_DIR / "uploads").exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"format": "obsidian", "scope": "acme"}, "Choose a format"),
        ({"format": "markdown", "scope": "Acme Corp"}, "Illegal scope segment"),
        ({"format": "markdown", "scope": "acme", "file": None}, "Choose a file or a .zip"),
    ],
)
def test_bad_input_gets_a_400_with_the_reason(lead, fields, message):
    data = {"action": "preview", "file": SimpleUploadedFile("notes.md", b"- Keep it short.\n"), **fields}
    response = client_for(lead).post(PAGE, {k: v for k, v in data.items() if v is not None})
    assert response.status_code == 400 and message in response.content.decode()


def test_a_binary_file_and_a_broken_zip_are_refused(lead):
    client = client_for(lead)
    response = preview(client, b"\xff\xfe\x00binary", "notes.md", "markdown", "acme")
    assert response.status_code == 400 and "is not UTF-8 text" in response.content.decode()
    response = preview(client, b"not a zip", "notes.zip", "markdown", "acme")
    assert response.status_code == 400 and "notes.zip is not a zip file." in response.content.decode()


@pytest.fixture
def queued(monkeypatch):
    """The jobs handed to the task queue (a worker runs them: here, the test, with run_job)."""
    sent = []
    monkeypatch.setattr(import_views, "INLINE_LESSONS_MAX", 4)
    monkeypatch.setattr(import_views.run_import_job, "apply_async", lambda args: sent.append(args[0]))
    return sent


def test_a_larger_upload_runs_as_a_job_whose_progress_the_page_polls(lead, queued, monkeypatch):
    client = client_for(lead)
    response = preview(client, zipped(FIXTURES / "claude-code"), "cc.zip", "claude-code", "acme/app")
    [dry_id] = queued
    assert response.status_code == 302 and response.url == reverse("curation:import-job", args=[dry_id])
    progress_url = reverse("curation:import-job-progress", args=[dry_id])
    page = client.get(response.url).content.decode()
    assert "Waiting for a worker" in page and 'hx-trigger="every 1s"' in page and progress_url in page
    run_job(dry_id)
    assert Entry.objects.count() == 0
    done = client.get(progress_url).content.decode()
    assert 'hx-trigger="every 1s"' not in done and "Import now" in done and "nothing was written" in done
    assert "waits for review; a skill proposal for a lead" in done

    # The import: the worker is lost after the first batch; delivered again, it finishes without doubles.
    response = client.post(reverse("curation:import-job", args=[dry_id]), {"action": "import"})
    real_id = queued[-1]
    assert response.url == reverse("curation:import-job", args=[real_id]) and real_id != dry_id
    real, calls = imports.submit_batch, []

    def lost_after_one_batch(**kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker lost")
        return real(**kwargs)

    monkeypatch.setattr(imports, "submit_batch", lost_after_one_batch)
    monkeypatch.setattr(import_jobs, "JOB_BATCH_SIZE", 5)
    with pytest.raises(RuntimeError):
        run_job(real_id)
    job = ImportJob.objects.get(pk=real_id)
    assert (job.state, job.done, job.total) == ("running", 5, 13) and Entry.objects.count() == 5
    running = client.get(reverse("curation:import-job-progress", args=[real_id])).content.decode()
    assert '<progress max="13" value="5">' in running and 'hx-trigger="every 1s"' in running
    monkeypatch.setattr(imports, "submit_batch", real)
    run_job(real_id)
    assert Entry.objects.count() == ImportRecord.objects.count() == 13 and SkillProposal.objects.count() == 1
    finished = client.get(reverse("curation:import-job-progress", args=[real_id])).content.decode()
    assert "already imported" in finished and "Review the candidates" in finished
    # Confirming the dry run again shows the same import; no second one.
    again = client.post(reverse("curation:import-job", args=[dry_id]), {"action": "import"})
    assert again.url == reverse("curation:import-job", args=[real_id]) and ImportJob.objects.count() == 2


def test_a_job_is_its_leads_alone(lead, queued):
    preview(client_for(lead), zipped(FIXTURES / "codex"), "codex.zip", "codex", "acme")
    [job_id] = queued
    other = client_for(make_user("lou", "lead"))
    assert other.get(reverse("curation:import-job", args=[job_id])).status_code == 404
    assert other.post(reverse("curation:import-job", args=[job_id]), {"action": "import"}).status_code == 404
    assert (
        client_for(make_user("rae", "reviewer")).get(reverse("curation:import-job", args=[job_id])).status_code == 403
    )
    unfinished = client_for(lead).post(reverse("curation:import-job", args=[job_id]), {"action": "import"})
    assert unfinished.status_code == 400 and "Only a finished dry run" in unfinished.content.decode()


def test_an_upload_never_confirmed_is_removed_after_two_days(lead):
    client = client_for(lead)
    preview(client, (FIXTURES / "mem0" / "export.json").read_bytes(), "export.json", "mem0", "acme")
    old = settings.DATA_DIR / "uploads" / client.session["import_upload"]["id"]
    three_days_ago = time.time() - 3 * 24 * 3600
    os.utime(old, (three_days_ago, three_days_ago))
    client_for(make_user("lou", "lead")).post(
        PAGE, {"action": "preview", "format": "mem0", "scope": "acme", "file": SimpleUploadedFile("e.json", b"[]")}
    )
    assert not old.exists() and len(list((settings.DATA_DIR / "uploads").iterdir())) == 1
