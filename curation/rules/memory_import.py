"""Other tools' memory read as candidate lessons, one adapter per format, as pure functions of the files'
texts: what each lesson says (trigger, content, kind), where it came from (format, file, line or the tool's
record id, the tool's own timestamp and ids) and what its origin is worth (`signal`). Nothing here reads a
disk or a database; the import service submits the lessons through the agents' own ingest.

The trust a format deserves: a file people write and keep (CLAUDE.md, AGENTS.md, a team's notes) is a
person's statement, `external`, and its bullets are the team's agreed rules (`preference`); a line an agent
wrote about its own work (Claude Code's auto memory, Codex's memories, a Mem0 memory an LLM extracted from a
conversation, an agent's JSONL, every file of a Letta MemFS repository, its skills included) is the agent's
claim, `self`. A SKILL.md of an Agent Skills folder or of Claude Code's skills is people's (`external`)."""

from __future__ import annotations

import datetime
import hashlib
import json
import posixpath
import re
from dataclasses import dataclass, field

from curation.rules.context_block import situation
from curation.rules.markdown_lessons import Block, blocks, one_line, strip_front_matter
from curation.rules.skill_import import NotConforming, SkillDraft, front_matter, read_skill_md
from curation.rules.trust import import_source
from curation.rules.vocabulary import Kind, Signal

FORMATS = ("claude-code", "codex", "letta", "skills", "markdown", "jsonl", "mem0")
TRIGGER_LIMIT = 500  # models.TRIGGER_MAX: a longer heading is cut, not refused
EVIDENCE_EXCERPT_LIMIT = 4000
DEFAULT_TRIGGER = "Working in this project"


@dataclass(frozen=True)
class SourceFile:
    """One file of what is imported: its path inside the source ('/'-separated), its text and, when the
    reader knows it, when it last changed."""

    path: str
    text: str
    modified_at: datetime.datetime | None = None


@dataclass(frozen=True)
class ImportedLesson:
    format: str
    file: str
    line: int | None  # where the lesson starts in its file (None for a record read by id)
    record_id: str  # the tool's own id ("" when it has none)
    origin: str  # what the file is, in words: "Claude Code auto memory"
    trigger: str
    content: str
    kind: str
    signal: str
    scope: str = ""  # below the import's scope ("" = the scope itself), or a full scope the file states
    conditions: tuple[str, ...] = ()
    boundary: str = ""
    observed_at: str = ""  # the tool's own timestamp (ISO 8601), else the file's
    tool_ids: tuple[tuple[str, str], ...] = ()  # the tool's other ids: ("user_id", "alex"), ("hash", ...)
    exported_entry_id: int | None = None  # read from this console's own export: the entry it came from
    skill: SkillDraft | None = None  # a SKILL.md: the lesson is its procedure, the draft becomes a skill proposal

    @property
    def where(self) -> str:
        if self.record_id:
            return f"{self.file} record {self.record_id}"
        return f"{self.file} line {self.line}" if self.line else self.file

    @property
    def source_key(self) -> str:
        """The same record of the same file gives the same key, wherever and however often it is imported:
        its path and id, or its path and text when it has no id (so a line moved in its file is the same
        record, and an edited one a new record). The import's scope is added by the service."""
        identity = f"{self.record_id}\0{one_line(self.trigger)}\0{one_line(self.content)}"
        digest = hashlib.sha256(f"{self.format}\0{self.file}\0{identity}".encode())
        return digest.hexdigest()

    def evidence(self) -> dict:
        """The provenance as one piece of evidence: what it is, where it is, the tool's ids, the text as read."""
        ids = "".join(f", {name} {value}" for name, value in self.tool_ids)
        excerpt = f"Imported from {self.origin} ({self.format}), {self.where}{ids}: {self.content}"
        if len(excerpt) > EVIDENCE_EXCERPT_LIMIT:
            excerpt = excerpt[: EVIDENCE_EXCERPT_LIMIT - 1] + "…"
        ref = f"import:{self.format}:{self.file}" + (f"#{self.record_id}" if self.record_id else f":{self.line or 0}")
        return {
            # A person's file is what people said; an agent's line is its own reflection. "import" is no kind of
            # its own: agents may send any kind, so the provenance is the text and the ImportRecord, not a label.
            "kind": "user_statement" if self.signal == Signal.EXTERNAL else "reflection",
            "signal": self.signal,
            "source": import_source(self.format, self.signal),  # who wrote the file: trust.IMPORT_SOURCES
            "polarity": "supports",
            "excerpt": excerpt,
            "task_ref": ref[:255],
            "observed_at": self.observed_at or None,
        }

    def candidate(self, scope: str) -> dict:
        """The submission an agent would send for this lesson, in `scope`."""
        return {
            "scope": scope,
            "kind": self.kind,
            "trigger": self.trigger,
            "content": self.content,
            "conditions": list(self.conditions),
            "boundary": self.boundary,
            "signal": self.signal,
            "evidence": [self.evidence()],
        }


