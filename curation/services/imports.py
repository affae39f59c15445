"""Another tool's memory brought in as candidates, through the agents' own ingest (`submit_batch`): redaction,
the token's scope check, tombstones (held), exact duplicates (merged: the lesson here gains the import's
evidence), near duplicates and conflicts, then the admission policies. Nothing is written any other way.

An import goes in batches, each one transaction with the `ImportRecord`s of what it landed, so an
interrupted import is resumed by running it again: a record whose key is already stored is skipped, and a
re-import of the same source adds nothing. A dry run does the same work in one transaction rolled back at
the end, so its counts are exactly what the import would do (its only trace: on PostgreSQL the id
sequences advance)."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import io
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction

from curation.models import Entry, ImportRecord, Status
from curation.rules import clock, memory_import
from curation.rules.trust import Sender
from curation.rules.access import clean_scope
from curation.rules.memory_import import ImportedLesson, Reading, SourceFile

from .skill_imports import exported_skill_here, propose_imported_skill
from .submissions import submit_batch

BATCH_SIZE = 500  # the size of an agent's largest batch (services/submissions, docs/benchmarks.md)
FILE_MAX_BYTES = 20 * 1024 * 1024  # one memory file; a larger one is refused, not read
SOURCE_MAX_FILES = 20_000

ADDED, MERGED, HELD, REFUSED, SKIPPED = "added", "merged", "held", "refused", "skipped"
OUTCOMES = (ADDED, MERGED, HELD, REFUSED, SKIPPED)


@dataclass(frozen=True)
class ImportSubmitter:
    """Who submits an import to the ingest, in place of an agent token: its label (on the entries, the
    evidence and the Events) and the one scope prefix it may write under."""

    label: str
    scopes: tuple[str, ...]
    # A person runs an import: a file people wrote is a person's statement (trust.IMPORT_SOURCES says which).
    trust_sender: str = Sender.IMPORT


@dataclass
class ImportReport:
    """What an import did (or, dry, would do): per outcome and reason, the count, and a few examples."""

    dry_run: bool
    total: int = 0
    counts: Counter = field(default_factory=Counter)  # (outcome, reason) -> count
    examples: dict = field(default_factory=dict)  # (outcome, reason) -> the first few places
    batches: int = 0

    def add(self, outcome: str, reason: str, where: str) -> None:
        self.counts[(outcome, reason)] += 1
        places = self.examples.setdefault((outcome, reason), [])
        if len(places) < 3:
            places.append(where)

    def by_outcome(self) -> dict[str, int]:
        totals = dict.fromkeys(OUTCOMES, 0)
        for (outcome, _), count in self.counts.items():
            totals[outcome] += count
        return totals

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def rows(self) -> list[dict]:
        """The report as table rows, in the order of `lines`."""
        return [
            {"outcome": outcome, "reason": reason, "count": count, "examples": self.examples[(outcome, reason)]}
            for (outcome, reason), count in sorted(
                self.counts.items(), key=lambda kv: (OUTCOMES.index(kv[0][0]), kv[0][1])
            )
        ]

    def lines(self) -> list[str]:
        """The report in words: one line per outcome and reason, with where the first ones were."""
        verb = "would be" if self.dry_run else "were"
        lines = []
        for (outcome, reason), count in sorted(
            self.counts.items(), key=lambda kv: (OUTCOMES.index(kv[0][0]), kv[0][1])
        ):
            places = ", ".join(self.examples[(outcome, reason)])
            lines.append(f"{count:>6} {verb} {outcome}{f' ({reason})' if reason else ''}: e.g. {places}")
        return lines


class SourceError(ValueError):
    """The source cannot be read at all (missing, too large, not a zip): said in words."""


def read_source(path: Path) -> list[SourceFile]:
    """The files of a source: a file, a folder (every file below it) or a .zip, as text. A file that is not
    UTF-8 is left out (no memory format is binary)."""
    if not path.exists():
        raise SourceError(f"{path} does not exist.")
    if path.is_file() and path.suffix.lower() == ".zip":
        return _zip_files(path)
    candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if _is_source_file(p, path))
    if len(candidates) > SOURCE_MAX_FILES:
        raise SourceError(f"{path} holds {len(candidates)} files; at most {SOURCE_MAX_FILES}.")
    root = path.parent if path.is_file() else path
    files = []
    for candidate in candidates:
        if candidate.stat().st_size > FILE_MAX_BYTES:
            raise SourceError(f"{candidate} is larger than {FILE_MAX_BYTES // (1024 * 1024)} MB.")
        try:
            text = candidate.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        modified = datetime.datetime.fromtimestamp(candidate.stat().st_mtime, tz=datetime.UTC)
        files.append(SourceFile(candidate.relative_to(root).as_posix(), text, modified))
    return files


def _is_source_file(candidate: Path, root: Path) -> bool:
    """A file of the source: not a link (it could point anywhere), not git's own (a Letta MemFS folder is a
    repository: its .git holds the history, not memory)."""
    return candidate.is_file() and not candidate.is_symlink() and ".git" not in candidate.relative_to(root).parts


def _zip_files(path: Path) -> list[SourceFile]:
    with open(path, "rb") as stream:
        return zip_files(stream, name=str(path))


SOURCE_MAX_BYTES = 200 * 1024 * 1024  # what a whole archive may unpack to
ZIP_RATIO_MAX = 100  # a member that unpacks to more than 100 times its packed size is no text file


def zip_files(stream, *, name: str) -> list[SourceFile]:
    """The text files of a zip archive. Refused, in words, before anything is unpacked: a member whose path
    leaves the archive (absolute, or climbing with '..'), more files or more bytes than a source holds, or a
    member packed so tightly it is a zip bomb; while unpacking, a member larger than its header said."""
    try:
        archive = zipfile.ZipFile(stream)
    except zipfile.BadZipFile:
        raise SourceError(f"{name} is not a zip file.") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > SOURCE_MAX_FILES:
            raise SourceError(f"{name} holds {len(members)} files; at most {SOURCE_MAX_FILES}.")
        total = 0
        for member in members:
            path = PurePosixPath(member.filename.replace("\\", "/"))
            if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
                raise SourceError(f"{name}: {member.filename!r} names a path outside the archive; nothing was read.")
            if member.file_size > FILE_MAX_BYTES:
                raise SourceError(f"{member.filename} is larger than {FILE_MAX_BYTES // (1024 * 1024)} MB.")
            if member.file_size > 1024 * 1024 and member.file_size > ZIP_RATIO_MAX * max(member.compress_size, 1):
                raise SourceError(
                    f"{name}: {member.filename!r} unpacks to {member.file_size // member.compress_size}x its packed "
                    "size: refused as a zip bomb; nothing was read."
                )
            total += member.file_size
        if total > SOURCE_MAX_BYTES:
            raise SourceError(f"{name} unpacks to more than {SOURCE_MAX_BYTES // (1024 * 1024)} MB; nothing was read.")
        files = []
        for member in members:
            with archive.open(member) as opened:
                data = opened.read(FILE_MAX_BYTES + 1)
            if len(data) > member.file_size:  # the header lied about the size
                raise SourceError(f"{name}: {member.filename!r} is larger than its header says; nothing was read.")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            files.append(SourceFile(PurePosixPath(member.filename.replace("\\", "/")).as_posix(), text))
    return files


def upload_files(name: str, data: bytes) -> list[SourceFile]:
    """An uploaded source: a zip's files, or the one file by its name (no folder of it is ever read)."""
    if name.lower().endswith(".zip") or data[:4] == b"PK\x03\x04":
        return zip_files(io.BytesIO(data), name=name)
    if len(data) > FILE_MAX_BYTES:
        raise SourceError(f"{name} is larger than {FILE_MAX_BYTES // (1024 * 1024)} MB.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{name} is not UTF-8 text: no memory format is binary.") from None
    return [SourceFile(PurePosixPath(name.replace("\\", "/")).name or "upload", text)]


