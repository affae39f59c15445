"""rows.insert_rows writes what bulk_create writes: every column of every row, a redacting column's cleaning,
times to the microsecond, dates, JSON values (an empty list, a null, nested objects), the defaults the
instance holds; and it gives each instance its id, in order."""

import datetime

import pytest
from django.db import connection

from curation.models import Entry, Evidence, SimilarEntry
from curation.services.rows import insert_rows
from tests.factories import active

pytestmark = pytest.mark.django_db

AT = datetime.datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=datetime.UTC)


def _entry(**fields) -> Entry:
    values = {
        "kind": "action",
        "scope": "acme/billing",
        "trigger": "Rotating the signing key",
        "content": "Mail ops@example.com and use key AKIAIOSFODNN7EXAMPLE before rotating.",
        "conditions": [{"when": "token sk_live_abcdefghijklmnopqrstuvwx is old"}, "on fridays"],
        "boundary": "never in prod",
        "review_by": datetime.date(2031, 2, 3),
        "signal": "strong",
        "base_confidence": 0.123456789,
        "last_verified_at": AT,
        "status": "active",  # a twin of a pending one would be refused: one pending lesson per fingerprint
        "queued_at": None,
        "queue_reason": "",
        "flags": [{"kind": "injection", "detail": "asks to ignore"}],
        "quarantined": True,
        "fingerprint": "f" * 64,
        "embedding": [0.25, -1.5e-7, 3.0],
        "source_task": "task with ops@example.com",
        "created_by_label": "agent:ci",
        "created_at": AT,
        "updated_at": AT,
    }
    return Entry(**{**values, **fields})


def _columns(model, pks):
    fields = [f.attname for f in model._meta.concrete_fields if f.attname != "id" and not f.generated]
    return [model.objects.filter(pk=pk).values(*fields).get() for pk in pks]


def test_the_rows_are_the_ones_bulk_create_writes_and_the_instances_get_their_ids(reviewer):
    ours = [_entry(), _entry(trigger="Second", embedding=None, conditions=[], review_by=None, last_verified_at=None)]
    theirs = [_entry(), _entry(trigger="Second", embedding=None, conditions=[], review_by=None, last_verified_at=None)]
    insert_rows(ours)
    Entry.objects.bulk_create(theirs)
    assert [e.pk for e in ours] == sorted(e.pk for e in ours) and None not in [e.pk for e in ours]
    assert _columns(Entry, [e.pk for e in ours]) == _columns(Entry, [e.pk for e in theirs])
    stored = Entry.objects.get(pk=ours[0].pk)
    assert "ops@example.com" not in stored.content + str(stored.conditions) + stored.source_task
    assert "AKIAIOSFODNN7EXAMPLE" not in stored.content and "sk_live_" not in str(stored.conditions)
    assert (stored.last_verified_at, stored.embedding, ours[1].embedding) == (AT, [0.25, -1.5e-7, 3.0], None)
    assert not ours[0]._state.adding

    known = active(reviewer, scope="acme/billing", trigger="A known lesson", content="Known.")
    pieces = [
        Evidence(
            entry=ours[0], kind="test", signal="strong", excerpt="saw ops@example.com", observed_at=AT, created_at=AT
        ),
        Evidence(entry=ours[0], kind="log", signal="weak", excerpt="ok", observed_at=AT, created_at=AT, score=0.5),
    ]
    twins = [
        Evidence(
            entry=theirs[0], kind="test", signal="strong", excerpt="saw ops@example.com", observed_at=AT, created_at=AT
        ),
        Evidence(entry=theirs[0], kind="log", signal="weak", excerpt="ok", observed_at=AT, created_at=AT, score=0.5),
    ]
    insert_rows(pieces)
    Evidence.objects.bulk_create(twins)
    drop = {"entry_id"}
    ours_ev = [{k: v for k, v in row.items() if k not in drop} for row in _columns(Evidence, [p.pk for p in pieces])]
    theirs_ev = [{k: v for k, v in row.items() if k not in drop} for row in _columns(Evidence, [p.pk for p in twins])]
    assert ours_ev == theirs_ev and all(p.entry_id == ours[0].pk for p in pieces)
    insert_rows([SimilarEntry(candidate=ours[0], similar_id=known.pk, score=0.875)])
    assert list(SimilarEntry.objects.filter(candidate=ours[0]).values_list("similar_id", "score")) == [
        (known.pk, 0.875)
    ]


def test_on_postgresql_the_rows_go_as_one_statement_of_one_parameter(django_assert_num_queries):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite inserts through bulk_create")
    with django_assert_num_queries(1) as captured:
        insert_rows([_entry(trigger=f"Lesson {n}") for n in range(50)])
    assert "json_populate_recordset" in captured.captured_queries[0]["sql"]


