"""A text as the tombstone check sees it: what a reader reads, whatever disguise it wears. Pure functions.

`readable(text)` undoes what changes the characters and not the words: HTML entities and tags,
%-escapes, a long base64 run (decoded and added), Unicode compatibility forms (NFKC: fullwidth, ligatures,
mathematical letters), invisible format characters (zero-width spaces and joiners, soft hyphens, bidi
controls), accents and other combining marks, and look-alike letters of other scripts (the confusable
skeleton of Unicode TR39, from the table `confusable-homoglyphs` ships), then case (casefold).

`pieces(text)` splits that into words, each folded: digits and symbols standing for letters inside a word
(leetspeak: 0 o, 1 l, 3 e, 4 a, 5 s, 7 t, @ a, $ s ...) become the letters, and letters that look alike
in Latin itself (i l, rn m) become one. A piece made of digits only stays a number: "4242" is never
"aeae". Both sides of a comparison are folded the same way, so two texts that a reader sees as the same
words have the same pieces.

`distinctive_tokens(text)` names what makes a forgotten text unique (an identifier, a long number, a made-up
name), so that it alone is enough to hold a submission; `token_forms(text)` is every form in which a
submission could carry one (each piece, each compound, adjacent pieces joined: a token split by spaces or
hyphens)."""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from urllib.parse import unquote

from curation.rules.similarity import stem

# --- what a reader reads ------------------------------------------------------------------------------------

_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]{0,10}(?:\s[^<>]{0,200})?/?>")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
BASE64_MIN = 24  # a shorter run is a word or an identifier, not an encoded text
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{%d,}={0,2}" % BASE64_MIN)
_INVISIBLE = frozenset(("Cf", "Mn", "Me"))  # format characters, and the marks that accents are after NFD


@cache
def _skeleton() -> dict[int, str]:
    """Each character outside ASCII that Unicode's confusables table maps to ASCII (Cyrillic а, Greek ο,
    Cherokee Ꭺ ...), as a str.translate table. The package's table lists, for a character that has a
    prototype, that one prototype; for a prototype, its many look-alikes. Imported on first use: loading
    the table costs every process's start some 70 ms, and most never read a tombstone."""
    from confusable_homoglyphs.confusables import confusables_data

    return {
        ord(char): likes[0]["c"]
        for char, likes in confusables_data.items()
        if len(char) == 1 and not char.isascii() and len(likes) == 1 and likes[0]["c"].isascii()
    }


def _decoded_base64(run: str) -> str | None:
    """The text a base64 run encodes, or None when it does not decode to printable UTF-8 text."""
    raw = run.rstrip("=")
    try:
        data = base64.b64decode(
            raw + "=" * (-len(raw) % 4), altchars=b"-_" if "-" in raw or "_" in raw else None, validate=True
        )
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    letters = sum(ch.isalpha() for ch in text)
    if not text.strip() or letters < len(text) / 2 or not all(ch.isprintable() or ch in "\n\t\r" for ch in text):
        return None
    return text


def _with_decodings(text: str) -> str:
    """`text` with what it encodes: entities and %-escapes decoded, tags dropped, and each long base64 run
    that decodes to text followed by that text (the run stays: it might be an identifier after all)."""
    if "&" in text:
        text = html.unescape(text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if _PERCENT.search(text):
        text = unquote(text)
    if len(text) >= BASE64_MIN:
        decoded = [d for d in (_decoded_base64(run) for run in _BASE64.findall(text)) if d]
        if decoded:
            text = " ".join([text, *decoded])
    return text


def _unmasked(text: str) -> str:
    """`readable` before the case is folded (the case tells a name from a word)."""
    text = _with_decodings(text)
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) not in _INVISIBLE)
    return unicodedata.normalize("NFC", text.translate(_skeleton()))


def readable(text: str) -> str:
    return _unmasked(text).casefold()


# --- words, folded ------------------------------------------------------------------------------------------