@dataclass(frozen=True)
class Unreadable:
    """A part of the source no lesson could be read from, and why (the dry run counts them as refused)."""

    file: str
    line: int | None
    reason: str


@dataclass
class Reading:
    lessons: list[ImportedLesson] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # files the format does not hold lessons in


def place(prefix: str, scope: str) -> str:
    """Where a lesson lands: the import's scope, a scope below it, or the scope its file states when that
    lies under the import's scope (else that scope is put below the import's)."""
    prefix = prefix.strip("/")
    scope = scope.strip("/")
    if not scope:
        return prefix
    if scope == prefix or scope.startswith(prefix + "/"):
        return scope
    return f"{prefix}/{scope}"


def folder_scope(path: str) -> str:
    """A nested instruction file applies to its folder: the folder as scope segments below the import's
    scope (`services/Payments API/AGENTS.md` -> `services/payments-api`); hidden folders (`.claude`) add none."""
    segments = []
    for part in posixpath.dirname(path).split("/"):
        if not part or part.startswith("."):
            continue
        segments.append(re.sub(r"[^a-z0-9._-]+", "-", part.lower()).strip("-.") or "x")
    return "/".join(segments)


def read(format: str, files: list[SourceFile]) -> Reading:
    """The lessons of `files` read as `format` (one of FORMATS)."""
    if format not in _ADAPTERS:
        raise ValueError(f"Unknown format {format!r}: one of {', '.join(FORMATS)}.")
    reading = Reading()
    for source in sorted(files, key=lambda f: f.path):
        _ADAPTERS[format](source, files, reading)
    return reading


# --- Markdown, and the instruction files written in it ---------------------------------------------------


def _trigger(block: Block, fallback: str) -> str:
    """The heading a lesson sits under (the file's title only when there is no other), else `fallback`."""
    titles = [t for t in block.headings if t]
    trigger = titles[-1] if titles else fallback
    return trigger if len(trigger) <= TRIGGER_LIMIT else trigger[: TRIGGER_LIMIT - 1].rstrip() + "…"


def _iso(moment: datetime.datetime | None) -> str:
    return moment.isoformat() if moment else ""


def _markdown_lessons(
    source: SourceFile,
    files,
    reading: Reading,
    *,
    format: str,
    origin: str,
    signal: str,
    kind: str,
    scope: str = "",
    fallback: str = "",
) -> None:
    paths = {f.path for f in files}
    here = posixpath.dirname(source.path)
    linked = {posixpath.normpath(posixpath.join(here, target)) for target in _link_targets(source.text)}
    siblings = {target for target in linked if target in paths}
    siblings |= {posixpath.relpath(target, here) if here else target for target in siblings}
    fallback = fallback or _title_of(source.path)
    for block in blocks(source.text, links_to_skip=frozenset(siblings)):
        reading.lessons.append(
            ImportedLesson(
                format=format,
                file=source.path,
                line=block.line,
                record_id="",
                origin=origin,
                trigger=_trigger(block, fallback),
                content=block.text,
                kind=Kind.PROCEDURE if block.numbered and len(block.lines) > 1 else kind,
                signal=signal,
                scope=scope,
                observed_at=_iso(source.modified_at),
            )
        )


