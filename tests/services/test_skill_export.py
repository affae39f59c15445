"""SKILL.md: the front matter any YAML parser reads back, the sections in order, and `export_skills DIR`
writing DIR/<name>/SKILL.md; plus the text rules a draft is made with."""

from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from curation import selectors_skills, skill_format
from curation.models import SkillProposal
from curation.services import skills
from tests.factories import nominated, report

EXPECTED = '''---
name: "migrate-billing"
description: "Run migrate from /srv/app: \\"not\\" #workspace. Use when migrating."
---

# Migrate billing

## When to use

Running migrations in the billing-api container.

## Steps

1. Run `python manage.py migrate` from /srv/app.
2. Check showmigrations.

## Parameters

None.

## Verification

`python manage.py showmigrations` shows every migration applied.

## Rollback

`python manage.py migrate billing <previous>`

## Pitfalls

None.

## Sources

- memoryadmin [entry #12](https://memory.example.com/entries/12/) (`acme/billing-api/container`): Running migrations in the billing-api container

Curated in memoryadmin.
'''


def test_the_file_coding_agents_load():
    text = skill_format.render_skill_md(
        slug="migrate-billing", description='Run migrate from /srv/app: "not" #workspace.\nUse when migrating.',
        sections={"when_to_use": "Running migrations in the billing-api container.",
                  "steps": "1. Run `python manage.py migrate` from /srv/app.\r\n2. Check showmigrations.",
                  "verification": "`python manage.py showmigrations` shows every migration applied.",
                  "rollback": "`python manage.py migrate billing <previous>`", "parameters": "", "pitfalls": "  "},
        sources=[skill_format.SourceLine(12, "acme/billing-api/container",
                                         "Running migrations in the billing-api container",
                                         "https://memory.example.com/entries/12/")],
        footer="Curated in memoryadmin.",
    )
    assert text == EXPECTED
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {"name": "migrate-billing", "description": 'Run migrate from /srv/app: "not" #workspace. Use when migrating.'}


@pytest.mark.parametrize("slug", ["yes", "null", "123", "1e3", "on", "true"])
def test_names_yaml_would_read_as_something_else_stay_strings(slug):
    text = skill_format.render_skill_md(slug=slug, description="d", sections={}, sources=[])
    assert yaml.safe_load(text.split("---\n")[1])["name"] == slug


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200))
def test_any_text_survives_the_front_matter(text):
    assert yaml.safe_load(f"description: {skill_format.yaml_quoted(text)}") == {"description": text}


@pytest.mark.parametrize("content, rollback, steps", [
    ("Do A. Then B. Rollback: undo A.", "undo A.", "Do A. Then B."),
    ("Do A.\n- Roll back: undo A\n  and B", "undo A\n  and B", "Do A."),
    ("## Rollback\nrestore the dump\n## Verify\ncurl /health", "restore the dump", ""),
    ("**Undo:** git revert HEAD", "git revert HEAD", ""),
    ("Do not revert: ever.", "", "Do not revert: ever."),        # not a label: the sentence goes on
    ("Rollbacks are slow here.", "", "Rollbacks are slow here."),
])
def test_the_rollback_note_is_a_labelled_part_of_the_content(content, rollback, steps):
    parts = skill_format.content_sections(content)
    assert (parts["rollback"], parts["steps"]) == (rollback, steps)
    assert skill_format.rollback_note(content) == rollback


def test_a_draft_from_an_entry():
    draft = skill_format.draft_from_entry(
        kind="procedure", scope="acme/web", trigger="Deploying the web app on Fridays",
        content="Freeze the release branch. Deploy with `make deploy`.\nVerify: the smoke test passes.\n"
                "Parameters: RELEASE the tag to deploy.\nRollback: `make rollback RELEASE=<previous>`.\n"
                "Pitfalls: the CDN caches for 10 minutes.",
        boundary="Not during an incident.", conditions=["deploy"])
    assert draft == {
        "slug": "deploying-the-web-app-on-fridays",
        "description": "Freeze the release branch. Use when deploying the web app on Fridays (acme/web).",
        "when_to_use": "Deploying the web app on Fridays.\nKeywords: deploy.\nApplies in `acme/web` and the scopes below it.",
        "steps": "1. Freeze the release branch.\n2. Deploy with `make deploy`.",
        "parameters": "RELEASE the tag to deploy.",
        "verification": "the smoke test passes.",
        "rollback": "`make rollback RELEASE=<previous>`.",
        "pitfalls": "the CDN caches for 10 minutes.\nDoes not hold: Not during an incident.",
    }


