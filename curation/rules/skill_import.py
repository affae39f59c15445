"""A SKILL.md read back as a skill draft, its front matter checked against the Agent Skills format
(agentskills.io/specification) that `skill_format.render_skill_md` writes: `name` (1-64 lowercase letters,
digits and single hyphens, the name of its folder) and `description` (1-1024 characters) required; `license`,
`compatibility` (at most 500 characters), `metadata` (a map of texts) and `allowed-tools` (a space-separated
text) optional; nothing else. Claude Code reads a few more keys of its own (code.claude.com/docs/en/skills)
and makes `name` default to the folder's name: a Claude Code skill may have them.

The front matter is read by a small YAML reader that knows what SKILL.md files hold (plain, quoted and
block scalars, one level of map or list); anything else is refused in words, never guessed at.
Pure functions of a file's path and text."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from curation.rules.skill_format import BODY_SECTIONS, SKILL_DESCRIPTION_MAX, SKILL_SLUG_MAX, content_sections

COMPATIBILITY_MAX = 500
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
CLAUDE_CODE_KEYS = (
    "argument-hint",
    "disable-model-invocation",
    "user-invocable",
    "model",
    "context",
    "agent",
)
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_KEY_LINE = re.compile(r"^(?P<key>[A-Za-z0-9_-]+):(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_ITEM_LINE = re.compile(r"^[ \t]+-[ \t]+(?P<value>.*?)[ \t]*$")
_NESTED_LINE = re.compile(r"^[ \t]+(?P<key>[A-Za-z0-9_.-]+):(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0", " ": " "}
# The export's list of the entries a skill was curated from: "- memoryadmin entry #12 (`acme`): ..." or a link.
_SOURCE_LINE = re.compile(r"^- memoryadmin \[?entry #(\d+)\b", re.M)


class NotConforming(ValueError):
    """What makes a SKILL.md not an Agent Skill, in words."""


@dataclass(frozen=True)
class SkillDraft:
    """A SKILL.md as the draft of a skill proposal (the fields of SkillProposal's draft)."""

    slug: str
    description: str
    when_to_use: str
    steps: str
    parameters: str = ""
    verification: str = ""
    rollback: str = ""
    pitfalls: str = ""
    extras: tuple[tuple[str, str], ...] = ()  # the optional front matter: license, compatibility, ...
    exported_entries: tuple[int, ...] = ()  # the entries this console's export says it was curated from

    def texts(self) -> dict[str, str]:
        return {key: getattr(self, key) for key in ("description", *(k for _, k in BODY_SECTIONS))}

    def lesson_content(self) -> str:
        """The skill as one procedure lesson (what the ingest checks): its steps with the labelled parts
        `skill_format.content_sections` reads back."""
        parts = [self.steps.strip()]
        for label, text in (
            ("Parameters", self.parameters),
            ("Verify", self.verification),
            ("Rollback", self.rollback),
            ("Pitfalls", self.pitfalls),
        ):
            if text.strip():
                parts.append(f"{label}: {text.strip()}")
        return "\n".join(p for p in parts if p)


def skill_folder(path: str) -> str:
    return posixpath.basename(posixpath.dirname(path))


def read_skill_md(path: str, text: str, *, claude_code: bool = False) -> SkillDraft:
    """The draft of the skill at `path` (`.../<name>/SKILL.md`); NotConforming says what is wrong."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise NotConforming("no front matter: SKILL.md starts with '---', then name and description")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise NotConforming("the front matter is not closed by a '---' line")
    fields = front_matter(lines[1:end])
    allowed = SPEC_KEYS + (CLAUDE_CODE_KEYS if claude_code else ())
    unknown = [key for key in fields if key not in allowed]
    if unknown:
        raise NotConforming(f"front matter key {unknown[0]!r} is not in the Agent Skills format ({', '.join(allowed)})")
    folder = skill_folder(path)
    name = fields.get("name", folder if claude_code else None)
    _check_name(name, folder)
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise NotConforming("no description: say what the skill does and when to use it")
    description = " ".join(description.split())
    if len(description) > SKILL_DESCRIPTION_MAX:
        raise NotConforming(f"the description has {len(description)} characters; at most {SKILL_DESCRIPTION_MAX}")
    extras = _extras(fields, claude_code=claude_code)
    sections, sources = _body_sections("\n".join(lines[end + 1 :]))
    return SkillDraft(slug=name, description=description, extras=extras, exported_entries=sources, **sections)


def _check_name(name, folder: str) -> None:
    if not isinstance(name, str) or not name:
        raise NotConforming("no name: the skill's name is its folder's name, e.g. name: " + (folder or "my-skill"))
    if len(name) > SKILL_SLUG_MAX or not _NAME.match(name):
        raise NotConforming(
            f"name {name!r}: at most {SKILL_SLUG_MAX} lowercase letters a-z, digits and single hyphens between them"
        )
    if name != folder:
        raise NotConforming(f"name {name!r} is not the name of its folder {folder!r}")


def _extras(fields: dict, *, claude_code: bool) -> tuple[tuple[str, str], ...]:
    extras = []
    for key in ("license", "compatibility", "allowed-tools", *CLAUDE_CODE_KEYS):
        if key not in fields:
            continue
        value = fields[key]
        if key == "allowed-tools" and isinstance(value, list) and claude_code:
            value = " ".join(value)  # Claude Code also takes a YAML list of tools
        if not isinstance(value, str):
            raise NotConforming(f"{key} is a text, not a {'list' if isinstance(value, list) else 'map'}")
        if key == "compatibility" and len(value) > COMPATIBILITY_MAX:
            raise NotConforming(f"compatibility has {len(value)} characters; at most {COMPATIBILITY_MAX}")
        extras.append((key, value))
    metadata = fields.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise NotConforming("metadata is a map of names to texts")
        extras += [(f"metadata.{key}", value) for key, value in metadata.items()]
    return tuple(extras)


def _body_sections(body: str) -> tuple[dict, tuple[int, ...]]:
    """The draft's sections: the export's `##` sections by their headings (`None.` is empty); any other text,
    headings and all, is the steps, whose labelled parts (Rollback:, Verify:, ...) fill what is still empty."""
    titles = {title.lower(): key for title, key in BODY_SECTIONS}
    found: dict[str, list[str]] = {key: [] for _, key in BODY_SECTIONS}
    sources: tuple[int, ...] = ()
    current = "steps"
    for line in body.split("\n"):
        heading = re.match(r"^##[ \t]+(.+?)[ \t]*$", line)
        if heading and heading.group(1).lower() in titles:
            current = titles[heading.group(1).lower()]
            continue
        if heading and heading.group(1).lower() == "sources":
            current = "sources"
            continue
        if current == "steps" and re.match(r"^#[ \t]+\S", line) and not any(found["steps"]):
            continue  # the title: the skill's name again
        found.setdefault(current, []).append(line)
    if found.get("sources"):
        sources = tuple(int(n) for n in _SOURCE_LINE.findall("\n".join(found.pop("sources"))))
    sections = {key: "\n".join(lines).strip() for key, lines in found.items() if key != "sources"}
    sections = {key: "" if value == "None." else value for key, value in sections.items()}
    labelled = content_sections(sections["steps"])
    if any(labelled[key] for key in ("rollback", "verification", "parameters", "pitfalls")):
        sections["steps"] = labelled["steps"]
        for key in ("rollback", "verification", "parameters", "pitfalls"):
            if labelled[key]:
                sections[key] = "\n".join(p for p in (sections[key], labelled[key]) if p)
    if not sections["steps"]:
        raise NotConforming("no instructions below the front matter: a skill needs its steps")
    return sections, sources


# --- the front matter ---------------------------------------------------------------------------------------


def front_matter(lines: list[str]) -> dict:
    """The front matter's keys: a text, a list of texts or a map of texts. NotConforming for what this
    reader does not know (a deeper nesting, a flow collection, an anchor)."""
    fields: dict = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip() or line.lstrip().startswith("#"):
            index += 1
            continue
        match = _KEY_LINE.match(line)
        if not match:
            raise NotConforming(f"front matter line {index + 2} is not 'key: value': {line.strip()[:60]!r}")
        key, value = match.group("key"), match.group("value") or ""
        if key in fields:
            raise NotConforming(f"front matter key {key!r} is given twice")
        index += 1
        block = []
        while index < len(lines) and (not lines[index].strip() or lines[index][:1] in (" ", "\t")):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        fields[key] = _value(key, value, block)
    return fields


def _value(key: str, value: str, block: list[str]):
    if value in (">", ">-", "|", "|-", ">+", "|+"):
        indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
        body = [b[indent:] for b in block]
        if value.startswith("|"):
            return "\n".join(body).strip()
        return " ".join(" ".join(body).split())
    if value:
        if block:
            # A plain scalar may go on over indented lines.
            if value[:1] in "\"'":
                value = value + " " + " ".join(b.strip() for b in block)
            else:
                return " ".join([_scalar(key, value), *(b.strip() for b in block)])
        return _scalar(key, value)
    if not block:
        return ""
    items = [_ITEM_LINE.match(b) for b in block if b.strip()]
    if all(items):
        return [_scalar(key, m.group("value")) for m in items]
    pairs = [_NESTED_LINE.match(b) for b in block if b.strip()]
    if all(pairs):
        return {m.group("key"): _scalar(f"{key}.{m.group('key')}", m.group("value") or "") for m in pairs}
    raise NotConforming(f"{key}: a list or a map nested deeper than this reader knows")


def _scalar(key: str, value: str) -> str:
    value = value.strip()
    if value.startswith('"'):
        if len(value) < 2 or not value.endswith('"'):
            raise NotConforming(f"{key}: a double-quoted text that is not closed")
        return _unescape(key, value[1:-1])
    if value.startswith("'"):
        if len(value) < 2 or not value.endswith("'"):
            raise NotConforming(f"{key}: a single-quoted text that is not closed")
        return value[1:-1].replace("''", "'")
    if value[:1] in ("[", "{", "&", "*", "!"):
        raise NotConforming(f"{key}: a YAML flow collection, anchor or tag; write a plain text")
    return re.sub(r"[ \t]+#.*$", "", value)  # a trailing comment


def _unescape(key: str, text: str) -> str:
    out, index = [], 0
    while index < len(text):
        ch = text[index]
        if ch != "\\":
            out.append(ch)
            index += 1
            continue
        code = text[index + 1 : index + 2]
        widths = {"x": 2, "u": 4, "U": 8}
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            index += 2
        elif code in widths and re.fullmatch(
            rf"[0-9a-fA-F]{{{widths[code]}}}", text[index + 2 : index + 2 + widths[code]]
        ):
            out.append(chr(min(int(text[index + 2 : index + 2 + widths[code]], 16), 0x10FFFF)))
            index += 2 + widths[code]
        else:
            raise NotConforming(f"{key}: an unknown escape \\{code} in a double-quoted text")
    return "".join(out)
