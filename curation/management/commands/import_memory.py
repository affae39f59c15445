"""Bring another tool's memory in as candidates, through the agents' own ingest:

    python manage.py import_memory ~/.claude/projects/my-app/memory --from claude-code --scope acme/my-app
    python manage.py import_memory mem0-export.json --from mem0 --scope acme/support --dry-run
    python manage.py import_memory ./skills --from skills --scope acme/platform

PATH is a file, a folder or a .zip. Each lesson is submitted as an agent's candidate would be (redaction,
tombstones, exact and near duplicates, conflicts, admission policies), in batches, with its provenance as
evidence; a SKILL.md becomes a skill proposal for a lead. Run it again after an interruption: what landed is skipped, the rest goes in. --dry-run prints
what would be added, merged, held, refused or skipped, per reason, and writes nothing.
"""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from curation.rules.memory_import import FORMATS, read
from curation.services.imports import BATCH_SIZE, ImportReport, SourceError, import_memory, read_source

BAR_WIDTH = 30


def progress_line(report: ImportReport) -> str:
    """`[######........] 1500/10000 lessons (15%) · batch 3 · added 1400, merged 50, refused 50`."""
    share = report.done / report.total if report.total else 1.0
    filled = round(share * BAR_WIDTH)
    counts = ", ".join(f"{outcome} {count}" for outcome, count in report.by_outcome().items() if count)
    return (
        f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {report.done}/{report.total} lessons ({share:.0%})"
        f" · batch {report.batches} · {counts or 'nothing yet'}"
    )


class Command(BaseCommand):
    help = "Import Claude Code, Codex, Letta, Agent Skills, Mem0, JSONL or Markdown memory as candidates."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a file, a folder or a .zip")
        parser.add_argument("--from", dest="format", required=True, choices=FORMATS, help="the tool that wrote it")
        parser.add_argument("--scope", required=True, help="the scope prefix the lessons go under")
        parser.add_argument("--dry-run", action="store_true", help="say what would happen; write nothing")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help=f"lessons per batch ({BATCH_SIZE})")
        parser.add_argument("--label", default="", help="who imports, on the entries and their history")

    def handle(self, *args, path, format, scope, dry_run=False, batch_size=BATCH_SIZE, label="", **options):
        if not 1 <= batch_size <= BATCH_SIZE:
            raise CommandError(f"--batch-size: from 1 to {BATCH_SIZE}.")
        try:
            files = read_source(Path(path))
        except SourceError as exc:
            raise CommandError(str(exc)) from None
        reading = read(format, files)
        self.stdout.write(
            f"{len(files)} files read as {format}: {len(reading.lessons)} lessons, "
            f"{len(reading.unreadable)} unreadable, {len(reading.ignored)} files not {format} memory."
        )
        try:
            report = import_memory(
                reading,
                prefix=scope,
                label=f"import:{format}" + (f" by {label.strip()}" if label.strip() else ""),
                dry_run=dry_run,
                batch_size=batch_size,
                progress=lambda report: self.stdout.write(progress_line(report)),
            )
        except ValidationError as exc:
            raise CommandError(f"--scope: {' '.join(exc.messages)}") from None
        self.stdout.write("Dry run: nothing was written." if dry_run else "Done.")
        for line in report.lines():
            self.stdout.write(line)
