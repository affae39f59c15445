"""Rules of a forget's receipt, as pure functions: what is searched for after a purge (the forgotten
texts' distinctive tokens), how a stored value is matched, and what the receipt says.

The tokens are computed from the forgotten texts before the purge and live only in memory for the rest of
the approval's transaction: they are never stored, logged or sent anywhere. Two kinds:

- identifiers: words shaped like a name nobody writes by chance (`FORGETMEAXOLOTL-4242`, `pg_repack`,
  `initrodeAcquisition`, `v2.3.1`): a letter and a digit, an inner `_ - . : / @`, a capital inside a
  word, or a word in capitals; and names: a capitalised word inside a sentence (`Okonkwo`);
- phrases: runs of PHRASE_WORDS consecutive words exactly as the text has them, spread over each text, so
  a quotation of a sentence or more is found whichever part of it survived.

A token that is also part of the forgotten entries' scopes is not searched for: scopes stay, and every
Event of the scope names them. Nor is a word other lessons use too (selectors.forget_receipt.common_words
finds them before the purge): "PostgreSQL" in a forgotten lesson is not a residue wherever it appears."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

IDENTIFIER_MIN = 5  # shorter identifiers (k8s, v2) are too common to mean the forgotten text
NAME_MIN = 4
IDENTIFIERS_MAX = 16  # each token is one more pass over every text: the longest are kept
PHRASE_WORDS = 5
PHRASES_PER_TEXT = 4
PHRASE_MIN_CHARS = 12  # a whole short text ("Use tabs here") is searched for; shorter ones are too common
PHRASES_MAX = 12
RESIDUE_IDS_SHOWN = 20  # row ids a residue names (the count is whole)

_WORD = re.compile(r"\w(?:[\w.\-:/@+]*\w)?")
_INNER_MARK = re.compile(r"\w[_.\-:/@]\w")
_CAMEL = re.compile(r"[a-z][A-Z]")


def is_identifier(word: str) -> bool:
    """Shaped like a name, a code or a version: not a word of prose."""
    if len(word) < IDENTIFIER_MIN:
        return False
    letters = any(c.isalpha() for c in word)
    digits = any(c.isdigit() for c in word)
    if letters and digits:
        return True
    if _INNER_MARK.search(word) or _CAMEL.search(word):
        return True
    return letters and word.isupper()


def _is_name(text: str, start: int, word: str) -> bool:
    """A capitalised word that does not start a sentence: a person's, a company's or a place's name."""
    if len(word) < NAME_MIN or not word[0].isupper() or not word[1:].islower() or not word.isalpha():
        return False
    before = text[:start].rstrip()
    return bool(before) and before[-1] not in ".!?:;\"'(*-#>"


def _phrases(text: str) -> list[str]:
    """Up to PHRASES_PER_TEXT runs of PHRASE_WORDS words, spread evenly over the text, as they appear in it;
    a shorter text (of PHRASE_MIN_CHARS or more) is one phrase itself."""
    words = [m for m in re.finditer(r"\S+", text)]
    if len(words) < PHRASE_WORDS:
        short = text.strip()
        return [short] if len(short) >= PHRASE_MIN_CHARS else []
    starts = range(0, len(words) - PHRASE_WORDS + 1)
    step = max(1, len(starts) // PHRASES_PER_TEXT)
    return [text[words[i].start() : words[i + PHRASE_WORDS - 1].end()] for i in list(starts)[::step][:PHRASES_PER_TEXT]]


def distinctive_tokens(texts, *, kept=()) -> list[str]:
    """The tokens a receipt searches for: the texts' identifiers and phrases (see the module), without
    those found inside any of `kept` (the scopes, the marker: texts that stay). Distinct by case, longest
    first, at most IDENTIFIERS_MAX + PHRASES_MAX."""
    kept_folded = [k.casefold() for k in kept if k]
    identifiers: dict[str, str] = {}
    phrases: dict[str, str] = {}
    for text in texts:
        if not isinstance(text, str) or not text.strip():
            continue
        for match in _WORD.finditer(text):
            word = match.group()
            if is_identifier(word) or _is_name(text, match.start(), word):
                identifiers.setdefault(word.casefold(), word)
        for phrase in _phrases(text):
            phrases.setdefault(phrase.casefold(), phrase)

    def chosen(found: dict[str, str], limit: int) -> list[str]:
        keys = [k for k in found if not any(k in kept_text for kept_text in kept_folded)]
        return [found[k] for k in sorted(keys, key=lambda k: (-len(k), k))[:limit]]

    return chosen(identifiers, IDENTIFIERS_MAX) + chosen(phrases, PHRASES_MAX)


def json_variants(token: str) -> list[str]:
    """How a token may be spelled inside a JSON column's text: as is, and JSON-escaped (a quote, a
    backslash, and on SQLite every non-ASCII character as \\uXXXX)."""
    escaped = json.dumps(token)[1:-1]
    variants = [token, escaped, json.dumps(token, ensure_ascii=False)[1:-1]]
    return list(dict.fromkeys(variants))


def holds_token(value, tokens) -> bool:
    """Does a stored value (text, or a JSON value) contain any token, case-insensitively?"""
    if value is None:
        return False
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    folded = text.casefold()
    return any(t.casefold() in folded for t in tokens)


@dataclass
class Residue:
    """Where a token was found: a place (table.column, or a rendered surface) and the ids there (rows,
    entries, skills, export files), never the text."""

    place: str
    ids: list = field(default_factory=list)
    count: int = 0

    def as_json(self) -> dict:
        return {"place": self.place, "ids": self.ids[:RESIDUE_IDS_SHOWN], "count": self.count or len(self.ids)}


@dataclass
class Receipt:
    """What the search after a purge found. `places`: each stored column searched, each version's
    released rows (what the API's search and a pinned `version=N` serve), each skill's SKILL.md and each
    version's export rendered; `rows_scanned`: the rows those columns hold."""

    tokens: int
    residues: list[Residue] = field(default_factory=list)
    places_by_surface: dict[str, int] = field(default_factory=dict)
    rows_scanned: int = 0

    @property
    def places(self) -> int:
        return sum(self.places_by_surface.values())

    def count(self, surface: str, places: int = 1) -> None:
        self.places_by_surface[surface] = self.places_by_surface.get(surface, 0) + places

    @property
    def clean(self) -> bool:
        return not self.residues

    def summary(self) -> str:
        if not self.tokens:
            return "nothing distinctive to search for in the forgotten text: 0 places checked"
        checked = f"in {self.places:,} places checked ({self.rows_scanned:,} rows scanned)"
        if self.clean:
            return f"0 residues {checked}"
        where = "; ".join(
            f"{r.place} ({', '.join(f'#{i}' if isinstance(i, int) else str(i) for i in r.ids[:RESIDUE_IDS_SHOWN])}"
            f"{', ...' if len(r.ids) > RESIDUE_IDS_SHOWN else ''})"
            for r in self.residues
        )
        n = len(self.residues)
        return f"{n} residue{'s' if n != 1 else ''} {checked}: {where}"

    def as_json(self) -> dict:
        return {
            "residues": [r.as_json() for r in self.residues],
            "places": self.places,
            "places_by_surface": dict(self.places_by_surface),
            "rows_scanned": self.rows_scanned,
            "tokens": self.tokens,
        }
