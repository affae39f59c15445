"""SKILL.md as a pure format: the front matter any YAML parser reads back, the sections in order, and the
text rules a draft is made with (rollback note, sections of the content, slugs)."""

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.rules import skill_format

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
        slug="migrate-billing",
        description='Run migrate from /srv/app: "not" #workspace.\nUse when migrating.',
        sections={
            "when_to_use": "Running migrations in the billing-api container.",
            "steps": "1. Run `python manage.py migrate` from /srv/app.\r\n2. Check showmigrations.",
            "verification": "`python manage.py showmigrations` shows every migration applied.",
            "rollback": "`python manage.py migrate billing <previous>`",
            "parameters": "",
            "pitfalls": "  ",
        },
        sources=[
            skill_format.SourceLine(
                12,
                "acme/billing-api/container",
                "Running migrations in the billing-api container",
                "https://memory.example.com/entries/12/",
            )
        ],
        footer="Curated in memoryadmin.",
    )
    assert text == EXPECTED
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {
        "name": "migrate-billing",
        "description": 'Run migrate from /srv/app: "not" #workspace. Use when migrating.',
    }


@pytest.mark.parametrize("slug", ["yes", "null", "123", "1e3", "on", "true"])
def test_names_yaml_would_read_as_something_else_stay_strings(slug):
    text = skill_format.render_skill_md(slug=slug, description="d", sections={}, sources=[])
    assert yaml.safe_load(text.split("---\n")[1])["name"] == slug


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200))
def test_any_text_survives_the_front_matter(text):
    assert yaml.safe_load(f"description: {skill_format.yaml_quoted(text)}") == {"description": text}


@pytest.mark.parametrize(
    "content, rollback, steps",
    [
        ("Do A. Then B. Rollback: undo A.", "undo A.", "Do A. Then B."),
        ("Do A.\n- Roll back: undo A\n  and B", "undo A\n  and B", "Do A."),
        ("## Rollback\nrestore the dump\n## Verify\ncurl /health", "restore the dump", ""),
        ("**Undo:** git revert HEAD", "git revert HEAD", ""),
        ("Do not revert: ever.", "", "Do not revert: ever."),  # not a label: the sentence goes on
        ("Rollbacks are slow here.", "", "Rollbacks are slow here."),
    ],
)
def test_the_rollback_note_is_a_labelled_part_of_the_content(content, rollback, steps):
    parts = skill_format.content_sections(content)
    assert (parts["rollback"], parts["steps"]) == (rollback, steps)
    assert skill_format.rollback_note(content) == rollback


def test_a_draft_from_an_entry():
    draft = skill_format.draft_from_entry(
        kind="procedure",
        scope="acme/web",
        trigger="Deploying the web app on Fridays",
        content="Freeze the release branch. Deploy with `make deploy`.\nVerify: the smoke test passes.\n"
        "Parameters: RELEASE the tag to deploy.\nRollback: `make rollback RELEASE=<previous>`.\n"
        "Pitfalls: the CDN caches for 10 minutes.",
        boundary="Not during an incident.",
        conditions=["deploy"],
    )
    assert draft == {
        "slug": "deploying-the-web-app-on-fridays",
        "description": "How to go about deploying the web app on Fridays: 2 steps, with a check and a rollback. "
        "Use it when deploying the web app on Fridays (acme/web).",
        "when_to_use": "Deploying the web app on Fridays.\nKeywords: deploy.\nApplies in `acme/web` and the scopes below it.",
        "steps": "1. Freeze the release branch.\n2. Deploy with `make deploy`.",
        "parameters": "RELEASE the tag to deploy.",
        "verification": "the smoke test passes.",
        "rollback": "`make rollback RELEASE=<previous>`.",
        "pitfalls": "the CDN caches for 10 minutes.\nNot during an incident.",
    }


