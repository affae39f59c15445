"""Vector retrieval: an entry may carry the agent's embedding; /memory/search with an embedding returns the
exact nearest neighbours (compared with a brute-force computation here), for both metrics, with each hit's
distance, read from the published version."""

import math
import random

import pytest

from curation.rules import clock, vectors
from curation.models import Entry, ReleasedEntry, Status
from curation.selectors import retrieve_memory

pytestmark = pytest.mark.django_db

SCOPE = "acme/billing-api"
TAKE_ALL = {SCOPE: {"name": "take-all", "mode": "all"}}


@pytest.fixture
def take_all(settings):
    settings.CURATION_ADMISSION = TAKE_ALL


def _vector(rng, dims=5):
    return [round(rng.uniform(-2, 2), 4) for _ in range(dims)]


def _submit_many(agent, n, seed=7, dims=5):
    rng = random.Random(seed)
    made = {}
    for i in range(n):
        embedding = _vector(rng, dims)
        answer = agent.submit(
            scope=SCOPE, trigger=f"Lesson number {i} on topic{i}", content=f"Advice{i} holds{i}.", embedding=embedding
        )
        assert answer.status_code == 201, answer.json()
        assert answer.json()["status"] == "active"  # the scope's policy approved it at once
        made[answer.json()["id"]] = embedding
    return made


def _brute_force(query, made, metric, k):
    def d(v):
        if metric == "l2":
            return math.sqrt(sum((a - b) ** 2 for a, b in zip(query, v)))
        dot = sum(a * b for a, b in zip(query, v))
        return 1 - dot / (math.sqrt(sum(a * a for a in query)) * math.sqrt(sum(b * b for b in v)))

    return sorted(((d(v), pk) for pk, v in made.items()))[:k]


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_an_embedding_alone_answers_the_exact_nearest_first_with_distances(agent, take_all, metric):
    made = _submit_many(agent, 40)
    rng = random.Random(99)
    for _ in range(5):
        query = _vector(rng)
        answer = agent.post("memory/search", {"scope": SCOPE, "embedding": query, "metric": metric, "k": 6})
        assert answer.status_code == 200, answer.json()
        expected = _brute_force(query, made, metric, 6)
        got = answer.json()["entries"]
        assert [e["id"] for e in got] == [pk for _, pk in expected]
        assert [e["distance"] for e in got] == pytest.approx([d for d, _ in expected], abs=1e-5)
        assert answer.json()["metric"] == metric


def test_the_published_version_carries_the_embedding(agent, take_all):
    made = _submit_many(agent, 3)
    agent.post("memory/search", {"scope": SCOPE, "embedding": [0, 0, 0, 0, 1]})  # publishes first
    rows = {r.entry_id: r.embedding for r in ReleasedEntry.objects.filter(valid_to__isnull=True)}
    assert rows == made


def test_the_get_form_takes_numbers_joined_by_commas(agent, take_all):
    made = _submit_many(agent, 10)
    query = [0.5, -1, 0.25, 0, 1]
    answer = agent.get("memory", scope=SCOPE, embedding=",".join(map(str, query)), k="3")
    assert [e["id"] for e in answer.json()["entries"]] == [pk for _, pk in _brute_force(query, made, "l2", 3)]


def test_words_and_an_embedding_fuse_both_rankings(agent, take_all):
    made = _submit_many(agent, 12)
    target = next(iter(made))
    far = [-v for v in made[target]]
    answer = agent.post("memory/search", {"scope": SCOPE, "q": "topic0 advice0", "embedding": far, "k": 12})
    entries = answer.json()["entries"]
    # topic0 is first by words and among the farthest by distance: the fusion still keeps it, with its distance.
    assert target in [e["id"] for e in entries]
    hit = next(e for e in entries if e["id"] == target)
    assert hit["distance"] == pytest.approx(vectors.l2(far, made[target]), abs=1e-5)
    scores = [e["score"] for e in entries]
    assert scores == sorted(scores, reverse=True)


def test_the_live_draft_is_exact_too(agent, take_all):
    made = _submit_many(agent, 25, seed=3)
    query = [1, 1, 1, 1, 1]
    ranked = retrieve_memory(scopes=[SCOPE], k=6, min_confidence=0.0, embedding=query, metric="cosine")
    assert [r.entry.pk for r in ranked] == [pk for _, pk in _brute_force(query, made, "cosine", 6)]


def test_the_vector_search_keeps_the_confidence_floor(agent, take_all):
    made = _submit_many(agent, 12, seed=5)
    weak = list(made)[:4]
    Entry.objects.filter(pk__in=weak).update(base_confidence=0.3)  # under the floor asked below, above FLOOR
    query = [0, 0, 0, 0, 0]
    with clock.running_at(clock.now()):
        kept = retrieve_memory(scopes=[SCOPE], k=12, min_confidence=0.5, embedding=query, metric="l2")
        every = retrieve_memory(scopes=[SCOPE], k=12, min_confidence=0.0, embedding=query, metric="l2")
    strong = {pk: v for pk, v in made.items() if pk not in weak}
    assert [r.entry.pk for r in kept] == [pk for _, pk in _brute_force(query, strong, "l2", 12)]
    assert [r.entry.pk for r in every] == [pk for _, pk in _brute_force(query, made, "l2", 12)]


