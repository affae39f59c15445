"""The text block an agent puts in its prompt: retrieved entries, grouped so that what people agreed,
what evidence validated and what the agent only inferred are never confused, each marked with its provenance
trust level, trimmed to a budget."""

from __future__ import annotations

import re

from curation.rules import trust
from curation.rules.injection import withheld_text

SECTIONS = (
    ("agreed", "Agreed with people (follow these)"),
    ("validated", "Validated lessons (supported by external or independent evidence)"),
    ("inferred", "Unvalidated inferences (the agent's own reflection: verify before relying on them)"),
)


def section_of(kind: str, signal: str) -> str:
    if kind in ("human_correction", "preference"):
        return "agreed"
    return "inferred" if signal == "self" else "validated"


# A trigger that is already a clause of time or condition reads as it is; one that is a phrase ("Rotating
# the keys", "The cache is cold") follows "When", its first word lower-cased when it is one that begins a
# sentence only because it begins the trigger (a name or an acronym, "Dana", "AWS", keeps its capital).
_CLAUSE_STARTS = frozenset("when whenever if after before during while once until".split())
_SENTENCE_WORDS = frozenset("a an the any every each some on in at for to with".split())


def situation(trigger: str) -> str:
    """A trigger as the situation a lesson's line starts with: "Rotating the keys" reads "When rotating the
    keys"; "When deploying", "After a failed migration" read as they are."""
    words = " ".join(trigger.split()).rstrip(".")
    first, _, rest = words.partition(" ")
    lowered = first.lower()
    if lowered in _CLAUSE_STARTS:
        return words[:1].upper() + words[1:]
    if first[1:] == lowered[1:] and (lowered.endswith("ing") or lowered in _SENTENCE_WORDS):
        first = lowered
    return f"When {first}{' ' + rest if rest else ''}"


# A boundary that already says it is one ("Does not apply to read-only calls", "Not for hotfix branches") is
# shown as written; any other is labelled, so that no line reads "Does not hold: Not for hotfix branches".
_SAYS_BOUNDARY = re.compile(
    r"^(?:does\s+not|doesn['’]t|do\s+not|don['’]t|not|never|no\s+longer|except|unless|only|but\s+not)\b", re.I
)


def boundary_clause(boundary: str) -> str:
    """When a lesson does not hold, said once: "Not for hotfix branches." or "Does not hold: on Fridays."."""
    text = " ".join((boundary or "").split())
    if not text:
        return ""
    if _SAYS_BOUNDARY.match(text):
        return text[:1].upper() + text[1:]
    return f"Does not hold: {text}"


def entry_line(entry, at=None) -> str:
    """`entry`'s line, with its confidence at `at` (now when not given)."""
    if getattr(entry, "quarantined", False):  # a possible injection: its id, never its text
        return f"- [#{entry.pk} {entry.scope}] {withheld_text(entry.pk)}"
    confidence = entry.confidence if at is None else entry.confidence_at(at)
    # The provenance trust level rides with each lesson: an agent can weigh "untrusted" apart from "person".
    line = (
        f"- [#{entry.pk} {entry.scope} · confidence {confidence:.2f} · trust {trust.name(entry.trust)}] "
        f"{situation(entry.trigger)}: {entry.content}"
    )
    if entry.boundary:
        line += f" ({boundary_clause(entry.boundary)})"
    return " ".join(line.split())


def build_context(entries, budget_chars: int, at=None) -> tuple[list, str]:
    """The entries that fit and the block, each entry's confidence at `at` (now when not given). Entries are
    taken in rank order; one that does not fit is left out (and not reported as retrieved) while a shorter
    one after it may still fit."""
    lines = {key: [] for key, _ in SECTIONS}
    included, used = [], 0
    for entry in entries:
        key = section_of(entry.kind, entry.signal)
        header = 0 if lines[key] else len(dict(SECTIONS)[key]) + 5  # "## " + title + blank line
        line = entry_line(entry, at)
        cost = header + len(line) + 1
        if used + cost > budget_chars:
            continue
        lines[key].append(line)
        included.append(entry)
        used += cost
    blocks = [f"## {title}\n" + "\n".join(lines[key]) for key, title in SECTIONS if lines[key]]
    return included, "\n\n".join(blocks)
