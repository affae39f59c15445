"""The trigram sketch rules a pair out before the database scores it (selectors.similar): its bound must never
fall below the pair's trigram similarity, or a near duplicate would be lost; and it must be near it, or it
rules nothing out."""

import random

from curation.rules.similarity import jaccard, trigram_similarity_bound, trigram_sketch, trigrams

WORDS = (
    "rotate rotating signing key webhook billing drain queue deploy helm chart pin version index partition "
    "alter reindex concurrently cache flaky runner job retry timeout lock replica lag failover restore"
).split()


def test_the_bound_is_never_below_the_trigram_similarity_and_close_to_it():
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 30))) for _ in range(300)]
    texts += [t + " " + rng.choice(WORDS) for t in texts[:100]]  # close pairs too
    gaps = []
    for _ in range(5000):
        a, b = rng.choice(texts), rng.choice(texts)
        exact = jaccard(trigrams(a), trigrams(b))
        bound = trigram_similarity_bound(trigram_sketch(trigrams(a)), trigram_sketch(trigrams(b)))
        assert bound >= exact, (a, b)
        gaps.append(bound - exact)
    gaps.sort()
    assert gaps[len(gaps) // 2] < 0.05


def test_a_text_beyond_ascii_has_no_trigrams_here_and_a_sketch_counts_them():
    assert trigrams("Ротация ключа webhook") is None
    assert trigram_sketch(trigrams("plain text"))[0] == 11  # "  p" " pl" "pla" "lai" "ain" "in " and five of "text"


def test_a_texts_trigrams_and_sketch_from_its_words_are_those_of_its_trigrams_one_by_one():
    """sketched_trigrams (what the lookup reads of each text) unites its words' remembered trigrams and sketch
    bits: the same set as cutting every word of the text, and the same sketch as hashing every trigram."""
    import re

    from curation.rules.similarity import sketched_trigrams

    def cut(text):  # pg_trgm's trigrams, word by word, as the database forms them
        grams = set()
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            padded = f"  {word} "
            grams.update(padded[k : k + 3] for k in range(len(word) + 1))
        return frozenset(grams)

    def sketch(grams):
        bits = 0
        for gram in grams:
            bits |= 1 << (hash(gram) & 4095)
        return len(grams), bits.bit_count(), bits

    rng = random.Random(11)
    alphabet = "abcXYZ019 .-_'\n\t"
    texts = ["", "   ", "a", "x" * 70 + " y", "Rotate the signing key", "rotate rotate ROTATE"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90))) for _ in range(3000)]
    texts += [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 30))) for _ in range(300)]
    for text in texts:
        assert sketched_trigrams(text) == (cut(text), sketch(cut(text))) and trigrams(text) == cut(text), text
    assert sketched_trigrams("Ротация ключа webhook") is None
