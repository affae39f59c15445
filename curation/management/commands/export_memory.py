"""Write a published memory version as the files coding agents load at start-up:

    python manage.py export_memory build/memory                   # the published version
    python manage.py export_memory build/memory --version 4 --scope acme/billing-api

DIR/MEMORY.md (the index: at most 200 lines and 25 KB), DIR/topics/<scope>.md (one per scope, or per scope
and kind where a scope is large) and DIR/skills/<name>/SKILL.md. A file whose content is already the same
is left alone, so re-exporting an unchanged version changes no file (the export can live in git); a topic
or skill file an earlier export wrote and this version no longer holds is removed.
"""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from curation.rules.access import clean_scope
from curation.models import MemoryVersion
from curation.selectors import releases


def write_export(root: Path, files: dict[str, str]) -> tuple[int, int]:
    """Write `files` under `root`: (files written, stale export files removed)."""
    written = removed = 0
    for relative, text in files.items():
        path = root / relative
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written += 1
    for folder in ("topics", "skills"):
        for path in sorted((root / folder).rglob("*.md")) if (root / folder).is_dir() else []:
            if path.relative_to(root).as_posix() not in files:
                path.unlink()
                removed += 1
    return written, removed


class Command(BaseCommand):
    help = "Export a published memory version as MEMORY.md, topic files and skills/<name>/SKILL.md."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version N` names the memory version here; it replaces Django's --version (print and exit).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("directory", help="where to write (made if missing)")
        parser.add_argument("--version", type=int, dest="number", help="a version number (default: the published one)")
        parser.add_argument("--scope", help="only this scope and the scopes below it")

    def handle(self, *args, directory, number=None, scope=None, **options):
        if scope:
            try:
                scope = clean_scope(scope.rstrip("/"))
            except ValidationError as exc:
                raise CommandError(f"--scope: {' '.join(exc.messages)}") from None
        try:
            version = releases.version_by_number(number) if number else releases.published_version()
        except MemoryVersion.DoesNotExist:
            raise CommandError(f"No memory version {number}.") from None
        if version is None:
            raise CommandError("No memory version is published yet.")
        root = Path(directory)
        if root.exists() and not root.is_dir():
            raise CommandError(f"{root} exists and is not a directory.")
        files = releases.export_of(version, scope=scope or "")
        written, removed = write_export(root, files)
        self.stdout.write(
            f"Version {version.number}: {len(files)} files, {written} written, {removed} removed in {root}."
        )
