"""The export coding agents load at start-up, as pure functions from a version's rows to files: `MEMORY.md`,
an index within the limit agents load (INDEX_MAX_LINES lines, INDEX_MAX_BYTES bytes), one line per topic
file; one topic file per scope (per scope and kind where a scope is large), each lesson with its trigger,
what to do, when it does not hold, its trust level and its entry id. Nothing here reads a clock or a
database, so an unchanged version exports the same bytes."""

from __future__ import annotations

from dataclasses import dataclass

from curation.rules.context_block import boundary_clause, section_of, situation
from curation.rules.injection import withheld_text
from curation.rules import trust as provenance
from curation.rules.trust import Trust

INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 25 * 1024
INDEX_LINE_MAX = 110  # characters of one index line (its path and what the topic covers)
TOPIC_SPLIT_AT = 200  # a scope with more lessons than this gets one topic file per kind
_INDEX_HEADER_LINES = 8  # the lines of the index that are not topics
MAX_TOPICS = INDEX_MAX_LINES - _INDEX_HEADER_LINES - 2

TRUST = {"agreed": "agreed with people", "validated": "validated", "inferred": "unvalidated inference"}


@dataclass(frozen=True)
class Lesson:
    entry_id: int
    scope: str
    kind: str
    trigger: str
    content: str
    conditions: tuple
    boundary: str
    signal: str
    confidence: float
    withheld: bool = False  # in quarantine as a possible injection: its id only, never its text
    trust: int = Trust.AGENT  # provenance trust (rules/trust.py) of the released row


@dataclass
class Topic:
    path: str
    scope: str
    kind: str  # "" when the topic holds every kind of its scope
    lessons: list[Lesson]

    def title(self) -> str:
        return self.scope + (f" · {self.kind.replace('_', ' ')}" if self.kind else "")

    def index_line(self, limit: int = INDEX_LINE_MAX) -> str:
        """`- [scope](path): 5 lessons (fact, failure lesson)` within `limit` characters: kinds that do not
        fit are counted ("and 2 more kinds"), never cut in the middle; the link is never cut."""
        kinds = sorted({lesson.kind.replace("_", " ") for lesson in self.lessons})
        what = f"{len(self.lessons)} lesson{'s' if len(self.lessons) != 1 else ''}"
        scopes = len({lesson.scope for lesson in self.lessons})
        if scopes > 1:
            what += f" here and in {scopes - 1} scope{'s' if scopes > 2 else ''} below"
        head = f"- [{self.title()}]({self.path}): {what}"
        for shown in range(len(kinds), 0, -1):
            more = len(kinds) - shown
            listed = ", ".join(kinds[:shown]) + (f" and {more} more kind{'s' if more > 1 else ''}" if more else "")
            if len(line := f"{head} ({listed})") <= limit:
                return line
        return head if len(head) <= limit else f"- [{self.title()}]({self.path})"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


_PHRASE_ENDS = (". ", "; ", ", ", ": ", " — ", " (")


def clip(line: str, limit: int = INDEX_LINE_MAX) -> str:
    """`line` within `limit` characters, with an ellipsis saying it was cut: at the end of a phrase when one
    ends in the last third of the room, else after a whole word (a line cut mid-word reads as another word),
    and never inside a parenthesis it leaves open."""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if not line[limit - 1].isspace():
        cut = cut[: cut.rindex(" ")] if " " in cut else cut
    phrase = max(cut.rfind(end) for end in _PHRASE_ENDS)
    if phrase >= (limit * 2) // 3:
        cut = cut[:phrase]
    if cut.count("(") > cut.count(")"):
        cut = cut[: cut.rindex("(")]
    return cut.rstrip(" ,;:—(") + "…"


