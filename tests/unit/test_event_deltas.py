"""An entry's Events store what changed, and any version folds back from them (rules/event_deltas.py)."""

from curation.rules.event_deltas import STATE_KEYS, VERSION_KEY, delta, fold, version_at

FIRST = {
    "status": "pending",
    "scope": "acme/billing",
    "trigger": "When the webhook retries",
    "content": "Check the idempotency key first",
    "conditions": ["webhook"],
    "boundary": "",
    "confidence": 0.5,
    "queued_at": "2026-12-01T10:00:00+00:00",
    "version": 1,
}


def test_an_insert_stores_its_whole_first_version_without_the_version_number():
    old, new = delta(None, FIRST)
    assert old is None
    assert new == {k: v for k, v in FIRST.items() if k != "version"}


def test_a_write_stores_only_the_fields_it_changed_old_and_new_and_the_words_it_adds():
    approved = {**FIRST, "status": "active", "queued_at": None, "version": 2}
    old, new = delta(FIRST, {**approved, "conflict": 7})
    assert old == {"status": "pending", "queued_at": "2026-12-01T10:00:00+00:00"}
    assert new == {"status": "active", "queued_at": None, "conflict": 7}


def test_a_write_that_changes_nothing_the_snapshot_shows_stores_empty_deltas():
    assert delta(FIRST, {**FIRST, "version": 2}) == ({}, {})


def test_every_version_folds_back_from_the_deltas():
    v2 = {**FIRST, "status": "active", "queued_at": None, "version": 2}
    v3 = {**v2, "content": "Check the idempotency key, then the retry count", "version": 3}
    deltas = [(1, delta(None, FIRST)[1]), (2, delta(FIRST, v2)[1]), (3, delta(v2, v3)[1])]
    assert [state for _, state in fold(deltas)] == [FIRST, v2, v3]
    assert version_at(deltas, 2) == v2
    assert version_at(deltas, 9) is None


def test_the_words_a_write_adds_are_not_part_of_a_version():
    v2 = {**FIRST, "status": "superseded", "version": 2}
    deltas = [(1, delta(None, FIRST)[1]), (2, delta(FIRST, {**v2, "superseded_by": 12})[1])]
    assert version_at(deltas, 2) == v2


def test_an_older_event_with_a_whole_snapshot_folds_the_same_way():
    v2 = {**FIRST, "status": "active", "queued_at": None, "version": 2}
    v3 = {**v2, "boundary": "Not for refunds", "version": 3}
    # An Event written before deltas carries the whole snapshot (version included) in `after`.
    mixed = [(1, FIRST), (2, v2), (3, delta(v2, v3)[1])]
    assert [state for _, state in fold(mixed)] == [FIRST, v2, v3]


def test_the_fold_of_no_events_is_no_version():
    assert fold([]) == []


def test_the_state_a_version_folds_is_every_key_of_an_entrys_snapshot():
    # The snapshot is built from STATE_KEYS, so a key cannot vanish from the fold (the trust level did): each
    # key but the derived confidence must name a column of the entry, read with the columns SNAPSHOT_FIELDS
    # loads, and a whole snapshot folds back to itself.
    from curation.models import DERIVED_CONFIDENCE, SNAPSHOT_FIELDS, STATE_COLUMNS, Entry
    from curation.rules import clock

    assert set(STATE_COLUMNS) == set(STATE_KEYS) - {DERIVED_CONFIDENCE}
    for key, column in STATE_COLUMNS.items():
        assert Entry._meta.get_field(key).attname == column
    assert set(STATE_COLUMNS.values()) <= set(SNAPSHOT_FIELDS)
    entry = Entry(pk=1, base_confidence=0.5, created_at=clock.now(), version=1, trust=2, quarantined=True)
    snapshot = entry.snapshot()
    assert list(snapshot) == [*STATE_KEYS, VERSION_KEY]
    assert (snapshot["trust"], snapshot["quarantined"], snapshot["base_confidence"]) == (2, True, 0.5)
    assert fold([(1, delta(None, snapshot)[1])]) == [(1, snapshot)]
