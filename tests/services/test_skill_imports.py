"""Skills stay skills: a SKILL.md (an Agent Skills folder, a Letta repository, Claude Code's skills) becomes a
skill proposal for a lead, nominated with the entry its procedure became through the agents' ingest;
re-importing adds nothing, and this console's own exported skill changes nothing."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction

from curation.models import Entry, Event, ImportRecord, SkillProposal, SkillSource, Status
from curation.rules.memory_import import SourceFile, read
from curation.selectors.skills import skill_card, skill_md
from curation.services import skills
from curation.services.candidates import approve_candidate
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.imports import import_memory, read_source
from tests.factories import active, publish_pending
from tests.services.test_imports import LESSONS, published_lessons

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"
PREFIX = "acme/imported"
pytestmark = pytest.mark.django_db


def run(name, **options):
    return import_memory(read(name, read_source(FIXTURES / name)), prefix=PREFIX, label=f"import:{name}", **options)


def state() -> tuple[int, ...]:
    return (
        Entry.objects.count(),
        Event.objects.count(),
        ImportRecord.objects.count(),
        SkillProposal.objects.count(),
        SkillSource.objects.count(),
    )


def test_each_skill_md_becomes_a_proposal_nominating_its_imported_entry():
    report = run("skills")
    assert report.counts[("added", "waits for review; a skill proposal for a lead")] == 2
    proposals = {p.slug: p for p in SkillProposal.objects.all()}
    assert sorted(proposals) == ["deploy-preview", "summarize-incident"]
    deploy = proposals["deploy-preview"]
    assert deploy.status == SkillProposal.Status.NOMINATED and deploy.scope == PREFIX
    assert deploy.description.startswith("Deploy a pull request to a preview environment")
    assert deploy.verification == "The preview address answers 200 on /healthz."
    assert deploy.rollback.startswith("Run `fly apps destroy") and deploy.steps.startswith("1. Run `scripts/")
    assert (
        deploy.reason == "imported from deploy-preview/SKILL.md line 1" and deploy.created_by_label == "import:skills"
    )
    entry = deploy.nominated_entry
    assert (entry.kind, entry.status, entry.signal) == ("procedure", Status.PENDING, "external")
    assert list(deploy.sources.values_list("entry_id", "live")) == [(entry.pk, True)]
    event = Event.objects.get(skill=deploy, action="skill_nominated")
    assert event.entry_id == entry.pk and event.after["draft"]["slug"] == "deploy-preview"
    assert "license Apache-2.0" in entry.evidence.get().excerpt
    assert {reason for (outcome, reason) in report.counts if outcome == "refused"} == {
        "not an Agent Skill: no description: say what the skill does and when to use it",
        "not an Agent Skill: name 'some-other-name' is not the name of its folder 'wrong-folder'",
    }


def test_re_importing_the_same_skills_adds_nothing():
    run("skills")
    before = state()
    again = run("skills")
    assert state() == before
    assert again.counts[("skipped", "already imported")] == 2


def test_letta_skills_and_claude_code_skills_are_proposed_too():
    run("letta")
    assert list(SkillProposal.objects.values_list("slug", "nominated_entry__signal")) == [
        ("rotate-webhook-secret", "self")
    ]
    run("claude-code")
    assert SkillProposal.objects.filter(slug="release-notes", created_by_label="import:claude-code").exists()


def test_a_skill_approved_as_a_lesson_can_be_approved_as_a_skill_by_a_lead(lead):
    run("skills")
    proposal = SkillProposal.objects.get(slug="deploy-preview")
    entry = proposal.nominated_entry
    approve_candidate(entry.pk, actor=lead, expected_version=entry.version)
    _, blockers = skills.approval_check(proposal, skills._live_sources(proposal))
    assert not any("not active" in b for b in blockers)  # what is left is the trials every skill needs


def test_a_taken_name_is_suffixed_and_said(lead):
    here = active(lead, scope=PREFIX, kind="procedure", trigger="Deploy preview", content="1. Deploy.\n2. Check.")
    skills.nominate_skills([here], reason_of=lambda e: "used often", actor_label="lifecycle:test", at=here.created_at)
    assert SkillProposal.objects.filter(slug="deploy-preview").exists()
    run("skills")
    imported = SkillProposal.objects.get(slug="deploy-preview-2")
    assert imported.reason == "imported from deploy-preview/SKILL.md line 1 (named deploy-preview there)"


def test_a_skill_repeating_a_forgotten_lesson_is_held_and_not_proposed(lead):
    gone = active(
        lead,
        scope=PREFIX,
        kind="procedure",
        trigger="Summarize an incident channel into a timeline and follow-ups. Use after an incident is resolved.",
        content="Read the channel from the first alert to the all-clear.\nWrite the timeline in UTC, one line per "
        "event.\nList follow-ups with an owner each.",
    )
    approve_forget_request(file_forget_request(entry_id=gone.pk, reason="a customer's", actor=lead).pk, actor=lead)
    report = run("skills")
    assert report.counts[("held", "repeats a forgotten lesson")] == 1
    assert list(SkillProposal.objects.values_list("slug", flat=True)) == ["deploy-preview"]


def test_re_importing_this_consoles_own_skill_changes_nothing(lead):
    here = active(lead, scope="acme", kind="procedure", trigger="Rotate keys", content="1. Revoke.\n2. Issue.")
    skills.nominate_skills([here], reason_of=lambda e: "used often", actor_label="lifecycle:test", at=here.created_at)
    proposal = SkillProposal.objects.get()
    text = skill_md(skill_card(lead, proposal.pk))
    before = state()
    report = import_memory(
        read("claude-code", [SourceFile(f"skills/{proposal.slug}/SKILL.md", text)]), prefix="acme", label="import:cc"
    )
    assert state() == before
    assert report.counts == {("skipped", f"exported from here: skill {proposal.slug}"): 1}


def test_export_memory_then_import_memory_into_an_empty_install_gives_the_same_published_lessons(lead, tmp_path):
    with transaction.atomic():  # the first install: made, published, exported by the command, then gone
        for lesson in LESSONS:
            active(lead, **lesson)
        publish_pending()
        call_command("export_memory", str(tmp_path / "memory"), stdout=StringIO())
        before = published_lessons()
        transaction.set_rollback(True)
    assert Entry.objects.count() == 0
    out = StringIO()
    call_command("import_memory", str(tmp_path / "memory"), "--from", "claude-code", "--scope", "acme", stdout=out)
    assert "     3 were added (waits for review)" in out.getvalue()
    for entry in Entry.objects.all():
        approve_candidate(entry.pk, actor=lead, expected_version=entry.version)
    publish_pending()
    assert published_lessons() == before
    # And exporting this install, then importing that export here, changes nothing.
    call_command("export_memory", str(tmp_path / "again"), stdout=StringIO())
    before_state = state()
    out = StringIO()
    call_command("import_memory", str(tmp_path / "again"), "--from", "claude-code", "--scope", "acme", stdout=out)
    assert state() == before_state
    assert "were added" not in out.getvalue() and "     3 were skipped (already imported)" in out.getvalue()


def test_a_skill_imported_while_a_forget_is_being_approved_is_not_called_forgotten(monkeypatch):
    """The tombstones could not be read (a forget request's approval held them): the import's batch is refused
    with that reason, to be tried again, rather than the skill being dropped as a forgotten lesson."""
    from curation.selectors.forgets import ForgetInProgress
    from curation.services import skill_imports

    def in_progress(scope, draft):
        raise ForgetInProgress()

    monkeypatch.setattr(skill_imports, "refuse_forgotten_draft", in_progress)
    before = state()
    with pytest.raises(ForgetInProgress):
        run("skills")
    assert state() == before
