"""A lead imports a zip of Agent Skills on the Import page in real Chromium: the dry run first, then the import;
and a larger upload as a worker's job, whose page follows its progress by itself (htmx polling)."""

import re
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.models import Entry, ImportJob, SkillProposal
from curation.services.import_jobs import run_job
from curation.views import imports as import_views
from tests.factories import log_in, make_user

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def skills_zip(tmp_path, settings) -> Path:
    settings.DATA_DIR = tmp_path / "data"
    path = tmp_path / "skills.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted((FIXTURES / "skills").rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(FIXTURES / "skills").as_posix())
    return path


def upload(page, path: Path) -> None:
    page.get_by_role("link", name="Import").click()
    expect(page).to_have_url(re.compile(r"/imports/$"))
    page.get_by_label("File or .zip").set_input_files(str(path))
    page.get_by_label("Format").select_option("skills")
    page.get_by_label("Scope").fill("acme/platform")
    page.get_by_role("button", name="Preview (dry run)").click()


def test_a_lead_previews_then_imports_skills(live_server, page, skills_zip):
    make_user("lena", "lead")
    log_in(page, live_server, "lena")
    upload(page, skills_zip)
    expect(page.locator("h2")).to_contain_text("Dry run: skills.zip as skills into")
    expect(page.locator("table.import-report")).to_contain_text("waits for review; a skill proposal for a lead")
    assert Entry.objects.count() == 0
    page.get_by_role("button", name="Import now").click()
    expect(page.locator("h2")).to_contain_text("Imported skills.zip into")
    assert sorted(SkillProposal.objects.values_list("slug", flat=True)) == ["deploy-preview", "summarize-incident"]


def test_a_jobs_page_follows_the_worker_by_itself(live_server, page, skills_zip, monkeypatch):
    make_user("lena", "lead")
    sent = []
    monkeypatch.setattr(import_views, "INLINE_LESSONS_MAX", 1)
    monkeypatch.setattr(import_views.run_import_job, "apply_async", lambda args: sent.append(args[0]))
    log_in(page, live_server, "lena")
    upload(page, skills_zip)
    expect(page.locator("#import-job")).to_contain_text("Waiting for a worker")
    run_job(sent[0])  # the worker runs the dry run; the page shows it without a reload
    expect(page.locator("#import-job")).to_contain_text("nothing was written", timeout=10_000)
    page.get_by_role("button", name="Import now").click()
    expect(page.locator("#import-job")).to_contain_text("Waiting for a worker")
    run_job(sent[1])
    expect(page.locator("#import-job")).to_contain_text("Review the candidates", timeout=10_000)
    assert ImportJob.objects.get(pk=sent[1]).state == "done" and Entry.objects.count() == 2
