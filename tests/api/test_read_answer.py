"""An agent's read answers the same body however its CPU is spent: the shape of the answer, and its
entries built only for what it answers (the ranking's other candidates are judged on their rows)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from curation.selectors import releases

pytestmark = pytest.mark.django_db

ENTRY_KEYS = [
    "boundary",
    "conditions",
    "confidence",
    "content",
    "id",
    "kind",
    "last_verified_at",
    "scope",
    "score",
    "signal",
    "trigger",
    "trust",
]
ANSWER_KEYS = [
    "arm",
    "context",
    "entries",
    "memory_version",
    "metric",
    "min_confidence",
    "min_trust",
    "retrieval_id",
    "scope",
]


def test_a_read_answers_the_same_body(agent, approved):
    entry = approved(
        scope="acme/billing-api",
        trigger="When the ledger migration stalls",
        content="Take the ledger lock before migrating ledger tables.",
        conditions=["postgres"],
    )
    body = agent.retrieve(scope="acme/billing-api", q="ledger migration", k=3).json()
    assert sorted(body) == ANSWER_KEYS
    assert (body["scope"], body["min_confidence"], body["min_trust"], body["metric"], body["arm"]) == (
        "acme/billing-api",
        0.5,
        "untrusted",
        None,
        "memory",
    )
    [shown] = body["entries"]
    assert sorted(shown) == ENTRY_KEYS
    entry.refresh_from_db()
    assert {name: shown[name] for name in ("id", "kind", "scope", "trigger", "content", "conditions", "boundary")} == {
        "id": entry.pk,
        "kind": entry.kind,
        "scope": "acme/billing-api",
        "trigger": "When the ledger migration stalls",
        "content": "Take the ledger lock before migrating ledger tables.",
        "conditions": ["postgres"],
        "boundary": entry.boundary,
    }
    assert shown["confidence"] == round(entry.confidence, 4) and isinstance(shown["score"], float)
    assert shown["last_verified_at"] == (entry.last_verified_at.isoformat() if entry.last_verified_at else None)
    assert "Take the ledger lock before migrating ledger tables." in body["context"]


def test_only_the_entries_answered_are_built(agent, approved, monkeypatch, on_postgres):
    """Of the ranking's candidates, the near duplicates and those past k are left as rows."""
    for i in range(6):
        approved(
            scope="acme/billing-api", trigger=f"When the ledger job {i} stalls", content=f"Restart ledger job {i}."
        )
    approved(scope="acme/billing-api", trigger="When the ledger job 0 stalls", content="Restart the ledger job 0.")
    built = []
    released_entry = releases.released_entry
    monkeypatch.setattr(releases, "released_entry", lambda *a: built.append(a[0]) or released_entry(*a))

    entries = agent.retrieve(scope="acme/billing-api", q="ledger job stalls", k=3).json()["entries"]

    assert len(entries) == 3
    assert built == [e["id"] for e in entries]


def _ranking_statements(queries) -> list[str]:
    return [q["sql"] for q in queries if "curation_releasedentry" in q["sql"] and "word_similarity" in q["sql"]]


def test_a_read_by_words_fetches_no_embedding(agent, approved, on_postgres):
    """An answer never shows an entry's embedding (an agent's vector, its largest field): the ranking leaves
    it in the table."""
    approved(scope="acme/billing-api", trigger="When the ledger stalls", content="Drain it.", embedding=[0.5] * 64)
    with CaptureQueriesContext(connection) as queries:
        body = agent.get("memory", scope="acme/billing-api", q="ledger", k=1).json()
    [shown] = body["entries"]
    assert shown["trigger"] == "When the ledger stalls" and sorted(shown) == ENTRY_KEYS
    [ranking] = _ranking_statements(queries.captured_queries)
    assert "e.embedding" not in ranking and "e.content" in ranking


def test_words_with_an_embedding_measure_a_word_hit_far_from_the_query(agent, settings):
    """The fusion of words and an embedding gives each hit its distance, also a hit the words found among
    the farthest vectors (its vector then comes with the word ranking's rows)."""
    settings.CURATION_ADMISSION = {"acme/billing-api": {"name": "take-all", "mode": "all"}}
    made = {}
    for i in range(20):
        vector = [float(i), 0.0, 1.0]
        answer = agent.submit(
            scope="acme/billing-api", trigger=f"Lesson {i} on topic{i}", content=f"Advice{i}.", embedding=vector
        )
        made[answer.json()["id"]] = vector
    target = next(pk for pk, vector in made.items() if vector[0] == 19.0)  # the farthest from the query
    query = [0.0, 0.0, 1.0]
    body = agent.post("memory/search", {"scope": "acme/billing-api", "q": "topic19", "embedding": query, "k": 2}).json()
    hit = next(e for e in body["entries"] if e["id"] == target)
    assert hit["distance"] == pytest.approx(19.0)


def test_an_answer_says_one_confidence_per_entry(agent, approved, monkeypatch):
    """An entry's confidence in the answer's entries and in its context block are read at one moment: with a
    clock that moves a day at each reading, they still agree."""
    import re

    from curation.rules import config
    from tests.factories import clock_moving_a_day_a_reading

    approved(scope="acme/billing-api", trigger="When the ledger migration stalls", content="Take the ledger lock.")
    agent.retrieve(scope="acme/billing-api", q="ledger")  # published, the token kept: only the read below
    clock_moving_a_day_a_reading(monkeypatch)
    with config.overriding(DECAY_FACTOR=0.5):
        body = agent.retrieve(scope="acme/billing-api", q="ledger migration").json()
    [shown] = body["entries"]
    [line] = re.findall(r"confidence (\d\.\d\d)", body["context"])
    assert abs(shown["confidence"] - float(line)) <= 0.005, (shown["confidence"], line)
