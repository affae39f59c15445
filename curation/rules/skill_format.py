"""Skill text as pure functions: the labelled sections of an entry's content (its rollback note among
them), the draft a nomination starts from, slugs, and SKILL.md, the file coding agents load
(`<skills dir>/<slug>/SKILL.md`: YAML front matter with name and description, then Markdown).

No database here: the nomination sweep, the services, the console download and `export_skills` share it."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from curation.rules.context_block import boundary_clause, situation
from curation.rules.forgetting import purge_keys

# The Agent Skills format's lengths; models.SkillProposal's columns take them from here (rules sit below the
# models, so this module imports none).
SKILL_SLUG_MAX = 64
SKILL_DESCRIPTION_MAX = 1024

# A section of an entry's content starts with one of these labels, at the start of a line ("Rollback: ...",
# "- Verify: ...", "**Pitfalls:**", "## Rollback") or after the end of a sentence ("... restart it. Rollback:
# restore the old file."). It runs until the next label. The unlabelled rest is the steps.
LABELS = {
    "rollback": ("rollback", "roll back", "roll-back", "to roll back", "undo", "to undo", "revert", "to revert"),
    "verification": ("verification", "verify", "to verify", "check", "checks"),
    "parameters": ("parameters", "params", "inputs"),
    "pitfalls": ("pitfalls", "pitfall", "caveats", "gotchas", "watch out"),
}
SECTIONS = ("steps", *LABELS)
_BY_LABEL = {label: section for section, labels in LABELS.items() for label in labels}
_ALTERNATIVES = "|".join(
    re.escape(label).replace(r"\ ", r"\s+").replace(r"\-", "-") for label in sorted(_BY_LABEL, key=len, reverse=True)
)
_LABEL = re.compile(
    rf"(?:^[ \t>*-]*|(?<=[.!?;])[ \t]+)\**(?P<inline>{_ALTERNATIVES})\**[ \t]*:\**[ \t]*"
    rf"|^[ \t]*\#{{1,6}}[ \t]*(?P<heading>{_ALTERNATIVES})[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")


def _section_of(label: str) -> str:
    return _BY_LABEL[re.sub(r"\s+", " ", label.lower())]


def content_sections(content: str) -> dict[str, str]:
    """{"steps", "rollback", "verification", "parameters", "pitfalls"} from an entry's content; each one
    "" when the content has no such part. A label used twice gathers both parts."""
    parts: dict[str, list[str]] = {name: [] for name in SECTIONS}
    current, start = "steps", 0
    for match in _LABEL.finditer(content or ""):
        parts[current].append(content[start : match.start()])
        current, start = _section_of(match.group("inline") or match.group("heading")), match.end()
    parts[current].append((content or "")[start:])
    return {name: "\n".join(p.strip() for p in chunks if p.strip()) for name, chunks in parts.items()}


def rollback_note(content: str) -> str:
    """The content's rollback note, "" when it has none: one of the promotion gates."""
    return content_sections(content)["rollback"]


