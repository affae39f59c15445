"""The one write path of entries: write_entry for a decision, write_entries (its bulk twin) for a sweep's
batch, each checking what it expects, bumping the version and writing one Event per entry with the one
snapshot shape; and nothing else in curation/ writing an entry."""

import ast
import datetime
import pathlib

import pytest
from django.db import connection, transaction
from django.db.models import F, Value
from django.utils import timezone

from curation.rules import lifecycle
from curation.models import SNAPSHOT_FIELDS, Entry, Event, Status
from curation.services.entry_writes import entry_row, write_entries, write_entry
from curation.services.errors import ConcurrentChange, StaleDecision
from tests.factories import AS_OF, days_before, make_archived, make_entry

pytestmark = pytest.mark.django_db

# The one shape of an entry in an Event, whoever writes it.
SNAPSHOT_KEYS = {
    "status",
    "kind",
    "scope",
    "trigger",
    "content",
    "conditions",
    "boundary",
    "recheck_when",
    "review_by",
    "signal",
    "trust",
    "base_confidence",
    "confidence",
    "last_verified_at",
    "decay_stopped_at",
    "queue_reason",
    "queued_at",
    "archive_reason",
    "supersedes",
    "first_approval_by",
    "first_approval_at",
    "quarantined",
    "version",
}


def fresh(entry) -> Entry:
    return Entry.objects.get(pk=entry.pk)


# --- write_entry ------------------------------------------------------------------------------------------


def test_write_entry_bumps_the_version_stamps_the_time_and_writes_the_event(reviewer):
    entry = make_entry(base_confidence=0.6)
    version, events = entry.version, Event.objects.count()
    at = days_before(2)
    event = write_entry(
        entry,
        {"status": Status.RETIRED},
        expected_version=version,
        action="retire",
        actor=reviewer,
        reason="wrong advice",
        after_extra={"note": 1},
        at=at,
    )
    stored = fresh(entry)
    assert (stored.status, stored.version, stored.updated_at) == (Status.RETIRED, version + 1, at)
    assert Event.objects.count() == events + 1 and Event.objects.latest("id") == event
    assert (event.entry_id, event.action, event.actor, event.reason, event.entry_version, event.created_at) == (
        entry.pk,
        "retire",
        reviewer,
        "wrong advice",
        version + 1,
        at,
    )
    # What changed, old and new (retiring stops the decay), the words the caller added; the version is the column.
    assert (event.before, event.after) == (
        {"status": "active", "decay_stopped_at": None},
        {"status": "retired", "decay_stopped_at": at.isoformat(), "note": 1},
    )


def test_write_entry_refuses_an_old_version_and_writes_nothing(reviewer):
    entry = make_entry()
    version = entry.version
    write_entry(fresh(entry), {"queue_reason": ""}, action="confirm", actor=reviewer, at=AS_OF)
    events = Event.objects.count()
    with pytest.raises(StaleDecision) as stale, transaction.atomic():
        write_entry(
            entry, {"status": Status.RETIRED}, expected_version=version, action="retire", actor=reviewer, at=AS_OF
        )
    assert [e.action for e in stale.value.changes] == ["confirm"]
    assert (fresh(entry).status, fresh(entry).version, Event.objects.count()) == (Status.ACTIVE, version + 1, events)


# --- write_entries, the bulk twin ----------------------------------------------------------------------


def _locked(*entries):
    return list(
        Entry.objects.select_for_update()
        .filter(pk__in=[e.pk for e in entries])
        .order_by("id")
        .values("id", "status", "version")
    )


def test_the_same_values_for_every_row_with_an_expression(django_assert_max_num_queries):
    one, two = make_entry(base_confidence=0.5, utility_n=2, utility_sum=1.0), make_entry(base_confidence=0.3)
    started = timezone.now()
    with transaction.atomic():
        rows = _locked(one, two)
        with django_assert_max_num_queries(
            5
        ):  # a savepoint and its release, the rows read for the checks, the Events, the UPDATE
            written = write_entries(
                rows,
                expected_status=Status.ACTIVE,
                action="archive",
                reason_of=lambda row: f"#{row['id']} decayed",
                actor_label="lifecycle:archive",
                at=AS_OF,
                request_id="taskrun-7",
                values={
                    "status": Status.ARCHIVED,
                    "utility_sum": F("utility_sum") * Value(0.5),
                    "archived_at": AS_OF,
                    "archive_reason": "decayed",
                },
            )
    assert written == 2
    for entry, utility_sum in ((one, 0.5), (two, 0.0)):
        stored = fresh(entry)
        # Leaving the active set stops the decay: its confidence stays what it was at the as-of time.
        frozen = lifecycle.decayed(entry.base_confidence, entry.last_verified_at, AS_OF, lifecycle.rules())
        assert (stored.status, stored.utility_sum, stored.archive_reason, stored.version, stored.decay_stopped_at) == (
            Status.ARCHIVED,
            pytest.approx(utility_sum),
            "decayed",
            entry.version + 1,
            AS_OF,
        )
        assert stored.confidence == stored.confidence_at(AS_OF + datetime.timedelta(days=400)) == pytest.approx(frozen)
        assert stored.updated_at >= started  # the wall clock: the detecting sweeps read changes by it
        event = Event.objects.get(entry=entry, action="archive")
        assert (event.action, event.reason, event.actor_label, event.request_id, event.created_at) == (
            "archive",
            f"#{entry.pk} decayed",
            "lifecycle:archive",
            "taskrun-7",
            AS_OF,
        )
        # The confidence is frozen at the archive's moment, so it is not among what changed.
        assert set(event.before) == set(event.after) == {"status", "archive_reason", "decay_stopped_at"}
        assert (event.before["status"], event.after["status"], event.after["archive_reason"], event.entry_version) == (
            "active",
            "archived",
            "decayed",
            entry.version + 1,
        )
        assert event.entry_label == stored.label


