"""The import adapters on fixtures written from each tool's documentation (tests/fixtures/import/README.md):
what each file becomes, lesson by lesson, with its provenance and the trust its origin deserves."""

from pathlib import Path

import pytest

from curation.rules import memory_import
from curation.rules.memory_export import Lesson, export_files
from curation.rules.memory_import import SourceFile, place, read

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"


def files_of(name: str) -> list[SourceFile]:
    root = FIXTURES / name
    return [SourceFile(p.relative_to(root).as_posix(), p.read_text()) for p in sorted(root.rglob("*")) if p.is_file()]


def lessons(reading) -> list[tuple]:
    return [(x.file, x.line, x.scope, x.kind, x.signal, x.trigger, x.content) for x in reading.lessons]


def test_claude_code_reads_instructions_as_peoples_rules_and_auto_memory_as_the_agents_claims():
    reading = read("claude-code", files_of("claude-code"))
    found = lessons(reading)
    assert (
        "CLAUDE.md",
        13,
        "",
        "preference",
        "external",
        "Code style",
        "Money is an integer number of cents, never a float.",
    ) in found
    # A numbered list is one procedure, its steps together.
    assert (
        "CLAUDE.md",
        18,
        "",
        "procedure",
        "external",
        "Releasing",
        "1. Bump the version in `pyproject.toml`.\n2. Run `make changelog` and commit it.\n"
        "3. Tag the commit `vX.Y.Z` and push the tag.",
    ) in found
    # .claude/rules files are people's; a subfolder's CLAUDE.md applies to that folder (a scope below).
    assert (
        ".claude/rules/testing.md",
        4,
        "",
        "preference",
        "external",
        "Testing rules",
        "Never mock the database in service tests; use the factories.",
    ) in found
    assert (
        "services/api/CLAUDE.md",
        4,
        "services/api",
        "preference",
        "external",
        "API service",
        "Every endpoint returns problem+json errors (RFC 9457), never HTML.",
    ) in found
    # Auto memory: the agent's own lines, its index's link lines left out (the linked file is read itself).
    assert (
        "memory/MEMORY.md",
        4,
        "",
        "fact",
        "self",
        "Memory index",
        "The staging database is reset every Sunday at 02:00 UTC.",
    ) in found
    assert (
        "memory/debugging.md",
        9,
        "",
        "fact",
        "self",
        "Webhook retries",
        "Stripe retries a webhook for three days. A handler that is not idempotent will double-charge:\n"
        "check the event id against `processed_events` first.",
    ) in found
    assert not any("debugging.md" in x.content or x.content.startswith("@") for x in reading.lessons)
    assert not any(x.file == "README.md" for x in reading.lessons) and reading.ignored == ["README.md"]
    assert reading.unreadable == []
    [skill] = [x for x in reading.lessons if x.skill]
    assert (skill.file, skill.kind, skill.signal, skill.skill.slug) == (
        ".claude/skills/release-notes/SKILL.md",
        "procedure",
        "external",
        "release-notes",
    )
    assert len(reading.lessons) == 13


def test_codex_agents_md_per_folder_and_its_memories():
    found = lessons(read("codex", files_of("codex")))
    assert (
        "AGENTS.md",
        4,
        "",
        "preference",
        "external",
        "Dev environment tips",
        "Use `pnpm install --frozen-lockfile`; never `npm install`.",
    ) in found
    assert (
        "AGENTS.md",
        12,
        "",
        "preference",
        "external",
        "PR instructions",
        "Title format: [<project_name>] <Title>. Run `pnpm lint` and `pnpm test` before committing.",
    ) in found
    assert (
        "services/payments/AGENTS.md",
        3,
        "services/payments",
        "preference",
        "external",
        "Payments service",
        "Amounts cross the API as strings of decimal digits; parse them with `Decimal`, never `float`.",
    ) in found
    assert (
        "memories/notes.md",
        3,
        "",
        "fact",
        "self",
        "Notes",
        "The payments sandbox rejects card numbers with spaces; strip them before the call.",
    ) in found
    assert len(found) == 7