def numbered_steps(text: str) -> str:
    """Steps as a Markdown numbered list: one step per line when the text has several lines (list markers
    dropped), else one per sentence."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if len(lines) < 2:
        lines = [s for s in _SENTENCE_END.split((text or "").strip()) if s.strip()]
    return "\n".join(f"{i}. {_LIST_MARKER.sub('', line).strip()}" for i, line in enumerate(lines, start=1))


def slug_base(text: str) -> str:
    """A name for the skill from its trigger: lowercase ASCII letters and digits joined by single hyphens,
    at most SKILL_SLUG_MAX characters, cut at a hyphen (the Agent Skills `name` rules)."""
    ascii_text = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(slug) > SKILL_SLUG_MAX:
        slug = slug[: SKILL_SLUG_MAX + 1].rsplit("-", 1)[0] if "-" in slug[:SKILL_SLUG_MAX] else slug[:SKILL_SLUG_MAX]
    return slug.strip("-") or "skill"


def unique_slug(base: str, taken) -> str:
    """`base`, or `base-2`, `base-3`... (shortened to fit), whichever is not taken."""
    if base not in taken:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = base[: SKILL_SLUG_MAX - len(suffix)].rstrip("-") + suffix
        if candidate not in taken:
            return candidate
        n += 1


def describe_skill(*, trigger: str, scope: str, steps: int, verification: str, rollback: str) -> str:
    """What the skill is for and when to use it, from its trigger and its shape (not its first step, which
    says neither): "How to go about resetting the test database: 3 steps, with a check and a rollback. Use
    it when resetting the test database (acme/billing-api)."."""
    when = situation(trigger)
    when = when[:1].lower() + when[1:]
    opener, _, rest = when.partition(" ")
    gerund = opener == "when" and rest.split(" ", 1)[0].endswith("ing")
    what = f"How to go about {rest}" if gerund else f"What to do {when}"
    extras = [x for x, present in (("a check", verification), ("a rollback", rollback)) if present]
    shape = f"{steps} step{'s' if steps != 1 else ''}" + (f", with {' and '.join(extras)}" if extras else "")
    return f"{what}: {shape}. Use it {when} ({scope})."


def draft_from_entry(*, kind: str, scope: str, trigger: str, content: str, boundary: str, conditions) -> dict:
    """The draft a nomination starts from: the name from the trigger, the steps from the content, the
    rollback, verification, parameters and pitfalls from its labelled parts (pitfalls also from the
    boundary), the description from the trigger and the steps' shape."""
    parts = content_sections(content)
    steps = numbered_steps(parts["steps"])
    description = describe_skill(
        trigger=trigger,
        scope=scope,
        steps=len(steps.splitlines()),
        verification=parts["verification"],
        rollback=parts["rollback"],
    )
    if len(description) > SKILL_DESCRIPTION_MAX:
        description = description[: SKILL_DESCRIPTION_MAX - 1].rstrip() + "…"
    when = [trigger.strip().rstrip(".") + "."]
    if conditions:
        when.append("Keywords: " + ", ".join(conditions) + ".")
    when.append(f"Applies in `{scope}` and the scopes below it.")
    pitfalls = [p for p in (parts["pitfalls"], boundary_clause(boundary)) if p]
    return {
        "slug": slug_base(trigger),
        "description": description,
        "when_to_use": "\n".join(when),
        "steps": steps,
        "parameters": parts["parameters"],
        "verification": parts["verification"],
        "rollback": parts["rollback"],
        "pitfalls": "\n".join(pitfalls),
    }


# --- SKILL.md -----------------------------------------------------------------------------------------

# What YAML allows unescaped inside a double-quoted scalar (its printable set, without the quote and the
# backslash); everything else is written as an escape, so any text survives a YAML parser.
_YAML_PRINTABLE = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_YAML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def yaml_quoted(text: str) -> str:
    """`text` as a YAML double-quoted scalar (also valid JSON for printable text)."""
    out = []
    for ch in text:
        if ch in _YAML_ESCAPES:
            out.append(_YAML_ESCAPES[ch])
        elif _YAML_PRINTABLE.fullmatch(ch):
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class SourceLine:
    entry_id: int
    scope: str
    trigger: str
    url: str = ""


BODY_SECTIONS = (
    ("When to use", "when_to_use"),
    ("Steps", "steps"),
    ("Parameters", "parameters"),
    ("Verification", "verification"),
    ("Rollback", "rollback"),
    ("Pitfalls", "pitfalls"),
)


