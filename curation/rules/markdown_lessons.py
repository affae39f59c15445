"""Markdown memory files (CLAUDE.md, AGENTS.md, notes) read as lessons, as a person reads them: a bullet is
one lesson under the heading it sits in; a numbered list is one procedure, its steps kept together; a section
of plain paragraphs is one lesson. Pure functions of a file's text: the importer (memory_import) decides
what the lessons of each file are worth.

Left out on purpose: front matter, HTML comments (Claude Code drops them too), `@path` import lines and
index lines that only link to another file of the same source (that file is read itself)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(.*)$")
_NUMBERED = re.compile(r"^([ \t]*)\d+[.)][ \t]+(.*)$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_IMPORT_LINE = re.compile(r"^@\S+$")  # CLAUDE.md's "@path/to/file": an import, not a lesson
_LINK_ONLY = re.compile(r"^\[[^\]]*\]\(([^)\s]+)\)[ \t]*(?:[-:—–].*)?$")


@dataclass
class Block:
    """One lesson as it stands in the file: the headings above it, its text and the line it starts on."""

    headings: tuple[str, ...]
    line: int
    lines: list[str] = field(default_factory=list)
    numbered: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


def strip_front_matter(text: str) -> tuple[str, int]:
    """The text without a leading YAML front matter block, and how many lines were cut."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for index in range(1, len(lines)):
            if lines[index].strip() in ("---", "..."):
                return "\n".join(lines[index + 1 :]), index + 1
    return text, 0


def _without_comments(lines: list[str]) -> list[str]:
    """HTML comments blanked (their lines kept, so line numbers stay those of the file)."""
    joined = "\n".join(lines)
    joined = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), joined, flags=re.DOTALL)
    return joined.split("\n")


def blocks(text: str, *, links_to_skip=frozenset()) -> list[Block]:
    """The lessons of a Markdown text, in order. `links_to_skip`: link targets whose index lines are left
    out (the files of the same source, read on their own)."""
    body, offset = strip_front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = _without_comments(body.split("\n"))
    found: list[Block] = []
    headings: list[tuple[int, str]] = []
    paragraph: Block | None = None  # the section's plain text so far
    item: Block | None = None  # the bullet being read (continuation lines join it)
    procedure: Block | None = None  # the section's numbered list
    in_fence = False

    def close_item():
        nonlocal item
        if item is not None and item.text:
            found.append(item)
        item = None

    def close_section():
        nonlocal paragraph, procedure
        close_item()
        for block in (paragraph, procedure):
            if block is not None and block.text:
                found.append(block)
        paragraph = procedure = None

    for number, raw in enumerate(lines, start=1 + offset):
        line = raw.rstrip()
        current = tuple(title for _, title in headings)
        if in_fence or _FENCE.match(line):
            if _FENCE.match(line):
                in_fence = not in_fence
            target = item or procedure or paragraph
            if target is None:
                target = paragraph = Block(current, number)
            target.lines.append(line)
            continue
        if heading := _HEADING.match(line):
            close_section()
            level = len(heading.group(1))
            headings = [(lvl, title) for lvl, title in headings if lvl < level] + [(level, heading.group(2).strip())]
            continue
        if not line.strip():
            if item is not None and item.lines and item.lines[-1] != "":
                item.lines.append("")
            continue
        numbered, bullet = _NUMBERED.match(line), _BULLET.match(line)
        indented = (numbered or bullet) and len((numbered or bullet).group(1).expandtabs(4)) >= 2
        if numbered and not indented and item is None:
            procedure = procedure or Block(current, number, numbered=True)
            procedure.lines.append(line.strip())
        elif (numbered or bullet) and not indented:
            close_item()
            text = bullet.group(2) if bullet else line.strip()
            if _skipped(text, links_to_skip):
                continue
            item = Block(current, number, [text], numbered=bool(numbered))
        elif item is not None and (raw[:1] in (" ", "\t") or numbered or bullet):
            item.lines.append(line.strip())  # a continuation or a sub-item: part of the bullet above
        elif procedure is not None and raw[:1] in (" ", "\t"):
            procedure.lines.append("   " + line.strip())
        else:
            close_item()
            if _skipped(line.strip(), links_to_skip):
                continue
            paragraph = paragraph or Block(current, number)
            paragraph.lines.append(line.strip())
    close_section()
    return sorted(found, key=lambda block: block.line)


def _skipped(text: str, links_to_skip) -> bool:
    if _IMPORT_LINE.match(text.strip()):
        return True
    link = _LINK_ONLY.match(text.strip())
    return bool(link and link.group(1).split("#")[0] in links_to_skip)


def one_line(text: str) -> str:
    return " ".join(str(text).split())
