"""Retrieval from a published version ranks like retrieval from the live rows, a pinned older version
keeps its answer after later publishes, and on PostgreSQL the published read is served by the (scope,
word) index of the open released rows (migration 0020)."""

import pytest
from django.db import connection
from django.utils import timezone

from curation import selectors, services
from curation.models import Entry, Status
from curation.selectors import releases as reads
from curation.services.releases import publish_version
from tests.factories import active, record_uses
from tests.selectors.test_postgres_indexes import _fill_other_scopes, _plans_of

pytestmark = pytest.mark.django_db

SCOPES = ["acme", "acme/billing-api"]


def _answer(ranked):
    return [(r.entry.pk, r.entry.content) for r in ranked]


def _released(number, q, **kwargs):
    return _answer(reads.retrieve_released(number, scopes=SCOPES, q=q, k=5, min_confidence=0, **kwargs))


def _live(q):
    return _answer(selectors.retrieve_memory(scopes=SCOPES, q=q, k=5, min_confidence=0))


@pytest.fixture
def lessons(reviewer):
    return [
        active(
            reviewer,
            scope="acme/billing-api",
            trigger="Restarting the billing worker",
            content="Always drain the invoice queue first.",
            boundary="b",
            confidence=0.9,
        ),
        active(
            reviewer,
            scope="acme",
            trigger="Rotating the webhook secret",
            content="Drain pending webhook deliveries before rotating.",
            boundary="b",
            confidence=0.7,
        ),
        active(
            reviewer,
            scope="acme/billing-api",
            trigger="Running ledger migrations",
            content="Lock the ledger table before migrating.",
            boundary="b",
            confidence=0.8,
        ),
        active(
            reviewer,
            scope="other/web",
            trigger="Restarting the web worker",
            content="Drain the queue of the web worker.",
            boundary="b",
            confidence=0.9,
        ),
    ]


def test_the_published_version_answers_what_the_live_rows_answer(lead, lessons):
    version = publish_version(actor=lead, summary="everything")
    for q in ("drain queue", "restarting worker", "ledger", "", "nothing matches this"):
        assert _released(version.number, q) == _live(q), q
    assert [pk for pk, _ in _released(version.number, "drain queue")] == [lessons[0].pk, lessons[1].pk]


def test_a_pinned_version_keeps_its_answer_after_later_publishes(lead, reviewer, lessons):
    v2 = publish_version(actor=lead, summary="v2")
    before = _released(v2.number, "drain queue")
    retired = lessons[1]
    record_uses(retired, ["failure"], end=timezone.now(), confirm_failures=False)  # back in the queue
    retired.refresh_from_db()
    services.reject_candidate(retired.pk, actor=reviewer, expected_version=retired.version, reason="wrong on recheck")
    added = active(
        reviewer,
        scope="acme/billing-api",
        trigger="Draining a stuck queue",
        content="Drain the queue by hand when the worker hangs.",
        boundary="b",
        confidence=0.95,
    )
    v3 = publish_version(actor=lead, summary="v3")

    assert _released(v2.number, "drain queue") == before  # the retired entry is still in version 2
    assert lessons[1].pk not in [pk for pk, _ in _released(v3.number, "drain queue")]
    assert _released(v3.number, "drain queue")[0][0] == added.pk
    assert _released(v3.number, "drain queue") == _live("drain queue")


def test_released_rows_below_the_minimum_confidence_are_left_out(lead, lessons):
    version = publish_version(actor=lead, summary="everything")
    answer = reads.retrieve_released(version.number, scopes=SCOPES, q="drain queue", k=5, min_confidence=0.8)
    assert [r.entry.pk for r in answer] == [lessons[0].pk]