def test_markdown_bullets_procedures_and_sections():
    found = lessons(read("markdown", files_of("markdown")))
    assert [(x[1], x[3], x[5]) for x in found] == [
        (8, "preference", "Team notes"),
        (9, "preference", "Team notes"),
        (13, "procedure", "Rotating the database password"),
        (20, "preference", "Why we pin Postgres 16"),
    ]
    # An indented line continues the step above; a fenced block stays in its section; front matter is skipped.
    assert found[2][6].endswith("3. Restart the services one by one.\n   Wait for each to be healthy before the next.")
    assert found[3][6].endswith("```sql\nSELECT version();\n```")
    assert not any("owner: platform" in x[6] for x in found)


def test_jsonl_records_and_the_lines_it_cannot_read():
    reading = read("jsonl", files_of("jsonl"))
    first, second, third = reading.lessons
    assert (first.record_id, first.kind, first.trigger, first.observed_at) == (
        "l-1",
        "failure_lesson",
        "When the nightly export fails",
        "2025-03-02T08:15:00Z",
    )
    assert (second.scope, second.kind, second.trigger) == ("search", "fact", "Working in this project")
    assert (third.record_id, third.line, third.trigger) == ("", 5, "Uploading large files")
    assert {x.signal for x in reading.lessons} == {"self"}
    assert [(u.line, u.reason) for u in reading.unreadable] == [
        (3, "not JSON"),
        (4, "no text (one of: content, text, memory, lesson)"),
    ]


def test_mem0_memories_keep_their_ids_and_timestamps():
    reading = read("mem0", files_of("mem0"))
    first, second = reading.lessons
    assert first.record_id == "8f4a1c52-6a0e-4c7b-9d36-0f6e2b1a7c11"
    assert (first.kind, first.signal, first.trigger) == ("preference", "self", "User preferences, technology")
    assert first.observed_at == "2024-07-20T01:30:36.275141-07:00"
    assert dict(second.tool_ids) == {
        "user_id": "alex",
        "agent_id": "support-bot",
        "hash": "7d793037a0760186574b0282f2f435e7",
    }
    assert [u.reason for u in reading.unreadable] == ["memory 2: no text (one of: content, text, memory, lesson)"]
    # A bare list, and JSONL of the same records, read the same.
    bare = read("mem0", [SourceFile("m.json", '[{"id": "a1", "memory": "Uses vim", "user_id": "alex"}]')])
    lines = read("mem0", [SourceFile("m.jsonl", '{"id": "a1", "memory": "Uses vim", "user_id": "alex"}\n')])
    assert [x.content for x in bare.lessons] == [x.content for x in lines.lessons] == ["Uses vim"]
    assert read("mem0", [SourceFile("m.json", '{"results": 3}')]).unreadable[0].reason.startswith("not a list")


def test_provenance_evidence_names_the_file_the_line_and_the_tools_ids():
    reading = read("mem0", files_of("mem0"))
    evidence = reading.lessons[1].evidence()
    assert evidence["kind"] == "reflection" and evidence["signal"] == "self"  # an LLM's reading of a chat
    assert evidence["excerpt"] == (
        "Imported from Mem0 (memories extracted by an LLM) (mem0), export.json record "
        "c1d2e3f4-1111-4a2b-8c3d-222233334444, user_id alex, agent_id support-bot, "
        "hash 7d793037a0760186574b0282f2f435e7: Deploys the frontend with Vercel and the API with Fly.io"
    )
    assert evidence["task_ref"] == "import:mem0:export.json#c1d2e3f4-1111-4a2b-8c3d-222233334444"
    assert evidence["observed_at"] == "2024-07-21T09:12:00-07:00"
    line = read("markdown", files_of("markdown")).lessons[0].evidence()
    assert (line["kind"], line["signal"]) == ("user_statement", "external") and line[
        "task_ref"
    ] == "import:markdown:team-notes.md:8"


