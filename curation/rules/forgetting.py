"""Rules of forgetting, as pure functions: when a lesson is the same as a forgotten one (its tombstone),
and how a forgotten text is purged from a stored value (a snapshot in an Event by its text keys, a quoting
row by the quoted text).

Same lesson, in an overlapping scope, compared as `matching_text` reads both (invisible characters,
look-alike letters, accents, leetspeak, encodings undone): the exact fingerprint, or a near duplicate by the
tombstone's signature (the stems' Jaccard at FORGOTTEN_NEAR or more, or nearly all of the forgotten stems
restated), or any distinctive token of the forgotten text (an identifier, a long number, a made-up name)
appearing again.

A tombstone holds no word: its fingerprint, stems and tokens are hashes keyed with a key derived from the
install's secret (`tombstone_key`), so a copy of the database without that secret cannot be tested against
a word list. Its `key_id` says which key; "" is the fixed key of the tombstones written before keys per
install (`similarity.signature`), which are compared the old way on the readable text."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from functools import lru_cache

from curation.rules import matching_text
from curation.rules.access import scopes_overlap
from curation.rules.similarity import fingerprint as legacy_fingerprint
from curation.rules.similarity import jaccard
from curation.rules.similarity import signature as legacy_signature

FORGOTTEN_NEAR = 0.5  # signature Jaccard at or above which a lesson is the forgotten one again
FORGOTTEN_CONTAINED = 0.8  # ... or the share of the forgotten stems it restates (at least CONTAINED_MIN stems)
CONTAINED_MIN = 3
PURGED_MIN_LENGTH = 8  # shorter texts (a keyword) are not searched for inside other texts
SNAPSHOT_TEXTS = ("trigger", "content", "boundary", "recheck_when")

LEGACY_KEY_ID = ""  # tombstones written before keys per install: matched under the fixed key
_KEY_PURPOSE = b"memoryadmin tombstone matching v1"


def tombstone_key(secret: str) -> bytes:
    """The key that tombstones are hashed with, derived from an install's secret (SECRET_KEY) for this one
    purpose: knowing it tells nothing of the secret or of its other uses."""
    return hmac.new(secret.encode(), _KEY_PURPOSE, hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """A short name of a key, stored on each tombstone, that does not reveal the key."""
    return hashlib.sha256(b"key id " + key).hexdigest()[:12]


@lru_cache(maxsize=64)
def _hasher(key: bytes, size: int):
    """A keyed hash set up once per key and size: copying it is a quarter of the cost of keying anew."""
    return hashlib.blake2b(digest_size=size, key=key)


def _hashes(key: bytes, texts, size: int) -> list[str]:
    base, found = _hasher(key, size), set()
    for text in texts:
        h = base.copy()
        h.update(text.encode())
        found.add(h.hexdigest())
    return sorted(found)


def keyed_fingerprint(key: bytes, pieces) -> str:
    """Equal for lessons a reader sees as the same words in the same order (matching_text.Reading.pieces):
    the exact-duplicate key of a tombstone."""
    return _hashes(key, [" ".join(pieces)], 32)[0]


def keyed_signature(key: bytes, stems) -> list[str]:
    """The stems (matching_text.stems), each as a short keyed hash, sorted: the Jaccard of two signatures is
    the Jaccard of the two texts' stems, and no signature holds a word of its text."""
    return _hashes(key, stems, 6)


def keyed_tokens(key: bytes, tokens) -> list[str]:
    return _hashes(key, tokens, 8)


@dataclass(frozen=True)
class ForgottenLesson:
    """What a tombstone keeps of a forgotten lesson, under one key: never a word of it."""

    fingerprint: str
    signature: list[str]
    tokens: list[str]
    key_id: str


def forgotten_lesson(key: bytes, trigger: str, content: str, tokens, *, exact: bool = True) -> ForgottenLesson:
    """A tombstone's hashes of a lesson, with the distinctive `tokens` (folded forms) chosen for it. A text
    request's text is no (trigger, content) pair: it is passed as both, without its fingerprint (exact=False)."""
    read = matching_text.reading(f"{trigger}\n{content}" if exact else trigger)
    return ForgottenLesson(
        keyed_fingerprint(key, read.pieces) if exact else "",
        keyed_signature(key, read.stems),
        keyed_tokens(key, tokens),
        key_id(key),
    )