def title_of(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


def render_skill_md(*, slug: str, description: str, sections: dict, sources, footer: str = "", trust: str = "") -> str:
    """SKILL.md: front matter (name, description) then one `##` section per part of the draft, "None." for an
    empty one so every skill reads the same way, the entries it was curated from and, when given, their
    lowest provenance trust (what a reader weighs the skill by)."""
    lines = [
        "---",
        f"name: {yaml_quoted(slug)}",
        f"description: {yaml_quoted(' '.join(description.split()))}",
        "---",
        "",
        f"# {title_of(slug)}",
        "",
    ]
    for heading, key in BODY_SECTIONS:
        body = (sections.get(key) or "").strip().replace("\r\n", "\n")
        lines += [f"## {heading}", "", body or "None.", ""]
    lines += ["## Sources", ""]
    for source in sources:
        name = f"[entry #{source.entry_id}]({source.url})" if source.url else f"entry #{source.entry_id}"
        lines.append(f"- memoryadmin {name} (`{source.scope}`): {' '.join(source.trigger.split())}")
    if trust:
        lines += ["", f"Provenance trust: {trust} (the lowest of its sources)."]
    if footer:
        lines += ["", footer]
    return "\n".join(lines).rstrip("\n") + "\n"


# --- withdrawal: a skill made of a forgotten entry ------------------------------------------------------------

DRAFT_TEXTS = ("description", "when_to_use", "steps", "parameters", "verification", "rollback", "pitfalls")
SLUG_KEYS = ("slug", "skill")  # where a skill's Events carry its name


def withdrawn_slug(proposal_id: int) -> str:
    """The name a withdrawn skill takes: its own was made from the forgotten trigger."""
    return f"withdrawn-skill-{proposal_id}"


def withdrawn_draft(draft: dict, *, texts, marker: str, made_of_it: bool) -> dict:
    """The draft text fields of a skill one of whose sources was forgotten. Every non-empty field becomes the
    marker when the draft was made of the forgotten entry (its nomination); otherwise a field that holds a
    forgotten text anywhere becomes the marker whole (the rest of it paraphrases the same lesson)."""
    pieces = quoted_pieces(texts)
    return {
        name: (marker if value and (made_of_it or any(p in value for p in pieces)) else value)
        for name, value in ((n, draft.get(n) or "") for n in DRAFT_TEXTS)
    }


QUOTED_MIN_LENGTH = 16  # a keyword or a stock phrase ("nothing to undo") is no quote of a lesson


def quoted_pieces(texts, *, min_length: int = QUOTED_MIN_LENGTH) -> list[str]:
    """What a draft quoting a forgotten text holds of it: the texts, their labelled sections, their lines
    and their sentences (list markers dropped); only pieces of several words and `min_length` characters."""
    pieces = set()
    for text in texts:
        parts = [text, *content_sections(text).values()]
        lines = [_LIST_MARKER.sub("", line).strip() for part in parts for line in part.splitlines()]
        pieces.update(parts + lines + [s.strip() for line in lines for s in _SENTENCE_END.split(line)])
    return sorted(
        {p.strip() for p in pieces if len(p.strip()) >= min_length and " " in p.strip()}, key=lambda p: (-len(p), p)
    )


def withdrawn_snapshot(value, *, marker: str, new_slug: str):
    """A withdrawn skill's Event snapshot (before or after): its draft texts become the marker, its names the
    new slug, the nomination's `draft` likewise. The SQL function curation_forget_skill does the same."""
    if not isinstance(value, dict):
        return value
    value = purge_keys(value, DRAFT_TEXTS, (), marker)
    value = purge_keys(value, SLUG_KEYS, (), new_slug)
    if isinstance(value.get("draft"), dict):
        value["draft"] = withdrawn_snapshot(value["draft"], marker=marker, new_slug=new_slug)
    return value


def replace_slugs(text: str, slugs, new_slug: str) -> str:
    """`text` with each old name of the skill, as a whole name (not inside a longer one), replaced."""
    for slug in sorted(set(slugs), key=len, reverse=True):
        if slug and slug != new_slug:
            text = re.sub(rf"(?<![a-z0-9-]){re.escape(slug)}(?![a-z0-9-])", new_slug, text)
    return text