def test_the_import_key_follows_the_record_not_its_line():
    before = read("markdown", [SourceFile("n.md", "# A\n\n- Keep it.\n- Ship it.\n")]).lessons
    after = read("markdown", [SourceFile("n.md", "# A\n\n- New one.\n- Ship it.\n- Keep it.\n")]).lessons
    assert {x.source_key for x in before} < {x.source_key for x in after}
    elsewhere = read("markdown", [SourceFile("other.md", "# A\n\n- Keep it.\n")]).lessons
    assert elsewhere[0].source_key not in {x.source_key for x in before}
    edited = read("mem0", [SourceFile("m.json", '[{"id": "a1", "memory": "Uses emacs"}]')]).lessons
    original = read("mem0", [SourceFile("m.json", '[{"id": "a1", "memory": "Uses vim"}]')]).lessons
    assert edited[0].source_key != original[0].source_key  # an edited memory comes in as a new record


def test_this_consoles_export_reads_back_field_by_field():
    lesson = Lesson(
        7,
        "acme/api",
        "failure_lesson",
        "Rotating the keys",
        "Revoke the old key\nafter the switch.",
        ("aws", "iam"),
        "Not for test keys",
        "self",
        0.41,
    )
    files = export_files([lesson], [], version_number=3, summary="first")
    reading = read("claude-code", [SourceFile(path, text) for path, text in files.items()])
    (back,) = reading.lessons
    assert (back.scope, back.kind, back.trigger, back.content, back.conditions, back.boundary, back.signal) == (
        "acme/api",
        "failure_lesson",
        "When rotating the keys",
        "Revoke the old key after the switch.",
        ("aws", "iam"),
        "Not for test keys",
        "self",
    )
    assert back.exported_entry_id == 7 and reading.unreadable == [] and reading.ignored == []
    assert memory_import.same_lesson_as_exported(
        back, trigger="Rotating the keys", content="Revoke the old key\nafter the switch."
    )


@pytest.mark.parametrize(
    ("prefix", "scope", "placed"),
    [
        ("acme", "", "acme"),
        ("acme/", "api", "acme/api"),
        ("acme", "acme/api", "acme/api"),
        ("acme", "other/x", "acme/other/x"),
    ],
)
def test_where_a_lesson_lands(prefix, scope, placed):
    assert place(prefix, scope) == placed


def test_a_nested_file_applies_to_its_folder():
    assert memory_import.folder_scope("services/Payments API/AGENTS.md") == "services/payments-api"
    assert memory_import.folder_scope(".claude/CLAUDE.md") == ""


def test_an_unknown_format_is_refused_in_words():
    with pytest.raises(ValueError, match="Unknown format 'obsidian'"):
        read("obsidian", [])


def test_letta_memfs_blocks_are_the_agents_own_and_its_skills_become_drafts():
    reading = read("letta", files_of("letta"))
    found = lessons(reading)
    assert (
        "system/human.md",
        4,
        "",
        "fact",
        "self",
        "What I know about the person I work with: their preferences and working style.",
        "Dana reviews every migration before it is merged.",
    ) in found
    assert ("system/project/billing.md", 6, "", "fact", "self", "Billing service") == found[5][:6]
    stripe = next(x for x in reading.lessons if x.file == "reference/stripe-notes.md")
    assert stripe.origin == "Letta MemFS memory file (written by the agent)" and stripe.trigger == "Webhooks"
    [skill] = [x for x in reading.lessons if x.skill]
    assert (skill.signal, skill.kind, skill.skill.slug) == ("self", "procedure", "rotate-webhook-secret")
    assert skill.skill.rollback == "redeploy with only the old secret accepted."
    assert skill.skill.steps.startswith("1. Create a second endpoint secret") and "Rollback" not in skill.skill.steps
    assert [(u.file, u.reason) for u in reading.unreadable] == [
        (
            "skills/Bad_Name/SKILL.md",
            "not an Agent Skill: name 'Bad_Name': at most 64 lowercase letters a-z, digits and single hyphens between them",
        )
    ]
    assert reading.ignored == ["FIXTURE.txt"]


