"""Importing other tools' memory: each adapter end to end through the agents' ingest, on both databases;
re-importing adds nothing; an interrupted import resumes; a dry run writes nothing and says what would happen."""

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse

from curation.rules.context_block import situation
from curation.selectors import releases
from curation.services.candidates import approve_candidate
from curation.models import Entry, Event, Evidence, ImportRecord, SkillProposal, Status
from curation.rules.memory_import import SourceFile, read
from curation.services import imports
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.imports import import_memory, read_source
from curation.services.scope_policies import set_scope_policy
from tests.factories import active, client_for, page_text, publish_pending

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"
PREFIX = "acme/imported"
pytestmark = pytest.mark.django_db


def run(name, **options):
    return import_memory(read(name, read_source(FIXTURES / name)), prefix=PREFIX, label=f"import:{name}", **options)


def state() -> tuple[int, int, int, int]:
    return Entry.objects.count(), Evidence.objects.count(), Event.objects.count(), ImportRecord.objects.count()


@pytest.mark.parametrize(
    ("name", "lessons", "refused"),
    [
        ("claude-code", 13, {}),
        ("codex", 7, {}),
        (
            "letta",
            7,
            {
                "not an Agent Skill: name 'Bad_Name': at most 64 lowercase letters a-z, digits and single hyphens between them": 1
            },
        ),
        (
            "skills",
            2,
            {
                "not an Agent Skill: no description: say what the skill does and when to use it": 1,
                "not an Agent Skill: name 'some-other-name' is not the name of its folder 'wrong-folder'": 1,
            },
        ),
        ("markdown", 4, {}),
        ("jsonl", 3, {"not JSON": 1, "no text (one of: content, text, memory, lesson)": 1}),
        ("mem0", 2, {"memory 2: no text (one of: content, text, memory, lesson)": 1}),
    ],
)
def test_each_format_lands_as_candidates_with_its_provenance(name, lessons, refused):
    report = run(name)
    assert report.by_outcome() == {
        "added": lessons,
        "merged": 0,
        "held": 0,
        "refused": sum(refused.values()),
        "skipped": 0,
    }
    assert {reason: n for (outcome, reason), n in report.counts.items() if outcome == "refused"} == refused
    entries = Entry.objects.filter(scope__startswith=PREFIX)
    assert entries.count() == lessons and set(entries.values_list("status", flat=True)) == {Status.PENDING}
    assert ImportRecord.objects.filter(format=name, outcome="added").count() == lessons
    for entry in entries:
        (evidence,) = entry.evidence.all()
        assert evidence.kind == {"external": "user_statement", "self": "reflection"}[entry.signal]
        assert evidence.recorded_by_label == f"import:{name}"
        assert evidence.excerpt.startswith("Imported from ") and evidence.task_ref.startswith(f"import:{name}:")
        assert evidence.signal == entry.signal
        assert Event.objects.filter(entry=entry, action="submit", actor_label=f"import:{name}").exists()


def test_people_written_files_are_external_and_the_agents_memory_self():
    run("claude-code")
    rule = Entry.objects.get(content="Money is an integer number of cents, never a float.")
    assert (rule.scope, rule.kind, rule.signal, rule.trigger) == (PREFIX, "preference", "external", "Code style")
    nested = Entry.objects.get(content__startswith="Every endpoint returns problem+json")
    assert nested.scope == f"{PREFIX}/services/api"
    memory = Entry.objects.get(content__startswith="The staging database is reset")
    assert (memory.kind, memory.signal) == ("fact", "self")
    assert memory.evidence.get().excerpt.startswith(
        "Imported from Claude Code auto memory (written by the agent) (claude-code), memory/MEMORY.md line 4: "
    )


def test_mem0_timestamps_become_when_the_evidence_was_observed():
    run("mem0")
    evidence = Evidence.objects.get(entry__content="Prefers answers with code examples in TypeScript")
    assert evidence.observed_at.isoformat() == "2024-07-20T08:30:36.275141+00:00"
    assert "record 8f4a1c52-6a0e-4c7b-9d36-0f6e2b1a7c11, user_id alex" in evidence.excerpt


def test_importing_the_same_source_again_adds_nothing():
    first = run("claude-code")
    before = state()
    again = run("claude-code")
    assert state() == before
    assert again.by_outcome()["skipped"] == first.by_outcome()["added"] == 13
    assert again.counts[("skipped", "already imported")] == 13


