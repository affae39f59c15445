"""Rules of forgetting, as pure functions: when a lesson is the same as a forgotten one (its tombstone),
and how a forgotten text is purged from a stored value (a snapshot in an Event by its text keys, a quoting
row by the quoted text).

Same lesson: the exact fingerprint in an overlapping scope, or a near duplicate by the tombstone's signature
(the stems' Jaccard at FORGOTTEN_NEAR or more, or nearly all of the forgotten stems restated)."""

from __future__ import annotations

from dataclasses import dataclass

from curation.access import scopes_overlap
from curation.similarity import fingerprint, jaccard, signature

FORGOTTEN_NEAR = 0.5        # signature Jaccard at or above which a lesson is the forgotten one again
FORGOTTEN_CONTAINED = 0.8   # ... or the share of the forgotten stems it restates (at least CONTAINED_MIN stems)
CONTAINED_MIN = 3
PURGED_MIN_LENGTH = 8       # shorter texts (a keyword) are not searched for inside other texts
SNAPSHOT_TEXTS = ("trigger", "content", "boundary", "recheck_when")


@dataclass(frozen=True)
class Lesson:
    """What a tombstone is compared with: a lesson's scope, fingerprint and signature."""

    scope: str
    fingerprint: str
    signature: frozenset

    @classmethod
    def of(cls, scope: str, trigger: str, content: str) -> "Lesson":
        return cls(scope, fingerprint(trigger, content), frozenset(signature(f"{trigger} {content}")))


def same_lesson(lesson: Lesson, *, scope: str, fingerprint: str, signature) -> bool:
    """Is `lesson` the forgotten lesson of a tombstone (its scope, fingerprint and signature)?"""
    if not scopes_overlap(lesson.scope, scope):
        return False
    if fingerprint and fingerprint == lesson.fingerprint:
        return True
    forgotten = frozenset(signature)
    if jaccard(forgotten, lesson.signature) >= FORGOTTEN_NEAR:
        return True
    return len(forgotten) >= CONTAINED_MIN and len(forgotten & lesson.signature) / len(forgotten) >= FORGOTTEN_CONTAINED


def texts_to_purge(texts) -> list[str]:
    """The forgotten texts searched for inside other stored texts: distinct, longest first (a text that
    contains another is replaced whole), without the short ones."""
    kept = {t.strip() for t in texts if isinstance(t, str) and len(t.strip()) >= PURGED_MIN_LENGTH}
    return sorted(kept, key=lambda t: (-len(t), t))


def purge_text(value: str, texts: list[str], marker: str) -> str:
    for text in texts:
        if text in value:
            value = value.replace(text, marker)
    return value


def purge_value(value, texts: list[str], marker: str):
    """`value` (a string, or a JSON value of strings) with every quoted forgotten text replaced by the
    marker: for the rows the lead ticked as quoting the lesson, and the working rows made of it."""
    if isinstance(value, str):
        return purge_text(value, texts, marker)
    if isinstance(value, list):
        return [purge_value(v, texts, marker) for v in value]
    if isinstance(value, dict):
        return {k: purge_value(v, texts, marker) for k, v in value.items()}
    return value


# --- what the purge rewrites: the forgotten entries' own values whole, and nothing else by search ------------

# Keys of a stored JSON value (an Event's before/after) that hold a lesson's text. The purge replaces their
# values whole, in the values it names, and never searches the other keys (a scope, a slug, a status):
# - ENTRY_*: a forgotten entry's own snapshot (and a conflict's quoted directives, under "reason");
# - DERIVED_*: what was made of it, in Events about a conflict or a consolidation, which may sit on
#   another entry's history beside that entry's own snapshot (left as it is).
ENTRY_TEXT_KEYS = (*SNAPSHOT_TEXTS, "reason")
ENTRY_TEXT_LISTS = ("conditions",)
DERIVED_TEXT_KEYS = ("reason", "proposed_trigger", "proposed_content", "proposed_boundary")
DERIVED_TEXT_LISTS = ("proposed_conditions",)


def purge_keys(value, keys, lists, marker: str):
    """`value` with the text under each of `keys` (non-empty strings) replaced by the marker and each of
    `lists` emptied: at the top level of an object only, which is where the writers put them. The SQL
    function curation_forget_keys does the same."""
    if not isinstance(value, dict):
        return value
    value = dict(value)
    for key in keys:
        if isinstance(value.get(key), str) and value[key]:
            value[key] = marker
    for key in lists:
        if isinstance(value.get(key), list) and value[key]:
            value[key] = []
    return value


def purge_warnings(acknowledged: list, ids: set[int], marker: str) -> list:
    """A version's acknowledged pre-publish warnings with the text of those about a forgotten entry replaced."""
    return [{**w, "text": marker} if isinstance(w, dict) and w.get("entry") in ids and w.get("text") else w
            for w in acknowledged]


def quoted_texts(texts) -> list[str]:
    """The forgotten texts searched for inside rows that quote them (which a lead ticks): the lesson's
    sentences, not its keywords or conditions, distinct and longest first."""
    return texts_to_purge(texts)
