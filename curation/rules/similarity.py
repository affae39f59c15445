"""A portable measure of how alike two lessons are (word-set Jaccard over trigger and content).
PostgreSQL-specific trigram matching can replace it behind `selectors.similar_active_entries`."""

import hashlib
import itertools
import re
import struct
from array import array
from collections.abc import Collection
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the to of in on and or for is are be it this that with when before after".split())


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower())).difference(_STOP)


def similarity(a: str, b: str) -> float:
    return jaccard(words(a), words(b))


def jaccard(wa: frozenset, wb: frozenset) -> float:
    """similarity() for word sets already split (a caller comparing one text with many splits it once)."""
    if not wa or not wb:
        return 0.0
    shared = len(wa & wb)
    return shared / (len(wa) + len(wb) - shared)  # the size of the union, without building it


# A word's trigram cuts by its length: the padded word is cut in C (map), not by a loop in Python.
_CUTS = [tuple(slice(k, k + 3) for k in range(n + 1)) for n in range(64)]
# The words whose trigrams are remembered: a lesson's words repeat across lessons (~1.5 KB each).
WORD_TRIGRAMS_REMEMBERED = 8192


def trigrams(text: str) -> frozenset[str] | None:
    """The trigrams PostgreSQL's pg_trgm forms of an ASCII text (each word of letters and digits, lowercased,
    two spaces before it and one after), so that the jaccard() of two of them is its similarity(); None
    for a text with another character, whose words and case the database's locale decides."""
    sketched = sketched_trigrams(text)
    return None if sketched is None else sketched[0]


def sketched_trigrams(text: str) -> tuple[frozenset[str], tuple[int, int, int]] | None:
    """trigrams() of the text and their trigram_sketch(), or None beyond ASCII: the union of its words'
    trigrams and of their sketches' bits, each word's cut and hashed once (_word_trigrams), not each
    trigram of every text hashed into a new number of SKETCH_BITS bits."""
    if not text.isascii():
        return None
    cut = [_word_trigrams(word) for word in _WORD.findall(text.lower())]  # pg_trgm's words: the measure's
    grams = frozenset().union(*(grams for grams, _ in cut))
    bits = 0
    for _, word_bits in cut:
        bits |= word_bits
    return grams, (len(grams), bits.bit_count(), bits)


@lru_cache(maxsize=WORD_TRIGRAMS_REMEMBERED)
def _word_trigrams(word: str) -> tuple[frozenset[str], int]:
    """The trigrams of one word as pg_trgm pads it (two spaces before it, one after), and their sketch's bits."""
    cuts = _CUTS[len(word)] if len(word) < len(_CUTS) else [slice(k, k + 3) for k in range(len(word) + 1)]
    grams = frozenset(map(f"  {word} ".__getitem__, cuts))
    return grams, trigram_sketch(grams)[2]


class _TrigramNumbers(dict):
    """A number for each trigram this process has met: at most 37³ (a letter, a digit or a space each).
    setdefault and next() each run whole under the GIL, so two threads never give two trigrams one number."""

    def __missing__(self, gram: str) -> int:
        return self.setdefault(gram, next(_NEXT_NUMBER))


_NEXT_NUMBER = itertools.count()
_TRIGRAM_NUMBERS = _TrigramNumbers()


def trigram_codes(grams: frozenset[str]) -> array:
    """A text's trigrams() as this process's numbers for them: ~0.5 KB where the set of strings takes ~8 KB,
    for a process that remembers the trigrams of many texts."""
    return array("I", map(_TRIGRAM_NUMBERS.__getitem__, grams))


_FLOAT4 = struct.Struct("f")


def trigram_similarity(a: frozenset[int], b: Collection[int]) -> float:
    """pg_trgm's similarity() of two texts from their trigram_codes() (the first as a set): the shared
    trigrams over all of them, as the database's float4 holds it. A quotient of integers rounded to a double
    and then to a float4 is the float4 quotient (a double has more than twice a float4's bits), so a score
    here is the score there."""
    if not a or not b:
        return 0.0
    shared = len(a.intersection(b))
    return _FLOAT4.unpack(_FLOAT4.pack(shared / (len(a) + len(b) - shared)))[0]