def _group_depth(lessons: list[Lesson]) -> int | None:
    """The deepest scope depth at which the topics fit the index (None: every scope its own topic)."""
    deepest = max((lesson.scope.count("/") + 1 for lesson in lessons), default=1)
    for depth in [None, *range(deepest, 0, -1)]:
        if len(_topics(lessons, depth)) <= MAX_TOPICS:
            return depth
    return 1


def _topic_scope(scope: str, depth: int | None) -> str:
    return scope if depth is None else "/".join(scope.split("/")[:depth])


def _topics(lessons: list[Lesson], depth: int | None) -> list[Topic]:
    by_scope: dict[str, list[Lesson]] = {}
    for lesson in lessons:
        by_scope.setdefault(_topic_scope(lesson.scope, depth), []).append(lesson)
    topics = []
    for scope, members in sorted(by_scope.items()):
        members.sort(key=lambda lesson: (lesson.scope, lesson.entry_id))
        if len(members) > TOPIC_SPLIT_AT:
            kinds = sorted({lesson.kind for lesson in members})
            topics += [
                Topic(f"topics/{scope}.{kind}.md", scope, kind, [m for m in members if m.kind == kind])
                for kind in kinds
            ]
        else:
            topics.append(Topic(f"topics/{scope}.md", scope, "", members))
    return topics


def topic_file(topic: Topic, version_number: int) -> str:
    title = topic.scope + (f" · {topic.kind.replace('_', ' ')}" if topic.kind else "")
    lines = [
        f"# {title}",
        "",
        f"Curated lessons from memory version {version_number}. Trust: agreed with people > "
        "validated > unvalidated inference (verify an inference before relying on it). Provenance: where it "
        "came from, person > verified > independent > agent > untrusted (relayed content).",
        "",
    ]
    for lesson in topic.lessons:
        if lesson.withheld:
            lines += [f"## #{lesson.entry_id} {withheld_text(lesson.entry_id)}", ""]
            continue
        trust = TRUST[section_of(lesson.kind, lesson.signal)]
        lines += [f"## #{lesson.entry_id} {situation(lesson.trigger)}", "", f"- Do: {_one_line(lesson.content)}"]
        if lesson.conditions:
            lines.append(f"- Only if: {'; '.join(_one_line(c) for c in lesson.conditions)}")
        lines += [
            f"- {boundary_clause(lesson.boundary) or 'Does not hold: not stated'}",
            f"- Trust: {trust} (confidence {lesson.confidence:.2f}, {lesson.kind.replace('_', ' ')})",
            f"- Provenance: {provenance.name(lesson.trust)}",
            f"- Scope: `{lesson.scope}` · entry #{lesson.entry_id}",
            "",
        ]
    return "\n".join(lines)


def memory_index(topics: list[Topic], skills: list[tuple[str, str]], version_number: int, summary: str) -> str:
    """MEMORY.md: a few header lines, one line per topic file, one line for the skills."""
    lines = [
        f"# Memory (version {version_number})",
        "",
        clip(f"Curated and reviewed lessons, published as version {version_number}: {_one_line(summary)}"),
        "Open the topic file of the scope you work in; each lesson says when it applies, what to do, when it",
        "does not hold, and how far to trust it.",
        "",
    ]
    for topic in topics:
        lines.append(topic.index_line())
    if skills:
        lines += [
            "",
            f"Skills ({len(skills)}): skills/<name>/SKILL.md, e.g. " + ", ".join(slug for slug, _ in skills[:3]),
        ]
    return "\n".join(lines) + "\n"


def export_files(
    lessons: list[Lesson], skills: list[tuple[str, str]], *, version_number: int, summary: str
) -> dict[str, str]:
    """Every file of the export, by path: the index, the topic files and `skills/<slug>/SKILL.md`."""
    topics = _topics(lessons, _group_depth(lessons))
    files = {"MEMORY.md": memory_index(topics, skills, version_number, summary)}
    files.update({topic.path: topic_file(topic, version_number) for topic in topics})
    files.update({f"skills/{slug}/SKILL.md": text for slug, text in skills})
    return files