def _link_targets(text: str) -> list[str]:
    return [m.group(1).split("#")[0] for m in re.finditer(r"\]\(([^)\s]+)\)", text)]


def _title_of(path: str) -> str:
    """A file's name as a trigger when its lessons have no heading: `deploy-notes.md` -> "Deploy notes";
    an instruction file (CLAUDE.md, AGENTS.md, MEMORY.md) holds what applies to the whole project."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem.upper() in ("CLAUDE", "CLAUDE.LOCAL", "AGENTS", "AGENTS.OVERRIDE", "MEMORY", "README", "INDEX"):
        return DEFAULT_TRIGGER
    words = re.sub(r"[-_]+", " ", stem).strip()
    return words[:1].upper() + words[1:] if words else DEFAULT_TRIGGER


def _read_markdown(source: SourceFile, files, reading: Reading) -> None:
    if not source.path.lower().endswith((".md", ".markdown", ".txt")):
        reading.ignored.append(source.path)
        return
    _markdown_lessons(
        source, files, reading, format="markdown", origin="Markdown notes", signal=Signal.EXTERNAL, kind=Kind.PREFERENCE
    )


# Claude Code (docs.anthropic.com/en/docs/claude-code/memory): CLAUDE.md files people write (project
# ./CLAUDE.md or ./.claude/CLAUDE.md, CLAUDE.local.md, user ~/.claude/CLAUDE.md, .claude/rules/*.md, and
# CLAUDE.md in subfolders, read when working there), and the auto memory Claude keeps itself
# (~/.claude/projects/<project>/memory/: MEMORY.md, an index whose first 200 lines are loaded, and topic files).
_CLAUDE_INSTRUCTIONS = re.compile(r"(^|/)(CLAUDE\.md|CLAUDE\.local\.md)$|(^|/)\.claude/rules/[^/]+\.md$", re.I)
_AUTO_MEMORY = re.compile(r"(^|/)memory/[^/]+\.md$|(^|/)MEMORY\.md$", re.I)
_SKILL_FILE = re.compile(r"(^|/)skills/[^/]+/SKILL\.md$", re.I)
# This console's own export (memory_export.py): its MEMORY.md index and its topic files.
_EXPORT_INDEX = re.compile(r"^# Memory \(version \d+\)$", re.M)
_EXPORT_LESSON = re.compile(r"^## #(\d+) (.+)$", re.M)


def _read_claude_code(source: SourceFile, files, reading: Reading) -> None:
    if _SKILL_FILE.search(source.path):
        # .claude/skills/<name>/SKILL.md, or skills/<name>/SKILL.md of this console's export.
        _skill_lesson(
            source,
            reading,
            format="claude-code",
            origin="Claude Code skill (written by people)",
            signal=Signal.EXTERNAL,
            claude_code=True,
        )
    elif _EXPORT_INDEX.search(source.text):
        return  # this console's own index: its topic files hold the lessons
    elif _EXPORT_LESSON.search(source.text) and "\n- Do: " in source.text:
        _read_console_topic(source, reading)
    elif _CLAUDE_INSTRUCTIONS.search(source.path):
        _markdown_lessons(
            source,
            files,
            reading,
            format="claude-code",
            origin="Claude Code CLAUDE.md (written by people)",
            signal=Signal.EXTERNAL,
            kind=Kind.PREFERENCE,
            scope=folder_scope(re.sub(r"(^|/)\.claude/rules(/|$)", r"\1", source.path)),
        )
    elif _AUTO_MEMORY.search(source.path) or source.path.lower().startswith("topics/"):
        _markdown_lessons(
            source,
            files,
            reading,
            format="claude-code",
            origin="Claude Code auto memory (written by the agent)",
            signal=Signal.SELF,
            kind=Kind.FACT,
        )
    else:
        reading.ignored.append(source.path)


_TRUST_LINE = re.compile(r"^- Trust: (?P<trust>[^()]+?) \(confidence [0-9.]+, (?P<kind>[a-z ]+)\)$")
_SCOPE_LINE = re.compile(r"^- Scope: `(?P<scope>[^`]+)` · entry #(?P<id>\d+)$")
# The labelled lines of an exported lesson (memory_export.topic_file) besides its trust, scope and boundary.
_EXPORT_FIELDS = ("Do", "Only if", "Provenance")
# What the export's trust words allow one to say of the signal: never more than the file shows.
_TRUST_SIGNAL = {"agreed with people": Signal.EXTERNAL, "validated": Signal.INDEPENDENT}


def _read_console_topic(source: SourceFile, reading: Reading) -> None:
    """A topic file this console exported (memory_export.topic_file): every field read back as written."""
    lines = source.text.split("\n")
    starts = [i for i, line in enumerate(lines) if _EXPORT_LESSON.match(line)]
    for n, start in enumerate(starts):
        head = _EXPORT_LESSON.match(lines[start])
        fields, trust, kind, scope, boundary = {}, "", "", "", ""
        for line in lines[start + 1 : starts[n + 1] if n + 1 < len(starts) else len(lines)]:
            if match := _TRUST_LINE.match(line):
                trust, kind = match.group("trust"), match.group("kind").replace(" ", "_")
            elif match := _SCOPE_LINE.match(line):
                scope = match.group("scope")
            elif line.startswith("- "):
                label, colon, value = line[2:].partition(": ")
                if colon and label in _EXPORT_FIELDS:
                    fields[label] = value
                elif colon and label == "Does not hold":
                    boundary = value
                else:  # the boundary said as a clause of its own (context_block.boundary_clause): "Not for hotfixes"
                    boundary = line[2:]
        if not fields.get("Do") or kind not in Kind.values or not scope:
            reading.unreadable.append(Unreadable(source.path, start + 1, "an exported lesson without its fields"))
            continue
        reading.lessons.append(
            ImportedLesson(
                format="claude-code",
                file=source.path,
                line=start + 1,
                record_id="",
                origin="this console's export",
                trigger=head.group(2),
                content=fields["Do"],
                kind=kind,
                signal=_TRUST_SIGNAL.get(trust, Signal.SELF),
                scope=scope,
                conditions=tuple(c for c in fields.get("Only if", "").split("; ") if c),
                boundary="" if boundary == "not stated" else boundary,
                observed_at=_iso(source.modified_at),
                tool_ids=(("entry", head.group(1)),),
                exported_entry_id=int(head.group(1)),
            )
        )


# Codex (github.com/openai/codex, docs/agents_md.md and the agents.md convention): AGENTS.md files people
# write, at the repository's root and in subfolders (the nearest one applies), AGENTS.override.md, and the
# global ~/.codex/AGENTS.md; notes Codex keeps itself under a `memories/` folder are the agent's own.
_AGENTS_FILE = re.compile(r"(^|/)AGENTS(\.override)?\.md$", re.I)
_CODEX_MEMORY = re.compile(r"(^|/)memories/[^/]+\.md$", re.I)


def _read_codex(source: SourceFile, files, reading: Reading) -> None:
    if _AGENTS_FILE.search(source.path):
        _markdown_lessons(
            source,
            files,
            reading,
            format="codex",
            origin="Codex AGENTS.md (written by people)",
            signal=Signal.EXTERNAL,
            kind=Kind.PREFERENCE,
            scope=folder_scope(source.path),
        )
    elif _CODEX_MEMORY.search(source.path):
        _markdown_lessons(
            source,
            files,
            reading,
            format="codex",
            origin="Codex memories (written by the agent)",
            signal=Signal.SELF,
            kind=Kind.FACT,
        )
    else:
        reading.ignored.append(source.path)


# --- Skills: Agent Skills folders, and the skills of Claude Code and Letta ------------------------------------


def _skill_lesson(
    source: SourceFile, reading: Reading, *, format: str, origin: str, signal: str, claude_code: bool = False
) -> None:
    """A SKILL.md as one procedure lesson (what the ingest checks) carrying its draft (what becomes a skill
    proposal for a lead); a file that is not an Agent Skill is refused with what is wrong."""
    try:
        draft = read_skill_md(source.path, source.text, claude_code=claude_code)
    except NotConforming as exc:
        reading.unreadable.append(Unreadable(source.path, 1, f"not an Agent Skill: {exc}"))
        return
    if draft.exported_entries:
        origin = "this console's export"
    trigger = draft.description
    reading.lessons.append(
        ImportedLesson(
            format=format,
            file=source.path,
            line=1,
            record_id="",
            origin=origin,
            trigger=trigger if len(trigger) <= TRIGGER_LIMIT else trigger[: TRIGGER_LIMIT - 1].rstrip() + "…",
            content=draft.lesson_content(),
            kind=Kind.PROCEDURE,
            signal=signal,
            observed_at=_iso(source.modified_at),
            tool_ids=(("skill", draft.slug), *draft.extras),
            skill=draft,
        )
    )


# Agent Skills (agentskills.io/specification, 2025-12): a folder of skills, each `<name>/SKILL.md` with YAML front
# matter (name, description; license, compatibility, metadata, allowed-tools) and Markdown instructions; the
# scripts/, references/ and assets/ beside it are not lessons.
def _read_skills(source: SourceFile, files, reading: Reading) -> None:
    if posixpath.basename(source.path) == "SKILL.md" and "/" in source.path:
        _skill_lesson(
            source, reading, format="skills", origin="Agent Skills folder (written by people)", signal=Signal.EXTERNAL
        )
    else:
        reading.ignored.append(source.path)


# Letta MemFS (docs.letta.com/letta-code/memfs, Letta Code 0.15+): the agent's memory as a git repository of
# Markdown files with a `description` in their front matter. `system/` holds the blocks loaded on every turn
# (persona, human, project facts), other folders what it opens when relevant, `skills/<name>/SKILL.md` its
# skills. The agent writes and commits all of it itself.
_LETTA_SYSTEM = re.compile(r"(^|/)system/.+\.md$", re.I)


def _read_letta(source: SourceFile, files, reading: Reading) -> None:
    if _SKILL_FILE.search(source.path):
        # A Letta agent writes its skills into its memory repository itself.
        _skill_lesson(source, reading, format="letta", origin="Letta skill (written by the agent)", signal=Signal.SELF)
        return
    if not source.path.lower().endswith(".md") or "/.git/" in f"/{source.path}":
        reading.ignored.append(source.path)
        return
    system = bool(_LETTA_SYSTEM.search(source.path))
    _markdown_lessons(
        source,
        files,
        reading,
        format="letta",
        origin="Letta MemFS " + ("system block" if system else "memory file") + " (written by the agent)",
        signal=Signal.SELF,
        kind=Kind.FACT,
        fallback=_description_of(source.text),
    )


def _description_of(text: str) -> str:
    """A memory file's front matter `description`, as the trigger of its lessons without a heading."""
    _, cut = strip_front_matter(text)
    if not cut:
        return ""
    try:
        fields = front_matter(text.split("\n")[1 : cut - 1])
    except NotConforming:
        return ""
    description = fields.get("description")
    return " ".join(description.split())[:TRIGGER_LIMIT] if isinstance(description, str) else ""