_IN_WORD_SYMBOL = re.compile(r"(?<=[^\W_])[@$|!](?=[^\W_])")
_SYMBOL_LETTERS = {"@": "a", "$": "s", "|": "l", "!": "i"}
_COMPOUND = re.compile(r"[^\W_]+(?:[-_.:/#][^\W_]+)*")
_PIECE = re.compile(r"[^\W_]+")
_DIGIT_LETTERS = str.maketrans("013456789", "oieasgtbg")  # 1 is i or l: fold makes those one letter
WORDS_CACHED = 50_000  # words whose folded form and stem are kept: a scope's vocabulary repeats
_STOP = frozenset("a an the to of in on and or for is are be it this that with when before after".split())


@lru_cache(maxsize=WORDS_CACHED)
def fold(piece: str) -> str:
    """One word's canonical form (see the module): a number stays itself."""
    if piece.isdigit():
        return piece
    return piece.translate(_DIGIT_LETTERS).replace("i", "l").replace("rn", "m")


@lru_cache(maxsize=WORDS_CACHED)
def _stem_of(piece: str) -> str:
    """A word's folded stem, or "" for a stop word. It is stemmed before its letters are folded ("merging"
    and "m3rging" are "merg"); leetspeak is read first ("th3" is a stop word)."""
    if piece in _STOP:
        return ""
    if not piece.isdigit():
        piece = piece.translate(_DIGIT_LETTERS)
        if piece in _STOP:
            return ""
    return fold(stem(piece))


def _compounds(text: str) -> list[str]:
    """The compounds of an unmasked text, as written (case kept): "FORGETMEAXOLOTL-4242", "p@ss"."""
    text = _IN_WORD_SYMBOL.sub(lambda m: _SYMBOL_LETTERS[m.group()], text)
    return _COMPOUND.findall(text)


@dataclass(frozen=True)
class Reading:
    """What a text is compared by, read once: its folded words in order (the exact-duplicate key), its
    folded stems (the signature) and its token forms (token_forms)."""

    pieces: tuple[str, ...]
    stems: frozenset[str]
    forms: frozenset[str]


def reading(text: str) -> Reading:
    compounds = [_PIECE.findall(c) for c in _compounds(readable(text))]
    stems_found = {_stem_of(p) for parts in compounds for p in parts}
    stems_found.discard("")
    folded = [[fold(p) for p in parts] for parts in compounds]
    return Reading(tuple(p for parts in folded for p in parts), frozenset(stems_found), _forms(folded))


def pieces(text: str) -> list[str]:
    """The folded words of `text`, in order."""
    return list(reading(text).pieces)


def stems(text: str) -> frozenset[str]:
    """The folded stems of `text` without the stop words: what a tombstone's signature is made of."""
    return reading(text).stems


# --- tokens that make a text unique -------------------------------------------------------------------------

JOINED_MAX = 3  # a token split into up to this many pieces is still found (a compound: any)
TOKEN_MIN = 5  # shorter forms are never a distinctive token (nor looked for)
IDENTIFIER_DIGITS = 3  # letters with at least this many digits: an identifier (BILL-4821, FORGETMEAXOLOTL-4242)
NUMBER_DIGITS = 8  # a number this long: an account, a card, a phone number (a port or a year is shorter;
# in parts, 2 more: 2024-01-15 is a date)
NAME_MIN = 6  # a made-up name: a word no word list knows, at least this long, and ...
LONG_NAME_MIN = 13  # ... written as a name (capitalised, alone, inside a sentence), or this long in capitals
KNOWN_ZIPF = 1.0  # wordfreq's Zipf frequency from which a word is a known word
# Letters that with a number name a standard or a unit, not something unique: sha256, iso-8601, 500ms.
_STANDARD = frozenset(
    """sha md crc aes des rsa ecdsa iso rfc utf ucs pep cve cwe ieee ecma es js x arm int uint
float win ipv http tls ssl h mp base v r rc b kb mb gb tb pb kib mib gib ms s sec m min h hr d px em pt rem
st nd rd th am pm utc gmt q k p""".split()
)


_VERSION = re.compile(r"\d\.\d")
_NAMED = re.compile(r"[^\W_]+(?:[-_.#][^\W_]+)*")  # a compound as distinctive_tokens reads it: no / or :


@dataclass(frozen=True)
class Token:
    """A distinctive token of a text: as written (lower case, for a lookup of who else uses it) and folded
    (what is hashed on a tombstone)."""

    written: str
    folded: str


