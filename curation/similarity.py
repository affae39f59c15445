"""A portable measure of how alike two lessons are (word-set Jaccard over trigger and content).
PostgreSQL-specific trigram matching can replace it behind `selectors.similar_active_entries`."""

import hashlib
import re

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the to of in on and or for is are be it this that with when before after".split())


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def similarity(a: str, b: str) -> float:
    return jaccard(words(a), words(b))


def jaccard(wa: frozenset, wb: frozenset) -> float:
    """similarity() for word sets already split (a caller comparing one text with many splits it once)."""
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def fingerprint(trigger: str, content: str) -> str:
    """Equal for lessons that differ only in case, punctuation and spacing: the exact-duplicate key."""
    return hashlib.sha256(f"{normalise(trigger)}\n{normalise(content)}".encode()).hexdigest()
