"""An agent's read answers the same body however its CPU is spent: the shape of the answer, and its
entries built only for what it answers (the ranking's other candidates are judged on their rows)."""

import pytest

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
