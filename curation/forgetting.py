"""Rules of forgetting, as pure functions: when a lesson is the same as a forgotten one (its tombstone),
and how a forgotten text is purged from a stored value (a snapshot in an Event, a reason, a query).

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


def purge_value(value, texts: list[str], marker: str, *, own_snapshot: bool = False):
    """`value` (a JSON value: an Event's before or after) with every forgotten text replaced by the marker.
    `own_snapshot`: it is a forgotten entry's own snapshot, whose text fields become the marker whatever
    they hold, and its keywords an empty list. The SQL function curation_forget_purge does the same."""
    if own_snapshot and isinstance(value, dict):
        value = dict(value)
        for key in SNAPSHOT_TEXTS:
            if isinstance(value.get(key), str) and value[key]:
                value[key] = marker
        if isinstance(value.get("conditions"), list) and value["conditions"]:
            value["conditions"] = []
    if isinstance(value, str):
        return purge_text(value, texts, marker)
    if isinstance(value, list):
        return [purge_value(v, texts, marker) for v in value]
    if isinstance(value, dict):
        return {k: purge_value(v, texts, marker) for k, v in value.items()}
    return value