# --- Records: JSON Lines and Mem0 --------------------------------------------------------------------------

_TEXT_KEYS = ("content", "text", "memory", "lesson")
_TRIGGER_KEYS = ("trigger", "when", "title")
_TIME_KEYS = ("created_at", "timestamp", "observed_at", "updated_at")
_MEM0_IDS = ("user_id", "agent_id", "run_id", "app_id", "actor_id", "hash")


def _first(record: dict, keys) -> str:
    for key in keys:
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _record_lesson(record: dict, *, format: str, origin: str, file: str, line: int | None) -> ImportedLesson | str:
    """A lesson from one JSON record, or why there is none."""
    if not isinstance(record, dict):
        return "not a JSON object"
    metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    content = _first(record, _TEXT_KEYS)
    if not content:
        return f"no text (one of: {', '.join(_TEXT_KEYS)})"
    categories = [c for c in record.get("categories") or [] if isinstance(c, str)]
    trigger = _first(record, _TRIGGER_KEYS) or _first(metadata, _TRIGGER_KEYS)
    if not trigger and categories:
        trigger = ", ".join(c.replace("_", " ") for c in categories)
        trigger = trigger[:1].upper() + trigger[1:]
    kind = record.get("kind") or metadata.get("kind")
    if kind not in Kind.values:
        kind = Kind.PREFERENCE if any("preference" in c for c in categories) else Kind.FACT
    record_id = record.get("id")
    scope = record.get("scope") if isinstance(record.get("scope"), str) else ""
    conditions = record.get("conditions") if isinstance(record.get("conditions"), list) else []
    return ImportedLesson(
        format=format,
        file=file,
        line=line,
        record_id=str(record_id) if isinstance(record_id, (str, int)) and str(record_id) else "",
        origin=origin,
        trigger=(trigger or DEFAULT_TRIGGER)[:TRIGGER_LIMIT],
        content=content,
        kind=kind,
        signal=Signal.SELF,
        scope=scope,
        conditions=tuple(c for c in conditions if isinstance(c, str)),
        boundary=record.get("boundary") if isinstance(record.get("boundary"), str) else "",
        observed_at=_first(record, _TIME_KEYS),
        tool_ids=tuple((key, str(record[key])) for key in _MEM0_IDS if isinstance(record.get(key), (str, int))),
    )


