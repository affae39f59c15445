"""Publishing and rolling back memory versions: what agents read changes only here, with its Event."""

import pytest
from django.core.exceptions import ValidationError

from curation import services
from curation.models import Conflict, Event, EventAction, MemoryVersion, PublishedVersion, ReleasedEntry
from curation.selectors import releases as reads
from curation.services.releases import UnacknowledgedWarnings, publish_version, rollback_version
from django.utils import timezone

from tests.factories import active, record_uses


def _ids(number, **kwargs):
    return sorted(reads.released_entries(number, **kwargs).values_list("entry_id", flat=True))


def test_version_one_exists_after_migrate_and_is_published(db):
    version = reads.published_version()
    assert version.number == 1 and version.published_by_label == "migration"
    assert not Event.objects.exists()  # the upgrade decided nothing: version 1 is what agents already read


def test_an_approval_is_pending_until_a_lead_publishes_it(lead, reviewer):
    entry = active(reviewer, scope="acme/billing-api", boundary="not on Windows")
    changes = reads.pending_changes()
    assert [(c.subject_id, c.kind) for c in changes] == [(entry.pk, "added")]
    assert changes[0].cause.action == EventAction.APPROVE  # why it is pending: the approval's Event
    assert _ids(1) == []

    version = publish_version(actor=lead, summary="billing lessons")

    assert version.number == 2 and version.added == 1 and version.published_by == lead
    assert reads.published_version() == version
    assert _ids(2) == [entry.pk] and _ids(1) == []  # version 1 is unchanged: immutable
    event = Event.objects.get(memory_version=version)
    assert (event.action, event.actor, event.reason) == (EventAction.VERSION_PUBLISHED, lead, "billing lessons")
    assert event.after["added"] == 1 and event.before == {"published": 1}
    assert reads.pending_changes() == []


def test_a_warning_must_be_acknowledged(lead, reviewer):
    entry = active(reviewer, scope="acme/billing-api", boundary="")
    with pytest.raises(UnacknowledgedWarnings) as refused:
        publish_version(actor=lead, summary="no boundary")
    assert [(w.check, w.entry_id) for w in refused.value.warnings] == [("no_boundary", entry.pk)]
    assert MemoryVersion.objects.count() == 1 and reads.published_version().number == 1  # nothing written

    version = publish_version(actor=lead, summary="no boundary", acknowledge=True)
    assert version.acknowledged == [
        {"check": "no_boundary", "entry": entry.pk, "text": f"#{entry.pk} says nothing about when it does not hold."}
    ]


def test_nothing_pending_or_no_summary_is_refused(lead):
    with pytest.raises(ValidationError) as empty:
        publish_version(actor=lead, summary="nothing")
    assert "Nothing to publish" in str(empty.value)
    with pytest.raises(ValidationError) as no_summary:
        publish_version(actor=lead, summary="  ")
    assert "summary" in no_summary.value.message_dict


def test_publish_under_a_scope_prefix_leaves_the_rest_pending(lead, reviewer):
    billing = active(reviewer, scope="acme/billing-api", boundary="b")
    web = active(reviewer, scope="acme/web", boundary="b")
    publish_version(actor=lead, summary="billing only", scope_prefix="acme/billing-api")
    assert _ids(2) == [billing.pk]
    assert [c.subject_id for c in reads.pending_changes()] == [web.pk]


def test_an_edit_is_a_changed_row_with_field_diffs_and_retire_removes(lead, reviewer):
    entry = active(reviewer, scope="acme/billing-api", boundary="b", confidence=0.7)
    publish_version(actor=lead, summary="v2")
    record_uses(entry, ["failure"], end=timezone.now(), confirm_failures=False)  # back in the queue
    entry.refresh_from_db()
    [change] = reads.pending_changes()
    assert change.kind == "changed" and {f.name for f in change.fields} == {"base_confidence"}
    assert change.cause.action == EventAction.OUTCOME_FAILURE
    services.reject_candidate(entry.pk, actor=reviewer, expected_version=entry.version, reason="wrong on recheck")
    [change] = reads.pending_changes()
    assert change.kind == "removed" and change.cause.action == EventAction.RETIRE
    publish_version(actor=lead, summary="v3")
    assert _ids(2) == [entry.pk] and _ids(3) == []
    assert [c.kind for c in reads.version_diff(2, 3)] == ["removed"]
    assert [c.kind for c in reads.version_diff(3, 2)] == ["added"]
    # storage grows with the changes: one row for the entry's one released state
    assert ReleasedEntry.objects.filter(entry=entry).count() == 1


