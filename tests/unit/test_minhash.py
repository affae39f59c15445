"""MinHash band keys are stored (curation_entryband): the same text must give the same keys in every process
and release. The minimum hashes are taken lane by lane for all hashes at once (minhash._lane_minimum): they
must be each hash's minimum over the text's words, as read one by one from the words' SHAKE-128 digests."""

import hashlib
import random
import struct

from curation.rules import minhash
from curation.rules.similarity import words

TEXT = (
    "Rotating the signing key of the billing webhook Always drain the webhook queue before you rotate the signing key."
)


def _minimum_hashes(text: str, hashes: int) -> list[int]:
    """Each hash's minimum over the text's words, read from each word's digest (little-endian 32-bit values)."""
    digests = [hashlib.shake_128(word.encode()).digest(4 * minhash.HASHES) for word in words(text)]
    if not digests:
        return []
    values = [struct.unpack(f"<{minhash.HASHES}I", digest) for digest in digests]
    return [min(column) for column in zip(*values)][:hashes]


def test_the_signature_is_each_hashs_minimum_over_the_words():
    rng = random.Random(5)
    vocabulary = [f"w{n}" for n in range(300)] + ["rebase", "queue", "the", "a", "drain", "0", "42", "zz9"]
    texts = ["", "the a of", "rebase", "rebase rebase REBASE", TEXT, " ".join(map(str, range(400)))]
    texts += [" ".join(rng.choice(vocabulary) for _ in range(rng.randrange(1, 60))) for _ in range(500)]
    for text in texts:
        for hashes in (minhash.HASHES, 2 * minhash.WORD_MEASURE_BANDS, 2, 1):
            assert minhash.signature(text, hashes) == _minimum_hashes(text, hashes), (text, hashes)


def test_a_texts_keys_are_the_ones_stored_before():
    """Keys written by earlier releases (these were computed by the code before the lane-wise minimum)."""
    keys = minhash.band_keys.__wrapped__(TEXT, minhash.BANDS)
    assert keys[:4] == (46427565116486012, 110120288818192900, 181930147786444635, 260082372128090213)
    assert keys[-1] == 3423310379892011341
    assert minhash.band_keys.__wrapped__(TEXT, minhash.WORD_MEASURE_BANDS)[-1] == 2258886857903595932
    assert minhash.signature(TEXT)[:6] == [172956157, 781054332, 141794587, 429023748, 140871702, 415158107]
