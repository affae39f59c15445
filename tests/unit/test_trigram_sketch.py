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
