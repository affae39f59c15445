"""Embeddings as pure functions: checking one, the two distances, and the fusion of a keyword ranking with a
vector ranking. Agents bring their own embedding model; memoryadmin only stores and compares the vectors.

Exact search: every candidate of the scope-filtered set is compared, so the answer is the true nearest
neighbours at the sizes a scope's capacity allows (pure Python, no extension needed)."""

from __future__ import annotations

import heapq
import json
import math

from django.core.exceptions import ValidationError

METRICS = ("cosine", "l2")
MAX_DIMENSIONS = 4096
# Reciprocal-rank fusion's constant: a hit ranked r-th in a list counts 1 / (RRF_K + r).
RRF_K = 60


def clean_embedding(value, *, field: str = "embedding", dimensions: int | None = None) -> list[float] | None:
    """A list of finite numbers (of `dimensions` numbers when given), or None; a ValidationError naming the
    field otherwise."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise ValidationError({field: ["A non-empty list of numbers."]})
    if len(value) > MAX_DIMENSIONS:
        raise ValidationError({field: [f"At most {MAX_DIMENSIONS} numbers (this has {len(value)})."]})
    cleaned = [float(v) for v in value]
    if not all(math.isfinite(v) for v in cleaned):
        raise ValidationError({field: ["Numbers only: no NaN or infinity."]})
    if dimensions is not None and len(cleaned) != dimensions:
        raise ValidationError({field: [f"{dimensions} numbers in this scope tree (this has {len(cleaned)})."]})
    return cleaned


def clean_metric(value) -> str:
    if value in (None, ""):
        return "l2"
    if value not in METRICS:
        raise ValidationError({"metric": [f"One of: {', '.join(METRICS)}."]})
    return value


def l2(a, b) -> float:
    return math.dist(a, b)


def cosine(a, b) -> float:
    """1 − cos(a, b): 0 for the same direction, 2 for the opposite; 1 when either is the zero vector."""
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norm == 0:
        return 1.0
    return 1.0 - sum(x * y for x, y in zip(a, b)) / norm


def distance(a, b, metric: str) -> float:
    return l2(a, b) if metric == "l2" else cosine(a, b)


# Vectors this process has decoded, by their stored JSON text (the same text is the same vector): an exact
# search reads every candidate's text each time, and parsing its floats cost more than the query and the
# comparison together (12 of 20 ms at 4,000 six-number vectors). Forgotten when it would hold more than
# DECODED_FLOATS numbers (about 32 MB).
DECODED_FLOATS = 1_000_000
_decoded: dict[str, list[float]] = {}
_decoded_size = [0]


def decode_vectors(texts) -> list[list[float]]:
    """The JSON texts of stored vectors, decoded (remembered per process: the lists are shared, read them
    only). Texts not seen yet are decoded in one call."""
    texts = list(texts)
    fresh = list(dict.fromkeys(t for t in texts if t not in _decoded))
    if fresh:
        vectors = json.loads("[" + ",".join(fresh) + "]")
        size = sum(len(v) for v in vectors if isinstance(v, list))
        if _decoded_size[0] + size > DECODED_FLOATS:
            _decoded.clear()
            _decoded_size[0] = 0
        _decoded.update(zip(fresh, vectors))
        _decoded_size[0] += size
    found = []
    for text in texts:
        vector = _decoded.get(text)
        found.append(vector if vector is not None else json.loads(text))  # forgotten meanwhile by another thread
    return found


def nearest(query, candidates, metric: str, limit: int) -> list[tuple[int, float]]:
    """The `limit` nearest of (id, embedding) pairs: (id, distance), nearest first, lower id first on a tie.
    Candidates of another dimension are never near (a scope tree keeps one dimension; this is a guard)."""
    size = len(query)
    if metric == "l2":
        scored = (
            (math.dist(query, vector), pk) for pk, vector in candidates if vector is not None and len(vector) == size
        )
    else:
        scored = (
            (cosine(query, vector), pk) for pk, vector in candidates if vector is not None and len(vector) == size
        )
    return [(pk, d) for d, pk in heapq.nsmallest(limit, scored)]


def fused(keyword_ids, vector_ids) -> dict[int, float]:
    """Reciprocal-rank fusion of two rankings (ids, best first): each id's sum of 1 / (RRF_K + rank)."""
    scores: dict[int, float] = {}
    for ranking in (keyword_ids, vector_ids):
        for rank, pk in enumerate(ranking, start=1):
            scores[pk] = scores.get(pk, 0.0) + 1.0 / (RRF_K + rank)
    return scores