def test_values_per_row_and_the_decay_index_they_move():
    one, two = make_archived(archived_at=days_before(30)), make_archived(archived_at=days_before(30))
    verified = {one.pk: days_before(3), two.pk: days_before(1)}
    with transaction.atomic():
        write_entries(
            _locked(one, two),
            expected_status=Status.ARCHIVED,
            action="revive",
            reason_of=lambda e: "fresh evidence",
            actor_label="lifecycle:revive",
            at=AS_OF,
            values={"status": Status.ACTIVE, "archived_at": None, "archive_reason": ""},
            row_values={
                one.pk: {"base_confidence": 0.7, "last_verified_at": verified[one.pk]},
                two.pk: {"base_confidence": 0.6, "last_verified_at": verified[two.pk]},
            },
        )
    rules = lifecycle.rules()
    for entry, base in ((one, 0.7), (two, 0.6)):
        stored = fresh(entry)
        assert (stored.status, stored.base_confidence, stored.last_verified_at, stored.version) == (
            Status.ACTIVE,
            base,
            verified[entry.pk],
            entry.version + 1,
        )
        # Active again: decaying from the new verification, and the index computed from the new base.
        assert stored.decay_stopped_at is None
        assert stored.confidence_at(AS_OF) == pytest.approx(lifecycle.decayed(base, verified[entry.pk], AS_OF, rules))
        assert (stored.decay_key, stored.decay_rate) == (
            pytest.approx(lifecycle.decay_key(base, verified[entry.pk], rules)),
            lifecycle.decay_rate(rules),
        )
        event = Event.objects.get(entry=entry, action="revive")
        assert (event.before["base_confidence"], event.after["base_confidence"]) == (entry.base_confidence, base)
        assert event.after["confidence"] == round(lifecycle.decayed(base, verified[entry.pk], AS_OF, rules), 4)
        assert event.after["last_verified_at"] == verified[entry.pk].isoformat()


def test_the_base_and_the_verification_are_plain_values_to_index():
    entry = make_entry()
    with pytest.raises(TypeError, match="plain values"), transaction.atomic():
        write_entries(
            _locked(entry),
            expected_status=Status.ACTIVE,
            action="outcome_success",
            reason_of=lambda e: "",
            actor_label="lifecycle:test",
            at=AS_OF,
            values={"base_confidence": F("base_confidence") - 0.1},
        )


def test_rows_of_any_status_loaded_whole_with_the_decisions_time_and_nulls_per_row(django_assert_num_queries):
    """An outcome's write: the entries a task used, whatever their status now, loaded whole under their lock
    (so their snapshot before needs no read), stamped with the outcome's time; a value per row may be None."""
    active = make_entry(base_confidence=None, utility_n=1, outcomes=["failure"], confirm_failures=False)  # queued
    assert active.queued_at is not None and active.queue_reason == "recheck_failure"
    archived = make_archived(archived_at=days_before(30))
    with transaction.atomic():
        rows = [
            entry_row(e)
            for e in Entry.objects.select_for_update().filter(pk__in=[active.pk, archived.pk]).order_by("pk")
        ]
        # Savepoint, the Events (built by the database) and the update, release: on PostgreSQL the Events and
        # the update are one statement.
        with django_assert_num_queries(3 if connection.vendor == "postgresql" else 4):
            written = write_entries(
                rows,
                expected_status=None,
                action="outcome_success",
                reason_of=lambda row: f"used #{row['id']}",
                actor_label="agent:ci",
                at=AS_OF,
                updated_at=AS_OF,
                row_values={
                    active.pk: {"hit_count": 4, "queued_at": None, "queue_reason": ""},
                    archived.pk: {"hit_count": 7, "last_verified_at": AS_OF},
                },
            )
    assert written == 2
    stored_active, stored_archived = fresh(active), fresh(archived)
    assert (stored_active.hit_count, stored_active.queued_at, stored_active.queue_reason, stored_active.status) == (
        4,
        None,
        "",
        Status.ACTIVE,
    )
    assert (stored_archived.hit_count, stored_archived.last_verified_at, stored_archived.status) == (
        7,
        AS_OF,
        Status.ARCHIVED,
    )
    assert stored_active.updated_at == stored_archived.updated_at == AS_OF
    event = Event.objects.get(entry=active, reason=f"used #{active.pk}")
    assert (event.reason, event.actor_label, event.created_at, event.entry_version) == (
        f"used #{active.pk}",
        "agent:ci",
        AS_OF,
        active.version + 1,
    )
    assert (event.before, event.after) == (
        {"queued_at": active.queued_at.isoformat(), "queue_reason": active.queue_reason},
        {"queued_at": None, "queue_reason": ""},
    )
    assert (
        Event.objects.get(entry=archived, reason=f"used #{archived.pk}").after["last_verified_at"] == AS_OF.isoformat()
    )