def test_values_of_other_types_than_the_column_stores_are_written_as_bulk_create_writes_them(reviewer):
    """What the document takes as it is (a str, an int, a float, a bool, an aware time, a date) and what
    goes through the field: a naive time (made aware), a time given to a date column (its date), numbers
    given as text, a choices member (its value), a bool given as a number, a link given as an object."""
    from curation.rules.trust import Trust

    naive = datetime.datetime(2026, 3, 4, 5, 6, 7, 123)
    odd = {
        "review_by": datetime.datetime(2031, 2, 3, 23, 30, tzinfo=datetime.UTC),
        "base_confidence": "0.25",
        "decay_key": 3,
        "hit_count": "7",
        "trust": Trust.AGENT,
        "trust_origin": True,
        "quarantined": 1,
        "created_by": reviewer,
        "scope": "acme/ops",
        "archive_reason": 12,
    }
    with pytest.warns(RuntimeWarning, match="naive datetime"):
        ours, theirs = _entry(**odd, queued_at=naive), _entry(**odd, queued_at=naive, trigger="Theirs")
        insert_rows([ours])
        Entry.objects.bulk_create([theirs])
    mine, twin = _columns(Entry, [ours.pk, theirs.pk])
    assert {k: v for k, v in mine.items() if k != "trigger"} == {k: v for k, v in twin.items() if k != "trigger"}
    assert (mine["review_by"], mine["base_confidence"], mine["hit_count"]) == (datetime.date(2031, 2, 3), 0.25, 7)
    assert (mine["trust"], mine["quarantined"], mine["created_by_id"]) == (int(Trust.AGENT), True, reviewer.pk)
    assert mine["queued_at"] == naive.replace(tzinfo=datetime.UTC) and mine["archive_reason"] == "12"


def test_events_are_the_rows_bulk_create_writes(reviewer):
    """record_events' rows (rows.insert_rows): an entry's Event, a redacted reason and label, JSON before and
    after with nested values and a null, an actor, no request id."""
    from curation.models import Event, EventAction
    from curation.services.events import build_event, record_events

    entry = active(reviewer, scope="acme/billing", trigger="Rotating with ops@example.com", content="Known.")

    def events():
        return [
            build_event(
                entry,
                actor=reviewer,
                action=EventAction.RESUBMIT,
                reason="submitted again by ops@example.com",
                after={"evidence_added": 2, "source_task": "t", "nested": {"list": [1, None, "x"]}},
                at=AT,
                request_id="req-1",
            ),
            build_event(entry, actor=None, actor_label="agent:ci", action=EventAction.RESUBMIT, before=None, at=AT),
        ]

    ours, theirs = record_events(events()), Event.objects.bulk_create(events())
    assert None not in [e.pk for e in ours] and not ours[0]._state.adding
    assert _columns(Event, [e.pk for e in ours]) == _columns(Event, [e.pk for e in theirs])
    stored = Event.objects.get(pk=ours[0].pk)
    assert "ops@example.com" not in stored.reason + stored.entry_label
    assert (stored.after["nested"], stored.actor_id, stored.entry_id) == (
        {"list": [1, None, "x"]},
        reviewer.pk,
        entry.pk,
    )


def _built(obj) -> tuple[dict, dict, str | None, bool]:
    """What an instance holds: its attributes (the ModelState aside), its cached links, its state."""
    attributes = {k: v for k, v in obj.__dict__.items() if k != "_state"}
    return attributes, dict(obj._state.fields_cache), obj._state.db, obj._state.adding


def test_new_instance_builds_what_the_models_own_constructor_builds(reviewer):
    """rows.new_instance, which ingest builds its entries and evidence with, holds what Model(**values) holds:
    every field's value given or its default (a made one made anew: a list, a time), a link given as an
    object (its id and cache, the router's database), as None, or as an id; and it falls back to the model's
    own constructor for what it does not know (a property), so the two never differ."""
    from curation.models import Event, EventAction
    from curation.rules.trust import Trust
    from curation.services.rows import new_instance

    known = active(reviewer, scope="acme/billing", trigger="A known lesson", content="Known.")
    values = _entry(created_by=reviewer, held_by=None, trust=Trust.AGENT).__dict__
    given = {k: v for k, v in values.items() if k not in ("_state", "id", "created_by_id", "held_by_id")}
    cases = [
        (Entry, {**given, "created_by": reviewer, "held_by": None}),
        (Entry, {**given, "created_by_id": reviewer.pk, "supersedes": known}),
        (Entry, {"scope": "acme/billing", "trigger": "t", "content": "c", "created_at": AT, "updated_at": AT}),
        (Evidence, {"entry": known, "kind": "test", "signal": "strong", "excerpt": "saw it", "created_at": AT}),
        (Evidence, {"entry": Entry(scope="acme/x"), "kind": "log", "excerpt": "unsaved entry", "created_at": AT}),
        (
            Event,
            {"entry": known, "actor": reviewer, "action": EventAction.RESUBMIT, "after": {"a": [1]}, "created_at": AT},
        ),
        (Entry, {**given, "pk": 7}),  # a property: the model's own constructor
    ]
    for model, fields in cases:
        ours, theirs = new_instance(model, **fields), model(**fields)
        assert type(ours) is model and _built(ours) == _built(theirs), (model, fields)
    made = [new_instance(Entry, scope="acme/billing") for _ in range(2)]
    assert made[0].conditions == [] and made[0].conditions is not made[1].conditions  # default=list: one each
    assert new_instance(Evidence, entry=known).entry is known