def english_zipf(word: str) -> float:
    """wordfreq's Zipf frequency of an English word (0: unknown). Imported on first use (forget time only):
    loading wordfreq costs a process's start some 200 ms."""
    from wordfreq import zipf_frequency as english

    return english(word, "en")


def _is_identifier(compound: str, parts: list[str]) -> bool:
    if _VERSION.search(compound):  # python3.11, 10.0.0.12: a version or an address
        return False
    letters = "".join(ch for p in parts for ch in p if ch.isalpha())
    digits = sum(ch.isdigit() for p in parts for ch in p)
    if digits < IDENTIFIER_DIGITS or len(letters) < 2:
        return False
    letter_parts = [p for p in parts if not p.isdigit()]
    # sha256, x86-64, 500ms, v2.3.1, 2024-01-15t10: a standard, a unit, a version or a time with a number
    if all(re.sub(r"\d+", "", p) in _STANDARD for p in letter_parts):
        return False
    return english_zipf("".join(parts)) < KNOWN_ZIPF


def _is_name(word: str, *, alone: bool, starts_sentence: bool) -> bool:
    """A made-up name: a word no word list knows, written as a name (capitalised, alone, inside a sentence:
    not PermissionError, not Idempotency-Key) or as a long code in capitals (FORGETMEAXOLOTL). A long word in
    lower or camel case is a program's identifier (showmigrations, advanceTimersByTime): vocabulary."""
    lower = word.casefold()
    if not lower.isalpha() or len(lower) < NAME_MIN or english_zipf(lower) >= KNOWN_ZIPF:
        return False
    written_as_name = alone and word[:1].isupper() and word[1:].islower() and not starts_sentence
    return written_as_name or (len(lower) >= LONG_NAME_MIN and word.isupper())


def distinctive_tokens(text: str) -> list[Token]:
    """What makes `text` unique, in order, without repeats: identifiers (letters with a number of 3+ digits
    that is no standard, unit or version), long numbers (8+ digits) and made-up names (a word no word list
    knows, capitalised alone inside a sentence, or 13+ capitals). Ordinary words and technical vocabulary
    are not (`selectors.forgets` further drops what other lessons use). A host, a port and a path are
    read part by part (localhost:8080/healthz is three ordinary parts)."""
    found: dict[str, Token] = {}
    unmasked = _unmasked(text)
    for match in _NAMED.finditer(_IN_WORD_SYMBOL.sub(lambda m: _SYMBOL_LETTERS[m.group()], unmasked)):
        compound = match.group()
        parts = _PIECE.findall(compound.casefold())
        joined = "".join(fold(p) for p in parts)
        before = unmasked[: match.start()].rstrip()
        starts_sentence = not before or before[-1] in ".!?:\n*#>-"
        numbers = all(p.isdigit() for p in parts) and not _VERSION.search(compound)
        if _is_identifier(compound, parts) or (
            numbers and sum(map(len, parts)) >= NUMBER_DIGITS + 2 * (len(parts) > 1)
        ):
            if len(joined) >= TOKEN_MIN:
                found.setdefault(joined, Token(compound.casefold(), joined))
        words = _PIECE.findall(compound)
        for index, word in enumerate(words):
            if _is_name(word, alone=len(words) == 1, starts_sentence=starts_sentence and index == 0):
                found.setdefault(fold(word.casefold()), Token(word.casefold(), fold(word.casefold())))
    return list(found.values())


def token_forms(text: str) -> frozenset[str]:
    """Every folded form of `text` that could be a distinctive token: each piece, each run of up to
    JOINED_MAX adjacent pieces joined, each compound joined, and each run of single letters joined (r.e.t.r.y)."""
    return reading(text).forms


def _forms(compounds: list[list[str]]) -> frozenset[str]:
    flat = [p for parts in compounds for p in parts]
    forms = {"".join(parts) for parts in compounds}
    for start in range(len(flat)):
        joined = ""
        for piece in flat[start : start + JOINED_MAX]:
            joined += piece
            forms.add(joined)
    run: list[str] = []
    for piece in [*flat, ""]:
        if len(piece) == 1:
            run.append(piece)
            continue
        if len(run) >= 3:
            forms.add("".join(run))
        run = []
    return frozenset(f for f in forms if len(f) >= TOKEN_MIN)