@pytest.mark.parametrize("underneath", [{"status": Status.RETIRED}, {"version": F("version") + 1}])
def test_a_row_changed_underneath_is_refused_and_nothing_is_written(underneath):
    one, two = make_entry(), make_entry()
    events = Event.objects.count()
    with pytest.raises(ConcurrentChange, match="1 of 2 rows changed"), transaction.atomic():
        rows = _locked(one, two)
        Entry.objects.filter(pk=two.pk).update(**underneath)  # what an unlocked writer could do meanwhile
        write_entries(
            rows,
            expected_status=Status.ACTIVE,
            action="archive",
            reason_of=lambda e: "",
            actor_label="lifecycle:archive",
            at=AS_OF,
            values={"status": Status.ARCHIVED, "archive_reason": "decayed"},
        )
    assert fresh(one).status == Status.ACTIVE and fresh(one).version == one.version
    assert Event.objects.count() == events


def test_a_batch_of_nothing_writes_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert (
            write_entries(
                [],
                expected_status=Status.ACTIVE,
                action="archive",
                reason_of=str,
                actor_label="lifecycle:archive",
                at=AS_OF,
            )
            == 0
        )


# --- nothing else writes an entry -------------------------------------------------------------------------

CURATION = pathlib.Path(__file__).resolve().parents[2] / "curation"
WRITE_PATH = CURATION / "services" / "entry_writes.py"
ENTRY_NAMES = {"entry", "entries", "e", "kept", "target", "merged", "other", "older", "old", "a", "b"}


def _root_name(node) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _writes_an_entry(call: ast.Call) -> bool:
    if not isinstance(call.func, ast.Attribute):
        return False
    method, receiver = call.func.attr, call.func.value
    if method in ("update", "bulk_update", "create", "bulk_create", "get_or_create", "update_or_create"):
        return _root_name(receiver) == "Entry"
    if method == "save":
        return isinstance(receiver, ast.Name) and receiver.id in ENTRY_NAMES
    return False


def test_no_entry_is_written_outside_the_write_path():
    found = []
    for path in sorted(CURATION.rglob("*.py")):
        if path == WRITE_PATH or "migrations" in path.parts:
            continue
        source = path.read_text()
        found += [
            f"{path.relative_to(CURATION)}:{node.lineno}"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and _writes_an_entry(node)
        ]
        found += [f"{path.relative_to(CURATION)}: raw SQL" for _ in [1] if "UPDATE curation_entry" in source]
    assert found == []


def test_the_check_finds_what_it_looks_for():
    calls = [
        node
        for node in ast.walk(
            ast.parse(
                "Entry.objects.filter(pk=1).update(status='x')\nentry.save()\nEntry.objects.create()\n"
                "Event.objects.filter().update()\nproposal.save()"
            )
        )
        if isinstance(node, ast.Call)
    ]
    assert sum(_writes_an_entry(c) for c in calls) == 3


def test_a_row_loaded_with_the_snapshot_fields_makes_its_snapshot_and_label_without_a_query(django_assert_num_queries):
    entry = make_entry(last_verified_at=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    loaded = Entry.objects.only(*SNAPSHOT_FIELDS).get(pk=entry.pk)
    with django_assert_num_queries(0):
        assert (loaded.snapshot(), loaded.label) == (entry.snapshot(), entry.label)
    assert set(entry.snapshot()) == SNAPSHOT_KEYS


def test_no_event_is_written_outside_services_events():
    """Events are built and written by services/events.py (record_event, record_events), so every one
    carries its subject's label, the actor's name and the request id the same way."""
    events_module = CURATION / "services" / "events.py"
    found = []
    for path in sorted(CURATION.rglob("*.py")):
        if path == events_module or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id == "Event":
                found.append(f"{path.relative_to(CURATION)}:{node.lineno} Event(...)")
            elif (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("create", "bulk_create", "update")
                and _root_name(node.func.value) == "Event"
            ):
                found.append(f"{path.relative_to(CURATION)}:{node.lineno} Event.objects.{node.func.attr}")
    assert found == []