@dataclass
class Lesson:
    """A lesson compared with tombstones: its scope and its reading (matching_text.reading), computed once;
    their hashes computed once per key that the tombstones compared with it use, and only those asked for."""

    scope: str
    trigger: str
    content: str
    read: matching_text.Reading = field(repr=False)
    _keyed: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, scope: str, trigger: str, content: str) -> "Lesson":
        return cls(scope, trigger, content, matching_text.reading(f"{trigger}\n{content}"))

    @property
    def stems(self) -> frozenset:
        return self.read.stems

    def _cached(self, part: str, key: bytes | None, compute):
        if (part, key) not in self._keyed:
            self._keyed[part, key] = compute()
        return self._keyed[part, key]

    def fingerprints(self, key: bytes | None) -> frozenset:
        """Its exact-duplicate keys under `key`; None: the legacy ones (of the raw and of the readable text)."""
        if key is None:
            return self._cached(
                "fingerprint",
                key,
                lambda: frozenset(
                    {
                        legacy_fingerprint(self.trigger, self.content),
                        legacy_fingerprint(matching_text.readable(self.trigger), matching_text.readable(self.content)),
                    }
                ),
            )
        return self._cached("fingerprint", key, lambda: frozenset({keyed_fingerprint(key, self.read.pieces)}))

    def signature(self, key: bytes | None) -> frozenset:
        if key is None:
            return self._cached(
                "signature",
                key,
                lambda: frozenset(
                    legacy_signature(f"{matching_text.readable(self.trigger)} {matching_text.readable(self.content)}")
                ),
            )
        return self._cached("signature", key, lambda: frozenset(keyed_signature(key, self.read.stems)))

    def tokens(self, key: bytes) -> frozenset:
        """Its token forms hashed under `key`: hashed only for a tombstone that has tokens."""
        return self._cached("tokens", key, lambda: frozenset(keyed_tokens(key, self.read.forms)))


def same_lesson(
    lesson: Lesson, *, scope: str, fingerprint: str, signature, tokens=(), key: bytes | None = None
) -> bool:
    """Is `lesson` the forgotten lesson of a tombstone (its scope, fingerprint, signature and tokens, hashed
    under `key`; None for a legacy tombstone)?"""
    if not scopes_overlap(lesson.scope, scope):
        return False
    if fingerprint and fingerprint in lesson.fingerprints(key):
        return True
    if tokens and key is not None and not lesson.tokens(key).isdisjoint(tokens):
        return True
    return same_stems(frozenset(signature), lesson.signature(key))


def same_stems(forgotten: frozenset, other: frozenset) -> bool:
    """The near-duplicate rule on two sets of stems (or of their hashes under one key): Jaccard at
    FORGOTTEN_NEAR, or FORGOTTEN_CONTAINED of the forgotten stems restated."""
    if jaccard(forgotten, other) >= FORGOTTEN_NEAR:
        return True
    return len(forgotten) >= CONTAINED_MIN and len(forgotten & other) / len(forgotten) >= FORGOTTEN_CONTAINED


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
# - ENTRY_*: a forgotten entry's own snapshot (and a conflict's quoted directives, under "reason"), and
#   the texts of its evidence that an `add_evidence` Event records;
# - DERIVED_*: what was made of it, in Events about a conflict or a consolidation, which may sit on
#   another entry's history beside that entry's own snapshot (left as it is).
# The database's purge function (curation_forget_purge) holds the same lists; a test compares them.
EVIDENCE_TEXT_KEYS = ("excerpt", "task_ref")
ENTRY_TEXT_KEYS = (*SNAPSHOT_TEXTS, "reason", *EVIDENCE_TEXT_KEYS)
ENTRY_TEXT_LISTS = ("conditions",)
DERIVED_TEXT_KEYS = ("reason", "proposed_trigger", "proposed_content", "proposed_boundary")
DERIVED_TEXT_LISTS = ("proposed_conditions",)


def purge_keys(value, keys, lists, marker: str):
    """`value` with the text under each of `keys` (non-empty strings) replaced by the marker and each of
    `lists` emptied: at the top level of an object only, which is where the writers put them. The SQL
    function curation_forget_keys does the same (and skill_format.withdrawn_snapshot uses it for a skill's
    draft and names)."""
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
    return [
        {**w, "text": marker} if isinstance(w, dict) and w.get("entry") in ids and w.get("text") else w
        for w in acknowledged
    ]


def quoted_texts(texts) -> list[str]:
    """The forgotten texts searched for inside rows that quote them (which a lead ticks): the lesson's
    sentences, not its keywords or conditions, distinct and longest first."""
    return texts_to_purge(texts)