def test_rollback_switches_the_pointer_and_keeps_the_live_rows(lead, reviewer):
    first = active(reviewer, scope="acme/billing-api", boundary="b")
    publish_version(actor=lead, summary="v2")
    second = active(reviewer, scope="acme/billing-api", boundary="b", trigger="Another trigger entirely here")
    publish_version(actor=lead, summary="v3")

    rollback_version(2, actor=lead, reason="v3 broke the billing agent")

    assert reads.published_version().number == 2
    second.refresh_from_db()
    assert second.status == "active"  # live rows untouched
    event = Event.objects.filter(action=EventAction.VERSION_ROLLED_BACK).get()
    assert event.memory_version.number == 2 and event.reason == "v3 broke the billing agent"
    assert event.before == {"published": 3} and event.after["removed"] == 1
    # what the rollback took away is pending again, and the next publish builds on version 2
    assert [(c.subject_id, c.kind) for c in reads.pending_changes()] == [(second.pk, "added")]
    version = publish_version(actor=lead, summary="v4")
    assert _ids(version.number) == sorted([first.pk, second.pk])


def test_a_prefix_publish_after_a_rollback_keeps_the_rolled_back_state_elsewhere(lead, reviewer):
    web = active(reviewer, scope="acme/web", boundary="b")
    publish_version(actor=lead, summary="v2")
    rollback_version(1, actor=lead, reason="back to the start")
    billing = active(reviewer, scope="acme/billing-api", boundary="b")
    version = publish_version(actor=lead, summary="billing", scope_prefix="acme/billing-api")
    assert _ids(version.number) == [billing.pk]  # built on version 1: web stays rolled back
    assert [c.subject_id for c in reads.pending_changes()] == [web.pk]


def test_rollback_needs_a_reason_and_a_known_other_version(lead):
    with pytest.raises(ValidationError):
        rollback_version(1, actor=lead, reason="")
    with pytest.raises(ValidationError) as unknown:
        rollback_version(9, actor=lead, reason="x")
    assert "No memory version 9" in str(unknown.value)
    with pytest.raises(ValidationError) as same:
        rollback_version(1, actor=lead, reason="x")
    assert "already the published one" in str(same.value)
    assert PublishedVersion.objects.get().version.number == 1


def test_the_checks_name_open_conflicts_and_recent_failures(lead, reviewer):
    entry = active(reviewer, scope="acme/billing-api", boundary="b", confidence=0.8)
    publish_version(actor=lead, summary="v2")
    record_uses(entry, ["failure"], end=timezone.now())  # the curator confirms it on recheck
    other = active(
        reviewer,
        scope="acme/billing-api",
        boundary="b",
        trigger="Always rebase before merging",
        content="Never merge without a rebase",
    )
    Conflict.objects.create(entry_a=entry, entry_b=other, reason="rebase against merge", detected_by="sweep")
    warnings = reads.pre_publish_checks(reads.pending_changes())
    assert {(w.check, w.entry_id) for w in warnings} >= {("failed_outcomes", entry.pk), ("conflict", entry.pk)}
    with pytest.raises(UnacknowledgedWarnings):
        publish_version(actor=lead, summary="v3")


def test_a_publish_runs_as_many_queries_for_many_changes_as_for_few(lead, reviewer):
    """The rows a publish closes and copies are one statement each, however many changes it holds: the
    queries are bounded by the release's shape, not by its size (a statement per chunk of ids would show
    here as more queries for the larger release)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    known = [
        active(reviewer, scope="acme/billing-api", trigger=f"When invoice {i} is late", boundary="b") for i in range(11)
    ]
    publish_version(actor=lead, summary="the first lessons")

    def publish(used, label):
        for entry in used:  # a failed use lowers its confidence: a change closes the entry's open row
            record_uses(entry, ["failure"], end=timezone.now(), confirm_failures=False)
        added = [
            active(reviewer, scope="acme/billing-api", trigger=f"When {label} refund {i} fails", boundary="b")
            for i in range(len(used))
        ]
        with CaptureQueriesContext(connection) as queries:
            version = publish_version(actor=lead, summary=f"{len(used)} lessons", acknowledge=True)
        assert (version.added, version.changed) == (len(used), len(used))
        assert _ids(version.number) == sorted(set(_ids(version.number - 1)) | {e.pk for e in added})
        assert ReleasedEntry.objects.filter(entry__in=used, valid_from=version.number).count() == len(used)
        assert ReleasedEntry.objects.filter(entry__in=used, valid_to=version.number).count() == len(used)
        return len(queries)

    few = publish(known[:2], "a")
    many = publish(known[2:], "b")
    assert many == few


@pytest.fixture
def few_placeholders(db):
    """On SQLite, the limit of placeholders per statement lowered to 999 (what SQLite took before 3.32, and
    still a small share of what a publish names): a statement with a placeholder per change fails past it."""
    from django.db import connection

    if connection.vendor != "sqlite":
        yield
        return
    import sqlite3

    connection.ensure_connection()
    raw = connection.connection
    was = raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    try:
        yield
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, was)


def test_a_publish_of_more_changes_than_a_statement_takes_placeholders(lead, reviewer, few_placeholders):
    """A publish names every change it releases, and on SQLite a statement takes a bounded number of
    placeholders (32,766 today, 999 before): a publish of more changes than that releases them all (its ids
    go as one parameter), on either database."""
    from curation.models import Entry

    template = active(reviewer, scope="acme/billing-api", boundary="b")
    publish_version(actor=lead, summary="the first lesson")
    count = 1_200
    values = {name: getattr(template, name) for name in ("kind", "signal", "base_confidence", "trust")}
    entries = Entry.objects.bulk_create(
        Entry(
            scope="acme/billing-api",
            trigger=f"When invoice {i} is late",
            content=f"Resend invoice {i}",
            boundary="b",
            status="active",
            fingerprint=f"bulk-{i}",
            **values,
        )
        for i in range(count)
    )
    # what an approval writes of each, in one insert: the Events that make them pending
    Event.objects.bulk_create(
        Event(entry=e, entry_label=f"#{e.pk}", actor_label="test", action=EventAction.APPROVE, entry_version=1)
        for e in entries
    )
    assert len(reads.pending_changes()) == count  # the releases page reads them too

    version = publish_version(actor=lead, summary="many lessons")

    assert (version.added, version.changed, version.removed) == (count, 0, 0)
    assert len(_ids(version.number)) == count + 1
    assert reads.pending_changes() == []


def test_a_change_agents_would_not_read_is_not_pending(lead, reviewer):
    """The draft is compared with the published version in the database, field by field as released_values
    compares them: a usage counter or a confidence moved below its 4th decimal is no change; a released
    field's change is one."""
    from django.db.models import F

    from curation.models import Entry

    entry = active(reviewer, scope="acme/billing-api", boundary="b", confidence=0.7)
    publish_version(actor=lead, summary="v2")
    rows = Entry.objects.filter(pk=entry.pk)
    rows.update(hit_count=F("hit_count") + 3, base_confidence=F("base_confidence") + 0.00001)
    with pytest.raises(ValidationError):
        publish_version(actor=lead, summary="nothing agents read", also_entry_ids=[entry.pk])

    other = "self" if entry.signal != "self" else "external"
    rows.update(signal=other)
    version = publish_version(actor=lead, summary="a released field", also_entry_ids=[entry.pk])
    assert version.changed == 1
    assert ReleasedEntry.objects.get(entry=entry, valid_from=version.number).signal == other