def test_an_interrupted_import_resumes_without_duplicates(monkeypatch):
    real, calls = imports.submit_batch, []

    def fails_on_the_second_batch(**kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the worker was killed")
        return real(**kwargs)

    monkeypatch.setattr(imports, "submit_batch", fails_on_the_second_batch)
    with pytest.raises(RuntimeError):
        run("claude-code", batch_size=5)
    assert Entry.objects.count() == ImportRecord.objects.count() == 5  # the first batch landed, the second did not
    monkeypatch.setattr(imports, "submit_batch", real)
    resumed = run("claude-code", batch_size=5)
    assert resumed.counts[("skipped", "already imported")] == 5
    assert resumed.by_outcome()["added"] == 8
    assert Entry.objects.count() == ImportRecord.objects.count() == 13
    assert Entry.objects.values("fingerprint").distinct().count() == 13
    assert SkillProposal.objects.count() == 1  # the skill of the first batch, proposed once


def test_a_dry_run_writes_nothing_and_counts_what_the_import_does(lead):
    here = active(
        lead, scope=PREFIX, trigger="Code style", content="Money is an integer number of cents, never a float."
    )
    before = state()
    dry = run("claude-code", dry_run=True)
    assert state() == before
    real = run("claude-code")
    assert dry.counts == real.counts and dry.dry_run and not real.dry_run
    assert real.counts[("merged", f"the same lesson is here: evidence added to #{here.pk}")] == 1
    assert any(line.startswith("     1 would be merged (the same lesson is here") for line in dry.lines())


def test_an_exact_duplicate_gains_the_import_as_evidence(lead):
    here = active(
        lead, scope=PREFIX, trigger="Code style", content="Money is an integer number of cents, never a float."
    )
    run("claude-code")
    assert Entry.objects.filter(fingerprint=here.fingerprint).count() == 1
    assert here.evidence.filter(kind="user_statement", task_ref="import:claude-code:CLAUDE.md:13").exists()
    assert ImportRecord.objects.get(entry=here).outcome == "merged"
    assert Event.objects.filter(entry=here, action="resubmit", actor_label="import:claude-code").exists()


def test_a_forgotten_lesson_is_held_and_a_policy_decides_the_rest(lead):
    gone = active(
        lead,
        scope=PREFIX,
        trigger="Notes",
        content="The payments sandbox rejects card numbers with spaces; strip them before the call.",
    )
    request = file_forget_request(entry_id=gone.pk, reason="it named a customer", actor=lead)
    approve_forget_request(request.pk, actor=lead)
    set_scope_policy("admission", data={"prefix": PREFIX, "name": "trust-imports", "mode": "all"}, actor=lead)
    report = run("codex")
    assert report.counts[("held", "repeats a forgotten lesson")] == 1
    assert report.counts[("added", "approved by the admission policy")] == 6
    held = Entry.objects.get(pk=ImportRecord.objects.get(outcome="held").entry_id)
    assert held.held_by_id == request.pk and held.status == Status.REJECTED


def test_what_the_ingest_refuses_is_counted_with_its_reason():
    too_long = SourceFile("big.md", "# Big\n\n" + "word " * 900 + "\n")
    report = import_memory(read("markdown", [too_long]), prefix=PREFIX, label="import:markdown")
    assert report.counts == {("refused", "content: At most 4000 characters (this has 4499)."): 1}
    assert ImportRecord.objects.count() == Entry.objects.count() == 0


def test_a_secret_in_an_imported_file_is_redacted_like_an_agents():
    leak = SourceFile("notes.md", "# Deploy\n\n- Use the key AKIAIOSFODNN7EXAMPLE for the bucket.\n")
    report = import_memory(read("markdown", [leak]), prefix=PREFIX, label="import:markdown")
    entry = Entry.objects.get()
    assert "AKIAIOSFODNN7EXAMPLE" not in entry.content and entry.flags
    assert "AKIAIOSFODNN7EXAMPLE" not in entry.evidence.get().excerpt
    assert report.counts == {("added", "waits for review; redacted"): 1}


def test_the_card_and_the_entry_page_show_where_a_lesson_came_from(lead):
    run("mem0")
    entry = Entry.objects.get(content="Prefers answers with code examples in TypeScript")
    client = client_for(lead)
    card = page_text(client.get(reverse("curation:candidate-card", args=[entry.pk])))
    page = page_text(client.get(reverse("curation:entry", args=[entry.pk])))
    for text in (card, page):
        assert "Imported from Mem0 (memories extracted by an LLM) (mem0), export.json record" in text
        assert "import:mem0:export.json#8f4a1c52-6a0e-4c7b-9d36-0f6e2b1a7c11" in text


def test_the_command_prints_a_progress_line_per_batch_and_the_outcomes():
    out = StringIO()
    call_command(
        "import_memory",
        str(FIXTURES / "claude-code"),
        "--from",
        "claude-code",
        "--scope",
        PREFIX,
        "--batch-size",
        "5",
        stdout=out,
    )
    text = out.getvalue()
    assert "7 files read as claude-code: 13 lessons, 0 unreadable, 1 files not claude-code memory." in text
    assert "] 5/13 lessons (38%) · batch 1 · added 5" in text
    assert "[##############################] 13/13 lessons (100%) · batch 3 · added 13" in text
    assert "    12 were added (waits for review): e.g. .claude/rules/testing.md line 3" in text
    assert (
        "     1 were added (waits for review; a skill proposal for a lead): e.g. .claude/skills/release-notes/SKILL.md line 1"
        in text
    )
    out = StringIO()
    call_command(
        "import_memory",
        str(FIXTURES / "claude-code"),
        "--from",
        "claude-code",
        "--scope",
        PREFIX,
        "--dry-run",
        stdout=out,
    )
    assert (
        "Dry run: nothing was written." in out.getvalue()
        and "    13 would be skipped (already imported)" in out.getvalue()
    )


def test_the_command_refuses_bad_input_in_words(tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_memory", str(tmp_path / "nope"), "--from", "mem0", "--scope", PREFIX)
    with pytest.raises(CommandError, match="--scope: Illegal scope segment"):
        call_command("import_memory", str(FIXTURES / "mem0"), "--from", "mem0", "--scope", "Acme Corp")
    (tmp_path / "bad.zip").write_text("not a zip")
    with pytest.raises(CommandError, match="is not a zip file"):
        call_command("import_memory", str(tmp_path / "bad.zip"), "--from", "mem0", "--scope", PREFIX)


def test_a_zip_is_read_like_the_folder(tmp_path):
    archive = shutil.make_archive(str(tmp_path / "codex"), "zip", FIXTURES / "codex")
    assert sorted(f.path for f in read_source(Path(archive))) == sorted(f.path for f in read_source(FIXTURES / "codex"))


LESSONS = [
    {
        "scope": "acme/billing-api",
        "kind": "failure_lesson",
        "trigger": "Rotating the keys",
        "content": "Revoke the old key\nonly after the switch.",
        "boundary": "Not for test keys",
        "conditions": ["aws", "iam"],
    },
    {
        "scope": "acme/billing-api",
        "kind": "procedure",
        "trigger": "When releasing",
        "content": "Tag the commit, then push the tag.",
    },
    {
        "scope": "acme/web",
        "kind": "preference",
        "trigger": "Writing CSS",
        "content": "Use the design tokens, never raw colours.",
    },
]


def published_lessons() -> set[tuple]:
    """What agents read of the published version, as its export words it."""
    rows = releases.export_of(releases.published_version(), scope="")
    found = read("claude-code", [SourceFile(path, text) for path, text in rows.items()])
    assert found.unreadable == []
    return {(x.scope, x.kind, situation(x.trigger), x.content, x.conditions, x.boundary) for x in found.lessons}


def test_export_then_import_into_an_empty_install_gives_the_same_published_lessons(lead, second_reviewer):
    with transaction.atomic():  # the first install: made, published, exported, then gone
        for lesson in LESSONS:
            active(lead, **lesson)
        publish_pending()
        exported = releases.export_of(releases.published_version(), scope="")
        before = published_lessons()
        transaction.set_rollback(True)
    assert Entry.objects.count() == 0 and len(before) == 3
    report = import_memory(
        read("claude-code", [SourceFile(path, text) for path, text in exported.items()]),
        prefix="acme",
        label="import:claude-code",
    )
    assert report.by_outcome()["added"] == 3
    for entry in Entry.objects.all():
        approve_candidate(entry.pk, actor=lead, expected_version=entry.version)
    publish_pending()
    assert published_lessons() == before


def test_re_importing_this_consoles_own_export_changes_nothing(lead):
    for lesson in LESSONS:
        active(lead, **lesson)
    publish_pending()
    exported = releases.export_of(releases.published_version(), scope="")
    before = state()
    report = import_memory(
        read("claude-code", [SourceFile(path, text) for path, text in exported.items()]),
        prefix="acme",
        label="import:claude-code",
    )
    assert state() == before
    assert {reason for (outcome, reason) in report.counts} == {
        f"exported from here: entry #{pk}" for pk in Entry.objects.values_list("pk", flat=True)
    }


def test_an_import_key_is_keyed_with_the_install_secret(settings):
    """The key hashes the lesson's text: without the install's secret a copy of the database cannot confirm a
    guessed text was imported, nor match another install's keys."""
    import hashlib

    [lesson] = read("markdown", [SourceFile("notes.md", "- Rotate the webhook key in two steps.\n")]).lessons
    settings.SECRET_KEY = "one install's secret, long enough to be a real one 1234567890"
    first = imports.import_key("acme", lesson)
    assert first != hashlib.sha256(f"acme\0{lesson.source_key}".encode()).hexdigest()
    assert imports.import_key("acme", lesson) == first and imports.import_key("globex", lesson) != first
    settings.SECRET_KEY = "another install's secret, just as long as the first one 0987654321"
    assert imports.import_key("acme", lesson) != first