_KEY_PURPOSE = b"memoryadmin import keys v1"


def import_key(scope: str, lesson: ImportedLesson) -> str:
    """One record imported into one scope: importing it again into that scope finds this key. Keyed with the
    install's secret (as tombstones are), because the source key hashes the lesson's text: a copy of the
    database alone cannot confirm a guessed text, a forgotten one included, was ever imported."""
    key = hmac.new(settings.SECRET_KEY.encode(), _KEY_PURPOSE, hashlib.sha256).digest()
    return hmac.new(key, f"{scope}\0{lesson.source_key}".encode(), hashlib.sha256).hexdigest()


def import_memory(
    reading: Reading,
    *,
    prefix: str,
    label: str,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    progress=None,
    at=None,
) -> ImportReport:
    """Submit `reading`'s lessons under `prefix` as `label`, `batch_size` at a time; `progress(report)` is
    called after each batch. Raises ValidationError for a bad prefix."""
    prefix = clean_scope(prefix.rstrip("/"))
    submitter = ImportSubmitter(label=label[:150], scopes=(prefix,))
    report = ImportReport(dry_run=dry_run, total=len(reading.lessons) + len(reading.unreadable))
    for unreadable in reading.unreadable:
        place = f"{unreadable.file} line {unreadable.line}" if unreadable.line else unreadable.file
        report.add(REFUSED, unreadable.reason, place)
    if dry_run:
        with transaction.atomic():
            _import_batches(reading.lessons, prefix, submitter, report, batch_size, progress, at)
            transaction.set_rollback(True)
    else:
        _import_batches(reading.lessons, prefix, submitter, report, batch_size, progress, at)
    return report