def test_a_refused_publish_leaves_every_open_row_open(lead, reviewer):
    """The statement that finds a changed entry closes its open row before the checks have spoken (on
    PostgreSQL): a refusal takes the closing back with the rest, and agents still read the open row."""
    entry = active(reviewer, scope="acme/billing-api", trigger="When an invoice is late", boundary="b")
    publish_version(actor=lead, summary="the first lesson")
    record_uses(entry, ["failure"], end=timezone.now(), confirm_failures=False)  # changed, with a warning
    entry.refresh_from_db()
    entry.boundary = ""
    entry.save(update_fields=["boundary"])

    with pytest.raises(UnacknowledgedWarnings):
        publish_version(actor=lead, summary="no boundary")

    open_rows = ReleasedEntry.objects.filter(entry=entry, valid_to__isnull=True)
    assert [(r.valid_from, r.boundary) for r in open_rows] == [(2, "b")]
    assert reads.published_version().number == 2 and MemoryVersion.objects.count() == 2
    assert [c.subject_id for c in reads.pending_changes()] == [entry.pk]  # still in the draft


@pytest.mark.django_db
def test_the_failed_outcomes_have_their_own_index_on_every_partition_of_the_history():
    """The failed-outcome check probes a partial index of the failed outcomes alone, made on the history's
    partitioned table and so on each of its months (PostgreSQL)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the history is partitioned on PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i
               JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid
               JOIN pg_inherits h ON h.inhrelid = x.oid
               JOIN pg_class p ON p.oid = h.inhparent AND p.relname = 'event_entry_failed_idx'"""
        )
        found = cursor.fetchall()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'curation_event'::regclass")
        months = cursor.fetchone()[0]
    assert months and len(found) == months
    assert all("outcome_failure" in definition and "(entry_id, created_at)" in definition for _, definition in found)


def test_a_publish_reads_where_it_starts_from_in_one_statement_after_the_lock(lead, reviewer):
    """The published version, the newest version's number and the last Event's id come in one read after the
    pointer is locked (three round trips read them apart, and the newest number was read twice): the version
    is numbered after the newest, and what is pending next starts after the last Event it saw."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    active(reviewer, scope="acme/billing-api", boundary="b")
    seen = Event.objects.order_by("-pk").first().pk
    with CaptureQueriesContext(connection) as queries:
        version = publish_version(actor=lead, summary="one lesson")
    statements = [" ".join(q["sql"].split()) for q in queries]
    lock = next(
        i for i, sql in enumerate(statements) if sql.startswith("SELECT") and "curation_publishedversion" in sql
    )
    version_reads = [
        i for i, sql in enumerate(statements) if sql.startswith("SELECT") and "curation_memoryversion" in sql
    ]
    event_reads = [i for i, sql in enumerate(statements) if sql.startswith("SELECT MAX") and "curation_event" in sql]
    assert (version_reads, event_reads) == ([lock + 1], [])
    assert (version.number, version.pending_from_event) == (2, seen + 1)
