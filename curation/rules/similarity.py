"""A portable measure of how alike two lessons are (word-set Jaccard over trigger and content).
PostgreSQL-specific trigram matching can replace it behind `selectors.similar_active_entries`."""

import hashlib
import re

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


_TRIGRAM_WORD = re.compile(r"[a-z0-9]+")


def trigrams(text: str) -> frozenset[str] | None:
    """The trigrams PostgreSQL's pg_trgm forms of an ASCII text (each word of letters and digits, lowercased,
    two spaces before it and one after), so that the jaccard() of two of them is its similarity(); None
    for a text with another character, whose words and case the database's locale decides."""
    if not text.isascii():
        return None
    return frozenset(
        padded[k : k + 3]
        for word in _TRIGRAM_WORD.findall(text.lower())
        for padded in (f"  {word} ",)
        for k in range(len(word) + 1)
    )


# The bits of a trigram sketch: a text's ~100 trigrams set ~2 stray bits in common with another's.
SKETCH_BITS = 4096


def trigram_sketch(text: str) -> tuple[int, int, int] | None:
    """A text's trigrams (trigrams()) in ~600 bytes: their number, and each one's bit (of SKETCH_BITS, by its
    hash in this process) with the number of bits set. None where trigrams() is None."""
    grams = trigrams(text)
    if grams is None:
        return None
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