def as_read_from_float4(value: float) -> float:
    """A float4 as a query returns it: PostgreSQL prints a float4 as its shortest decimal that reads back as
    the same float4, and the driver reads that decimal as a double (0.3602941, not 0.36029410362...); a
    score shown rounded must start from the same number whichever side computed it."""
    packed = _FLOAT4.pack(value)
    for digits in range(1, 10):  # the nearest decimal of the fewest digits that is still this float4
        decimal = float(f"{value:.{digits}g}")
        if _FLOAT4.pack(decimal) == packed:
            return decimal
    return value


# The bits of a trigram sketch: a text's ~100 trigrams set ~2 stray bits in common with another's.
SKETCH_BITS = 4096


def trigram_sketch(grams: frozenset[str]) -> tuple[int, int, int]:
    """A text's trigrams() in ~600 bytes: their number, and each one's bit (of SKETCH_BITS, by its hash in
    this process) with the number of bits set."""
    bits = 0
    for gram in grams:
        bits |= 1 << (hash(gram) & (SKETCH_BITS - 1))
    return len(grams), bits.bit_count(), bits


def trigram_similarity_bound(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """At least the similarity() of the two sketched texts. Their shared trigrams set bits both have, but for
    those that share a bit with another trigram of the same text (at most the text's trigrams less its bits
    set): so they number at most the common bits plus the fewer lost bits, and no more than either has."""
    (count_a, set_a, bits_a), (count_b, set_b, bits_b) = a, b
    shared = min((bits_a & bits_b).bit_count() + min(count_a - set_a, count_b - set_b), count_a, count_b)
    union = count_a + count_b - shared
    return shared / union if union else 0.0


def fingerprint(trigger: str, content: str) -> str:
    """Equal for lessons that differ only in case, punctuation and spacing: the exact-duplicate key."""
    return hashlib.sha256(f"{normalise(trigger)}\n{normalise(content)}".encode()).hexdigest()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
SAME_SENTENCE = 0.5  # word-set Jaccard at or above which two sentences say the same thing


def stem(word: str) -> str:
    """A rough stem, enough to see "merging" and "merge", "branches" and "branch" as one word."""
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.removesuffix("e")


def sentence_words(sentence: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words(sentence))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def merged_content(contents: list[str]) -> tuple[str, list[list[str]]]:
    """One lesson's content from several, the best-supported first: its text whole, then only the other
    texts' sentences that say something new (alike no sentence kept so far). Also answers, per text after
    the first, the sentences it added: what came from where, for the reviewer."""
    kept = [sentence_words(s) for s in sentences(contents[0])]
    merged, added = [contents[0].strip()], []
    for other in contents[1:]:
        new = []
        for sentence in sentences(other):
            ws = sentence_words(sentence)
            if ws and all(jaccard(ws, k) < SAME_SENTENCE for k in kept):
                kept.append(ws)
                new.append(sentence)
        merged += new
        added.append(new)
    return " ".join(merged), added


# The signature of the tombstones written before keys per install (key id ""): keyed hashes of the word
# stems under a key fixed in the code, which anyone with the code has. New tombstones are keyed with the
# install's secret (forgetting.tombstone_key); this one is only read, to keep those old rows matching.
_SIGNATURE_KEY = b"memoryadmin tombstone signature"


def signature(text: str) -> list[str]:
    """The legacy signature: the stems of `text` (sentence_words), each as a short hash under the fixed key,
    sorted. The Jaccard of two signatures is the Jaccard of the two texts' stems."""
    return sorted(
        {hashlib.blake2b(w.encode(), digest_size=6, key=_SIGNATURE_KEY).hexdigest() for w in sentence_words(text)}
    )