def _import_batches(lessons, prefix, submitter, report, batch_size, progress, at) -> None:
    seen: set[str] = set()
    for start in range(0, len(lessons), batch_size):
        with transaction.atomic():
            _import_batch(lessons[start : start + batch_size], prefix, submitter, report, seen, at)
        report.batches += 1
        if progress:
            progress(report)


def _import_batch(lessons: list[ImportedLesson], prefix, submitter, report: ImportReport, seen: set, at) -> None:
    keyed = [(import_key(memory_import.place(prefix, x.scope), x), x) for x in lessons]
    stored = set(ImportRecord.objects.filter(key__in=[key for key, _ in keyed]).values_list("key", flat=True))
    exported = _exported_from_here(prefix, [x for _, x in keyed])
    todo = []
    for key, lesson in keyed:
        if key in stored or key in seen:
            report.add(SKIPPED, "already imported", lesson.where)
        elif lesson in exported:
            report.add(SKIPPED, f"exported from here: entry #{lesson.exported_entry_id}", lesson.where)
        elif lesson.skill and (slug := exported_skill_here(lesson.skill)):
            report.add(SKIPPED, f"exported from here: skill {slug}", lesson.where)
        else:
            seen.add(key)
            todo.append((key, lesson))
    if not todo:
        return
    results = submit_batch(
        items=[lesson.candidate(memory_import.place(prefix, lesson.scope)) for _, lesson in todo],
        token=submitter,
        at=at,
    )
    landed = [result["id"] for result in results if result["ok"]]
    entries = Entry.objects.only("status", "held_by_id", "scope", "version").in_bulk(landed)
    records = []
    for (key, lesson), result in zip(todo, results):
        if not result["ok"]:
            report.add(REFUSED, _refusal_reason(result), lesson.where)
            continue
        entry = entries[result["id"]]
        outcome, reason = _outcome(result, entry)
        if lesson.skill and outcome == ADDED:
            slug, why_not = propose_imported_skill(
                entry, lesson.skill, where=lesson.where, label=submitter.label, at=at or clock.now()
            )
            reason = f"{reason}; {'a skill proposal for a lead' if slug else why_not}"
        report.add(outcome, reason, lesson.where)
        records.append(
            ImportRecord(
                key=key,
                entry_id=entry.pk,
                format=lesson.format,
                source=lesson.where[:255],
                outcome=outcome,
                imported_by_label=submitter.label,
                created_at=at or clock.now(),
            )
        )
    ImportRecord.objects.bulk_create(records)


def _outcome(result: dict, entry: Entry) -> tuple[str, str]:
    if not result["created"]:
        return MERGED, f"the same lesson is here: evidence added to #{result['duplicate_of']}"
    if entry.held_by_id is not None:
        return HELD, "repeats a forgotten lesson"
    notes = []
    if entry.status == Status.ACTIVE:
        notes.append("approved by the admission policy")
    elif entry.status == Status.REJECTED:
        notes.append("rejected by the admission policy")
    else:
        notes.append("waits for review")
    if result["duplicates"]:
        notes.append("a near duplicate of a lesson here")
    if result["conflicts"]:
        notes.append("conflicts with a lesson here")
    if result["flags"]:
        notes.append("redacted")
    return ADDED, "; ".join(notes)


def _refusal_reason(result: dict) -> str:
    field_name, messages = next(iter(result["errors"].items()))
    return f"{field_name}: {messages[0]}" if field_name != "_" else messages[0]


def _exported_from_here(prefix: str, lessons: list[ImportedLesson]) -> set[ImportedLesson]:
    """The lessons read from this console's own export that are still the entry they were exported from
    (the same scope, trigger and content): importing them would only repeat that entry."""
    wanted = {x.exported_entry_id: x for x in lessons if x.exported_entry_id is not None}
    if not wanted:
        return set()
    rows = Entry.objects.filter(pk__in=wanted).values_list("pk", "scope", "trigger", "content")
    return {
        wanted[pk]
        for pk, scope, trigger, content in rows
        if scope == memory_import.place(prefix, wanted[pk].scope)
        and memory_import.same_lesson_as_exported(wanted[pk], trigger=trigger, content=content)
    }
