"""MinHash band keys of a lesson's text: two texts whose word sets are alike share a band key, so a
near-duplicate lookup reads only the entries sharing one (an index of band keys), and the exact measure
(similarity.jaccard, or trigrams on PostgreSQL) ranks those few. Pure and deterministic: the same text gives
the same keys in every process and release, since the keys are stored (curation_entryband).

The shingles are the measure's own words (similarity.words: lowercased, stop words dropped). HASHES
minimum hashes in BANDS bands of ROWS: two texts of word Jaccard s share at least one band with
probability 1 - (1 - s**ROWS)**BANDS: 0.998 at the near-duplicate threshold's 0.35, 0.955 at 0.25 (lessons
whose trigrams reach the threshold while their words are 0.2-0.3 alike), and 0.38 at 0.1 (texts that share a
word or two of a template).

The number of bands follows the database's measure (bands_for): PostgreSQL ranks by trigrams, which call
lessons alike whose words are only 0.2-0.3 alike (0.955 at 0.25 takes 48 bands); the word measure elsewhere
needs 32 (0.985 at its threshold). Bands are only ever added: the hashes are one SHAKE-128 digest read in
order, so a text's first bands keep their keys whatever the number, and a migration adds the new bands' keys
to the entries that have keys (0060 took PostgreSQL's 32 bands to 48)."""

from __future__ import annotations

import hashlib
import sys
from array import array
from functools import lru_cache

from curation.rules.similarity import words

BANDS = 48  # the most a measure uses (bands_for)
WORD_MEASURE_BANDS = 32
ROWS = 2
HASHES = BANDS * ROWS  # band_keys packs ROWS = 2 values per band


def bands_for(vendor: str) -> int:
    """The bands of the keys a database stores and looks up: its near-duplicate measure's (trigrams on
    PostgreSQL, words elsewhere)."""
    return BANDS if vendor == "postgresql" else WORD_MEASURE_BANDS


_VALUE_BITS = 28  # of each minimum hash kept in a key: a band's two values and its number fit in 62 bits
_VALUE_MASK = (1 << _VALUE_BITS) - 1


def _word_hashes(word: str) -> array:
    """HASHES independent 32-bit hashes of one word (one SHAKE-128 digest, read as unsigned ints)."""
    hashes = array("I")
    hashes.frombytes(hashlib.shake_128(word.encode()).digest(4 * HASHES))
    if sys.byteorder == "big":  # the digest read little-endian everywhere: stored keys are the same
        hashes.byteswap()
    return hashes


# A word's hashes side by side in one integer, a lane of 64 bits each (the hash in its low 32 bits), so that a
# text's minimum hashes are taken for all HASHES at once, a word at a time (_lane_minimum), not hash by hash.
_LANE = 64
_GUARDS = sum(1 << (_LANE * lane + 32) for lane in range(HASHES))  # the bit above each lane's hash
_HASH_MASK = (1 << 32) - 1


@lru_cache(maxsize=32768)  # a lesson's words repeat across lessons (~0.8 KB each)
def _word_lanes(word: str) -> int:
    """The word's HASHES hashes as lanes of one integer (the first in the lowest lane)."""
    wide = array("Q", _word_hashes(word))
    if sys.byteorder == "big":
        wide.byteswap()
    return int.from_bytes(wide.tobytes(), "little")


def _lane_minimum(a: int, b: int) -> int:
    """Each lane's smaller hash of `a` and `b`. In a lane, 2**32 + a - b is positive and below 2**33 (no borrow
    from the next lane), and its bit 32, the guard, is set exactly when a >= b: spread over the lane's 32 bits
    it picks b there, a elsewhere."""
    b_not_above = (((a | _GUARDS) - b) & _GUARDS) >> 32
    return a ^ ((a ^ b) & (b_not_above * _HASH_MASK))


def signature(text: str, hashes: int = HASHES) -> list[int]:
    """The first `hashes` minimum hashes of the text's words; empty for a text with no word."""
    shingles = words(text)
    if not shingles:
        return []
    lanes = map(_word_lanes, shingles)
    minimum = next(lanes)
    for word in lanes:
        minimum = _lane_minimum(minimum, word)
    found = array("Q")
    found.frombytes(minimum.to_bytes(HASHES * _LANE // 8, "little"))
    if sys.byteorder == "big":
        found.byteswap()
    return found.tolist()[:hashes]


@lru_cache(maxsize=4096)  # a new entry's keys are written by the write path, then looked up with
def band_keys(text: str, bands: int) -> tuple[int, ...]:
    """One key per band of the first `bands` (none for a text with no word): the band's number and its ROWS
    minimum hashes, packed into one non-negative 64-bit integer, distinct per band number. No default number:
    a caller names the bands of the keys it stores (bands_for, or a migration's own count)."""
    m = signature(text, ROWS * bands)
    if not m:
        return ()
    mask, bits = _VALUE_MASK, _VALUE_BITS
    return tuple(  # ROWS is 2: the band's number, then its two values
        (((band << bits) | (m[2 * band] & mask)) << bits) | (m[2 * band + 1] & mask) for band in range(bands)
    )
