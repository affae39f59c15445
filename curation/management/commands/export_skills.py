"""Write every approved skill as DIR/<name>/SKILL.md: DIR is the skills directory a coding agent loads
(e.g. `.claude/skills`), each skill a directory named after it with its SKILL.md inside.

    python manage.py export_skills .claude/skills
    python manage.py export_skills build/skills --scope acme/billing-api --base-url https://memory.example.com
    python manage.py export_skills .claude/skills --prune     # also remove the SKILL.md of retired skills

A file whose content is already the same is left alone, so a re-export changes nothing. Only SKILL.md files
of skills memoryadmin retired are ever removed, and only with --prune.
"""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from curation.rules.access import clean_scope
from curation.models import SkillProposal
from curation.selectors import skills as skill_reads


class Command(BaseCommand):
    help = "Export the approved skills as DIR/<name>/SKILL.md, the layout coding agents load."

    def add_arguments(self, parser):
        parser.add_argument("directory", help="the skills directory to write, e.g. .claude/skills (made if missing)")
        parser.add_argument("--scope", help="only skills of this scope and the scopes below it")
        parser.add_argument("--base-url", default="", help="the console's address, to link each skill's source entries")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="remove the SKILL.md of skills that were retired since an earlier export",
        )

    def handle(self, *args, directory, scope=None, base_url="", prune=False, **options):
        if scope:
            try:
                scope = clean_scope(scope)
            except ValidationError as exc:
                raise CommandError(f"--scope: {' '.join(exc.messages)}") from None
        root = Path(directory)
        if root.exists() and not root.is_dir():
            raise CommandError(f"{root} exists and is not a directory.")
        root.mkdir(parents=True, exist_ok=True)
        base_url = base_url.rstrip("/")
        link = (lambda entry_id: f"{base_url}/entries/{entry_id}/") if base_url else None
        written, unchanged = [], []
        for skill in skill_reads.exported_skills(scope=scope or ""):
            path = root / skill.slug / "SKILL.md"
            text = skill_reads.skill_md(skill, source_url=link)
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                unchanged.append(skill.slug)
                continue
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(skill.slug)
        retired = SkillProposal.objects.filter(status=SkillProposal.Status.RETIRED).values_list("slug", flat=True)
        stale = sorted(slug for slug in retired if (root / slug / "SKILL.md").is_file())
        for slug in stale:
            if prune:
                (root / slug / "SKILL.md").unlink()
                if not any((root / slug).iterdir()):
                    (root / slug).rmdir()
        self.stdout.write(
            f"Exported {len(written) + len(unchanged)} skills to {root}: {len(written)} written, "
            f"{len(unchanged)} unchanged."
        )
        for slug in written:
            self.stdout.write(f"  wrote {root / slug / 'SKILL.md'}")
        if stale and prune:
            self.stdout.write(f"Removed the SKILL.md of {len(stale)} retired skills: {', '.join(stale)}.")
        elif stale:
            self.stderr.write(
                f"{len(stale)} retired skills are still in {root}: {', '.join(stale)} "
                "(run again with --prune to remove them)."
            )