def test_the_published_read_uses_the_open_rows_scoped_word_index(on_postgres, lead, reviewer, lessons):
    version = publish_version(actor=lead, summary="everything")
    _fill_other_scopes(3000)
    with connection.cursor() as cursor:
        # Released as version 1's rows, still open: the planner weighs the index as at scale.
        cursor.execute("""
            INSERT INTO curation_releasedentry (entry_id, valid_from, entry_version, kind, scope, trigger, content,
                                                conditions, boundary, signal, base_confidence, fingerprint)
            SELECT id, 1, version, kind, scope, trigger, content, conditions, boundary, signal, base_confidence,
                   fingerprint
            FROM curation_entry WHERE scope LIKE 'other/s%%'
        """)
        cursor.execute("ANALYZE curation_releasedentry")
    plan = _plans_of(
        lambda: reads.retrieve_released(version.number, scopes=SCOPES, q="drain queue", k=5, min_confidence=0)
    )
    assert "released_entry_open_scoped_lexeme_idx" in plan, plan


def test_the_open_rows_index_keeps_no_pending_list(on_postgres):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'released_entry_open_scoped_lexeme_idx'")
        assert "fastupdate=off" in cursor.fetchone()[0]


def test_a_released_row_reads_as_the_entry_keyword_construction_would_build(lessons, lead):
    """released_entry builds the Entry from every field's value in order (for speed): each field holds what
    Entry(**values) would give it, so a field added with a computed default cannot be left empty."""
    publish_version(actor=lead, summary="first")
    row = reads.released_entries(reads.published_number()).get(entry_id=lessons[0].pk)
    fast = reads.as_entry(row)
    values = {name: getattr(row, name) for name in reads.RELEASED_FIELDS}
    slow = Entry(pk=row.entry_id, **values, status=Status.ACTIVE)
    now_fields = {"created_at", "updated_at"}  # the moment of reading, in both
    for field in Entry._meta.concrete_fields:
        if field.attname not in now_fields:
            assert getattr(fast, field.attname) == getattr(slow, field.attname), field.attname
    assert (fast._state.adding, fast._state.db) == (slow._state.adding, slow._state.db)  # a new, unsaved instance
    assert fast.pk == lessons[0].pk and fast.content == lessons[0].content
    assert fast.confidence == pytest.approx(lessons[0].confidence, abs=1e-6)


def test_the_ranking_reads_its_times_in_c_and_answers_djangos_own(on_postgres, lead, lessons, monkeypatch):
    """The pool's rows are read for the few answered: their times through psycopg's own loader, not Django's
    Python one; each answered entry still holds the time as Django reads it, in the connection's zone."""
    from django.db.backends.postgresql import psycopg_any

    verified = timezone.now() - timezone.timedelta(days=3)
    Entry.objects.filter(pk__in=[e.pk for e in lessons]).update(last_verified_at=verified)
    version = publish_version(actor=lead, summary="everything")
    read_by_django = []
    load = psycopg_any.BaseTzLoader.load
    monkeypatch.setattr(
        psycopg_any.BaseTzLoader, "load", lambda self, data: read_by_django.append(data) or load(self, data)
    )

    ranked = reads.retrieve_released(version.number, scopes=SCOPES, q="drain queue", k=5, min_confidence=0)

    assert read_by_django == []
    assert ranked and {r.entry.last_verified_at for r in ranked} == {verified}
    assert {r.entry.last_verified_at.tzinfo for r in ranked} == {connection.timezone}


def test_the_ranking_follows_the_confidence_rules_in_force(lead, lessons):
    """The released ranking's statement embeds the decay rules: a change of them reads through the next
    ranking in the same process (an entry unverified for a year is at its base without decay, far below
    the floor with it)."""
    from datetime import timedelta

    from curation.rules import config

    Entry.objects.filter(pk=lessons[0].pk).update(last_verified_at=timezone.now() - timedelta(days=365))
    version = publish_version(actor=lead, summary="everything")

    def found():
        ranked = reads.retrieve_released(version.number, scopes=SCOPES, q="drain queue", k=5, min_confidence=0.5)
        return lessons[0].pk in [r.entry.pk for r in ranked]

    with config.overriding(DECAY_FACTOR=1.0):
        assert found()
    with config.overriding(DECAY_FACTOR=0.5):
        assert not found()
    with config.overriding(DECAY_FACTOR=1.0):
        assert found()