def test_decoded_vectors_are_the_stored_ones_and_bounded(monkeypatch):
    monkeypatch.setattr(vectors, "DECODED_FLOATS", 6)
    monkeypatch.setattr(vectors, "_decoded", {})
    monkeypatch.setattr(vectors, "_decoded_size", [0])
    texts = ["[1.5, -2.0, 3.25]", "[0.0, 1e-07, 2]", "[1.5, -2.0, 3.25]"]
    assert vectors.decode_vectors(texts) == [[1.5, -2.0, 3.25], [0.0, 1e-07, 2], [1.5, -2.0, 3.25]]
    assert vectors._decoded_size == [6] and len(vectors._decoded) == 2  # each text decoded once
    assert vectors.decode_vectors(["[4, 5]"]) == [[4, 5]]  # over the bound: the remembered ones are forgotten
    assert list(vectors._decoded) == ["[4, 5]"] and vectors._decoded_size == [2]


def test_a_wrong_dimension_is_a_422_naming_the_field(agent, take_all):
    _submit_many(agent, 1)
    answer = agent.submit(scope=SCOPE, trigger="Another lesson", content="Other.", embedding=[1.0, 2.0])
    assert answer.status_code == 422
    assert "5 numbers" in answer.json()["errors"]["embedding"][0]
    assert Entry.objects.count() == 1


def test_a_query_embedding_of_another_dimension_is_a_422_not_an_empty_answer(agent, take_all):
    _submit_many(agent, 3)
    answer = agent.post("memory/search", {"scope": SCOPE, "embedding": [1.0, 2.0, 3.0]})
    assert answer.status_code == 422
    assert answer.json()["errors"]["embedding"] == [f"The embeddings of {SCOPE} have 5 numbers; this one has 3."]
    get = agent.get(f"memory?scope={SCOPE}&embedding=1,2,3")
    assert get.status_code == 422 and "5 numbers" in get.json()["errors"]["embedding"][0]
    assert agent.post("memory/search", {"scope": SCOPE, "embedding": [0.0] * 5}).status_code == 200


def test_a_setting_fixes_the_dimension_before_any_entry(agent, take_all, settings):
    settings.CURATION = {**settings.CURATION, "EMBEDDING_DIMENSIONS": {"acme": 3}}
    assert agent.submit(scope=SCOPE, embedding=[1.0, 2.0]).status_code == 422
    assert agent.submit(scope=SCOPE, embedding=[1.0, 2.0, 3.0]).status_code == 201


@pytest.mark.parametrize(
    "body, field",
    [
        ({"embedding": "0.1,0.2"}, "embedding"),
        ({"embedding": [1, "x"]}, "embedding"),
        ({"embedding": []}, "embedding"),
        ({"embedding": [1, 2], "metric": "dot"}, "metric"),
    ],
)
def test_a_bad_query_embedding_or_metric_is_a_422(agent, body, field):
    answer = agent.post("memory/search", {"scope": SCOPE, **body})
    assert answer.status_code == 422 and field in answer.json()["errors"]


def test_a_bad_embedding_on_submission_is_a_422(agent):
    answer = agent.submit(scope=SCOPE, embedding=[1, True])
    assert answer.status_code == 422 and "embedding" in answer.json()["errors"]


def test_entries_without_an_embedding_are_not_vector_hits(agent, take_all):
    made = _submit_many(agent, 4)
    agent.submit(scope=SCOPE, trigger="No vector here", content="Words only.")
    answer = agent.post("memory/search", {"scope": SCOPE, "embedding": [0, 0, 0, 0, 0], "k": 10})
    assert {e["id"] for e in answer.json()["entries"]} == set(made)
    assert Entry.objects.filter(status=Status.ACTIVE).count() == 5
    assert clock.now()  # the one clock stamps what the policy approved


def test_cached_answers_keep_each_query_embedding_and_metric_apart(agent, take_all, settings):
    """With the retrieval cache on, the same scope and words asked with another embedding or metric is another
    question: each answer is still the exact nearest of its own."""
    settings.CURATION = {**settings.CURATION, "RETRIEVAL_CACHE_SECONDS": 300}
    made = _submit_many(agent, 30)
    rng = random.Random(5)
    queries = [_vector(rng), _vector(rng)]
    for _ in range(2):  # the second round answers from the cache
        for query in queries:
            for metric in ("l2", "cosine"):
                answer = agent.post("memory/search", {"scope": SCOPE, "embedding": query, "metric": metric, "k": 4})
                assert [e["id"] for e in answer.json()["entries"]] == [
                    pk for _, pk in _brute_force(query, made, metric, 4)
                ]