def _json_lines(source: SourceFile, reading: Reading, *, format: str, origin: str) -> None:
    for number, line in enumerate(source.text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            reading.unreadable.append(Unreadable(source.path, number, "not JSON"))
            continue
        lesson = _record_lesson(record, format=format, origin=origin, file=source.path, line=number)
        if isinstance(lesson, str):
            reading.unreadable.append(Unreadable(source.path, number, lesson))
        else:
            reading.lessons.append(lesson)


def _read_jsonl(source: SourceFile, files, reading: Reading) -> None:
    if not source.path.lower().endswith((".jsonl", ".ndjson")):
        reading.ignored.append(source.path)
        return
    _json_lines(source, reading, format="jsonl", origin="JSON Lines (written by an agent)")


# Mem0 (docs.mem0.ai, "Get all memories" of the platform and of the open-source Memory, v1.1 output):
# a list of memories, or {"results": [...]} (also "memories"), each {"id", "memory", "hash", "metadata",
# "categories", "created_at", "updated_at", "user_id", "agent_id", "run_id"}; JSONL of the same records too.
def _read_mem0(source: SourceFile, files, reading: Reading) -> None:
    origin = "Mem0 (memories extracted by an LLM)"
    if source.path.lower().endswith((".jsonl", ".ndjson")):
        _json_lines(source, reading, format="mem0", origin=origin)
        return
    if not source.path.lower().endswith(".json"):
        reading.ignored.append(source.path)
        return
    try:
        data = json.loads(source.text)
    except ValueError as exc:
        reading.unreadable.append(Unreadable(source.path, None, f"not JSON ({exc.msg}, line {exc.lineno})"))
        return
    records = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(records, list):
        reading.unreadable.append(Unreadable(source.path, None, 'not a list of memories, nor {"results": [...]}'))
        return
    for index, record in enumerate(records):
        lesson = _record_lesson(record, format="mem0", origin=origin, file=source.path, line=None)
        if isinstance(lesson, str):
            reading.unreadable.append(Unreadable(source.path, None, f"memory {index}: {lesson}"))
        elif not lesson.record_id:
            reading.unreadable.append(Unreadable(source.path, None, f"memory {index}: no id"))
        else:
            reading.lessons.append(lesson)


_ADAPTERS = {
    "claude-code": _read_claude_code,
    "codex": _read_codex,
    "letta": _read_letta,
    "skills": _read_skills,
    "markdown": _read_markdown,
    "jsonl": _read_jsonl,
    "mem0": _read_mem0,
}


def same_lesson_as_exported(lesson: ImportedLesson, *, trigger: str, content: str) -> bool:
    """Is an exported lesson read back the entry it was exported from (its trigger as the export words it,
    its content on one line)?"""
    return one_line(lesson.trigger) == one_line(situation(trigger)) and one_line(lesson.content) == one_line(content)