def test_an_agent_skills_folder_keeps_each_skills_sections_and_optional_front_matter():
    reading = read("skills", files_of("skills"))
    by_slug = {x.skill.slug: x for x in reading.lessons}
    assert sorted(by_slug) == ["deploy-preview", "summarize-incident"]
    deploy = by_slug["deploy-preview"]
    assert deploy.signal == "external" and deploy.trigger == deploy.skill.description == (
        "Deploy a pull request to a preview environment and post its address. Use when a reviewer asks to try a change."
    )
    assert deploy.skill.verification == "The preview address answers 200 on /healthz."
    assert deploy.skill.rollback.startswith("Run `fly apps destroy")
    assert deploy.content == (
        "1. Run `scripts/preview.sh <pr-number>`.\n2. Wait for the health check to pass.\n"
        "3. Comment the preview address on the pull request.\nVerify: The preview address answers 200 on /healthz.\n"
        "Rollback: Run `fly apps destroy pr-<number>`; nothing else depends on a preview."
    )
    assert dict(deploy.tool_ids)["metadata.version"] == "1.2" and dict(deploy.tool_ids)["license"] == "Apache-2.0"
    assert "skill deploy-preview" in deploy.evidence()["excerpt"]
    assert reading.ignored == ["README.md", "deploy-preview/scripts/preview.sh"]
    assert len(reading.unreadable) == 2


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# No front matter\n\nSteps.", "no front matter"),
        ("---\nname: x-skill\ndescription: d\n", "not closed"),
        (
            "---\nname: x-skill\ndescription: d\nversion: 2\n---\nSteps.",
            "key 'version' is not in the Agent Skills format",
        ),
        ("---\nname: x--skill\ndescription: d\n---\nSteps.", "single hyphens"),
        ("---\nname: x-skill\ndescription: " + "d" * 1025 + "\n---\nSteps.", "at most 1024"),
        ("---\nname: x-skill\ndescription: d\ncompatibility: " + "c" * 501 + "\n---\nSteps.", "at most 500"),
        ("---\nname: x-skill\ndescription: d\nmetadata: plain\n---\nSteps.", "metadata is a map"),
        ("---\nname: x-skill\ndescription: [a, b]\n---\nSteps.", "flow collection"),
        ("---\nname: x-skill\ndescription: d\n---\n", "no instructions"),
        ("---\nname: x-skill\ndescription: d\nname: y\n---\nSteps.", "given twice"),
    ],
)
def test_a_skill_md_that_does_not_conform_is_refused_in_words(text, reason):
    reading = read("skills", [SourceFile("x-skill/SKILL.md", text)])
    assert reading.lessons == [] and len(reading.unreadable) == 1
    assert reading.unreadable[0].reason.startswith("not an Agent Skill: ") and reason in reading.unreadable[0].reason


def test_claude_code_skills_may_use_its_own_keys_and_omit_the_name():
    text = "---\ndescription: 'Fix a flaky test. Use when CI fails twice.'\nallowed-tools:\n  - Read\n  - Bash\nmodel: sonnet\n---\nRerun it."
    [lesson] = read("claude-code", [SourceFile(".claude/skills/fix-flaky/SKILL.md", text)]).lessons
    assert lesson.skill.slug == "fix-flaky" and ("allowed-tools", "Read Bash") in lesson.tool_ids
    refused = read("skills", [SourceFile("fix-flaky/SKILL.md", text)])
    assert "key 'model' is not in the Agent Skills format" in refused.unreadable[0].reason


def test_the_consoles_own_skill_md_reads_back_as_the_draft_it_was_written_from():
    from curation.rules.skill_format import SourceLine, render_skill_md

    sections = {
        "when_to_use": "Rotating keys.",
        "steps": "1. Revoke.\n2. Issue.",
        "parameters": "",
        "verification": "The old key fails.",
        "rollback": "Restore the old key.",
        "pitfalls": "",
    }
    text = render_skill_md(
        slug="rotate-keys",
        description='Rotate the "deploy" keys: safely.',
        sections=sections,
        sources=[SourceLine(12, "acme", "Rotating keys", "https://x/entries/12/")],
    )
    [lesson] = read("claude-code", [SourceFile("skills/rotate-keys/SKILL.md", text)]).lessons
    draft = lesson.skill
    assert (draft.slug, draft.description, draft.exported_entries) == (
        "rotate-keys",
        'Rotate the "deploy" keys: safely.',
        (12,),
    )
    assert {k: getattr(draft, k) for k in sections} == sections
    assert lesson.origin == "this console's export"
