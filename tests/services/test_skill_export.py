"""`export_skills DIR`: writes DIR/<name>/SKILL.md for every approved skill, idempotent, and removes only
the files of retired skills, and only when asked."""

from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from curation.selectors import skills as skill_reads
from curation.models import SkillProposal
from curation.services import skills
from tests.factories import nominated, report


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
    [read] = [s for s in skill_reads.exported_skills() if s.slug == one.slug]
    assert text == skill_reads.skill_md(read, source_url=lambda pk: f"https://memory.example.com/entries/{pk}/")
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