def test_slugs():
    assert skill_format.slug_base("Running `make` in the CI — fast!") == "running-make-in-the-ci-fast"
    long = skill_format.slug_base("word " * 30)
    assert len(long) <= 64 and not long.endswith("-") and long.startswith("word-word")
    assert skill_format.slug_base("???") == "skill"
    assert skill_format.unique_slug("a" * 64, {"a" * 64}) == "a" * 62 + "-2"


# --- the export command --------------------------------------------------------------------------------


def export(*args):
    out, err = StringIO(), StringIO()
    call_command("export_skills", *[str(a) for a in args], stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def approved(lead):
    def make(**fields):
        p = nominated(**fields)
        report(p, ["success"] * 5)
        skills.approve_skill(p.pk, actor=lead, expected_version=1)
        return SkillProposal.objects.get(pk=p.pk)
    return make


@pytest.mark.django_db
def test_export_writes_one_directory_per_skill(approved, tmp_path):
    one = approved()
    two = approved(scope="acme/web", trigger="Deploying the web app")
    nominated(scope="acme/billing-api/host", trigger="Not approved yet")
    target = tmp_path / ".claude" / "skills"
    out, _ = export(target, "--base-url", "https://memory.example.com/")
    assert "Exported 2 skills" in out and "2 written" in out
    assert sorted(p.name for p in target.iterdir()) == sorted([one.slug, two.slug])
    text = (target / one.slug / "SKILL.md").read_text()
    [read] = [s for s in selectors_skills.exported_skills() if s.slug == one.slug]
    assert text == selectors_skills.skill_md(read, source_url=lambda pk: f"https://memory.example.com/entries/{pk}/")
    assert "approved by lena" in text and "after 5 of 5 trials succeeded" in text
    assert f"[entry #{one.nominated_entry_id}](https://memory.example.com/entries/{one.nominated_entry_id}/)" in text
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {"name": one.slug, "description": one.description}
    for heading in ("When to use", "Steps", "Parameters", "Verification", "Rollback", "Pitfalls", "Sources"):
        assert f"\n## {heading}\n" in text
    assert text.index("## Steps") < text.index("## Rollback") < text.index("## Sources")
    out, _ = export(target, "--base-url", "https://memory.example.com")
    assert "0 written, 2 unchanged" in out
    out, _ = export(tmp_path / "web", "--scope", "acme/web")
    assert [p.name for p in (tmp_path / "web").iterdir()] == [two.slug]


@pytest.mark.django_db
def test_export_is_idempotent_and_prunes_only_retired_skills(approved, lead, tmp_path):
    skill = approved()
    export(tmp_path)
    assert "1 unchanged" in export(tmp_path)[0]
    (tmp_path / "my-own-skill").mkdir()
    (tmp_path / "my-own-skill" / "SKILL.md").write_text("mine")
    skills.retire_skill(skill.pk, actor=lead, expected_version=skill.version, reason="scripted")
    out, err = export(tmp_path)
    assert "Exported 0 skills" in out and f"retired skills are still in {tmp_path}: {skill.slug}" in err
    assert (tmp_path / skill.slug / "SKILL.md").exists()
    out, _ = export(tmp_path, "--prune")
    assert f"Removed the SKILL.md of 1 retired skills: {skill.slug}." in out
    assert not (tmp_path / skill.slug).exists() and (tmp_path / "my-own-skill" / "SKILL.md").read_text() == "mine"


@pytest.mark.django_db
def test_export_refusals(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="is not a directory"):
        export(tmp_path / "file")
    with pytest.raises(CommandError, match="--scope"):
        export(tmp_path, "--scope", "Not A Scope")
