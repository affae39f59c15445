"""The text block an agent puts in its prompt: retrieved entries, grouped so that what people agreed,
what evidence validated and what the agent only inferred are never confused, trimmed to a budget."""

from __future__ import annotations

SECTIONS = (
    ("agreed", "Agreed with people (follow these)"),
    ("validated", "Validated lessons (supported by external or independent evidence)"),
    ("inferred", "Unvalidated inferences (the agent's own reflection: verify before relying on them)"),
)


def section_of(kind: str, signal: str) -> str:
    if kind in ("human_correction", "preference"):
        return "agreed"
    return "inferred" if signal == "self" else "validated"


def entry_line(entry) -> str:
    line = f"- [#{entry.pk} {entry.scope} · confidence {entry.confidence:.2f}] When {entry.trigger.rstrip('.')}: {entry.content}"
    if entry.boundary:
        line += f" (Does not hold: {entry.boundary})"
    return " ".join(line.split())


def build_context(entries, budget_chars: int) -> tuple[list, str]:
    """The entries that fit and the block. Entries are taken in rank order; one that does not fit is
    left out (and not reported as retrieved) while a shorter one after it may still fit."""
    lines = {key: [] for key, _ in SECTIONS}
    included, used = [], 0
    for entry in entries:
        key = section_of(entry.kind, entry.signal)
        header = 0 if lines[key] else len(dict(SECTIONS)[key]) + 5  # "## " + title + blank line
        line = entry_line(entry)
        cost = header + len(line) + 1
        if used + cost > budget_chars:
            continue
        lines[key].append(line)
        included.append(entry)
        used += cost
    blocks = [f"## {title}\n" + "\n".join(lines[key]) for key, title in SECTIONS if lines[key]]
    return included, "\n\n".join(blocks)