def test_slugs():
    assert skill_format.slug_base("Running `make` in the CI — fast!") == "running-make-in-the-ci-fast"
    long = skill_format.slug_base("word " * 30)
    assert len(long) <= 64 and not long.endswith("-") and long.startswith("word-word")
    assert skill_format.slug_base("???") == "skill"
    assert skill_format.unique_slug("a" * 64, {"a" * 64}) == "a" * 62 + "-2"


# --- withdrawal ----------------------------------------------------------------------------------------------

MARK = "[forgotten: request #7]"


def test_a_draft_made_of_the_forgotten_entry_loses_every_text_and_keeps_its_empty_fields():
    draft = {
        "description": "Run it.",
        "when_to_use": "Always.",
        "steps": "1. Run it.",
        "parameters": "",
        "verification": "",
        "rollback": "Undo it.",
        "pitfalls": "",
    }
    assert skill_format.withdrawn_draft(draft, texts=[], marker=MARK, made_of_it=True) == {
        "description": MARK,
        "when_to_use": MARK,
        "steps": MARK,
        "parameters": "",
        "verification": "",
        "rollback": MARK,
        "pitfalls": "",
    }


def test_otherwise_only_a_field_quoting_a_line_or_sentence_of_the_forgotten_text_goes():
    forgotten = "Delete /tmp/zorblax-cache before you migrate. Then wait.\nRollback: nothing to undo."
    draft = {
        "description": "Migrate the billing database.",
        "steps": "1. Run migrate.",
        "pitfalls": "- Delete /tmp/zorblax-cache before you migrate.",
        "rollback": "Restore the dump.",
    }
    withdrawn = skill_format.withdrawn_draft(draft, texts=[forgotten, "migrate"], marker=MARK, made_of_it=False)
    assert withdrawn["pitfalls"] == MARK
    # A keyword ("migrate") or a stock phrase is no quote: the other fields stay.
    assert [withdrawn[f] for f in ("description", "steps", "rollback")] == [
        "Migrate the billing database.",
        "1. Run migrate.",
        "Restore the dump.",
    ]


def test_a_withdrawn_skills_snapshots_lose_their_texts_and_names_and_its_reasons_its_old_names():
    nominated = {
        "proposal": 3,
        "skill": "running-migrations",
        "draft": {"slug": "running-migrations", "steps": "1. Run.", "pitfalls": ""},
    }
    assert skill_format.withdrawn_snapshot(nominated, marker=MARK, new_slug="withdrawn-skill-3") == {
        "proposal": 3,
        "skill": "withdrawn-skill-3",
        "draft": {"slug": "withdrawn-skill-3", "steps": MARK, "pitfalls": ""},
    }
    reason = "nominated as skill running-migrations (not running-migrations-2): 12 hits"
    assert skill_format.replace_slugs(reason, ["running-migrations"], "withdrawn-skill-3") == (
        "nominated as skill withdrawn-skill-3 (not running-migrations-2): 12 hits"
    )


@pytest.mark.parametrize(
    "trigger, content, description",
    [
        (
            "Resetting the billing-api test database in the container",
            "Stop the Celery worker with `supervisorctl stop worker`.\nRun `make reset-db`.\nVerify: `make check` passes.",
            "How to go about resetting the billing-api test database in the container: 2 steps, with a check. "
            "Use it when resetting the billing-api test database in the container (acme/billing-api).",
        ),
        (
            "After a failed migration",
            "Restore the snapshot. Rollback: keep the failed schema for the post-mortem.",
            "What to do after a failed migration: 1 step, with a rollback. Use it after a failed migration "
            "(acme/billing-api).",
        ),
    ],
)
def test_a_skills_description_says_what_it_is_for_and_when_not_its_first_step(trigger, content, description):
    draft = skill_format.draft_from_entry(
        kind="procedure", scope="acme/billing-api", trigger=trigger, content=content, boundary="", conditions=[]
    )
    assert draft["description"] == description
    assert "Stop the Celery worker" not in draft["description"]
