"""The Events of a bulk write are built by the database (services/event_sql.py): each one must be, field by
field, what the write path's rule makes of the entry's two snapshots (event_deltas.delta of the snapshot
before and after, the entry's label, the redacted reason), on SQLite and on PostgreSQL alike."""

import datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from curation.models import Entry, Event, Status
from curation.rules import event_deltas
from curation.rules.redaction import redact
from curation.services.entry_writes import entry_row, write_entries
from curation.services.errors import ConcurrentChange
from curation.sweeps import run_sweep
from tests.factories import AS_OF, days_before, make_archived, make_entry

pytestmark = pytest.mark.django_db

EVENT_FIELDS = (
    "entry_id",
    "entry_label",
    "actor_id",
    "actor_label",
    "action",
    "reason",
    "before",
    "after",
    "request_id",
    "entry_version",
    "created_at",
)


def _write_and_expect(entries, *, action, reason_of, actor_label, request_id="taskrun-9", **write):
    """Write `entries` through write_entries and answer (the Events it stored, the Events the rule expects:
    the delta of each entry's snapshot before and after, as the per-row path wrote them)."""
    ids = [e.pk for e in entries]
    before = {e.pk: e.snapshot(AS_OF) for e in Entry.objects.filter(pk__in=ids)}
    with transaction.atomic():
        rows = [entry_row(e) for e in Entry.objects.select_for_update().filter(pk__in=ids).order_by("id")]
        written = write_entries(
            rows, action=action, reason_of=reason_of, actor_label=actor_label, at=AS_OF, request_id=request_id, **write
        )
    assert written == len(ids)
    expected = []
    for entry in Entry.objects.filter(pk__in=ids).order_by("id"):
        old, new = event_deltas.delta(before[entry.pk], entry.snapshot(AS_OF))
        expected.append(
            {
                "entry_id": entry.pk,
                "entry_label": redact(entry.label, "entry_label")[0],
                "actor_id": None,
                "actor_label": actor_label,
                "action": action,
                "reason": redact(reason_of(entry_row(entry)), "reason")[0],
                "before": old,
                "after": new,
                "request_id": request_id,
                "entry_version": entry.version,
                "created_at": AS_OF,
            }
        )
    stored = list(Event.objects.filter(entry_id__in=ids, action=action).order_by("id").values(*EVENT_FIELDS))
    return stored, expected


def test_an_archive_stores_the_events_the_snapshots_delta_says():
    entries = [make_entry(base_confidence=0.3, last_verified_at=days_before(90 + i)) for i in range(3)]
    confidence = {e.pk: e.confidence_at(AS_OF) for e in entries}
    stored, expected = _write_and_expect(
        entries,
        expected_status=Status.ACTIVE,
        action="archive",
        reason_of=lambda row: f"decayed: confidence {confidence[row['id']]:.3f} is below 0.3",
        actor_label="lifecycle:archive",
        values={"archive_reason": "decayed"},
    )
    assert stored == expected
    # What changed, old and new; the confidence is frozen at the archive's moment, so it is not there.
    assert set(stored[0]["after"]) == {"status", "archive_reason", "decay_stopped_at"}
    assert stored[0]["before"] == {"status": "active", "archive_reason": "", "decay_stopped_at": None}


def test_a_revival_carries_the_new_base_and_confidence_as_python_rounds_them():
    entries = [make_archived(archived_at=days_before(30)) for _ in range(2)]
    stored, expected = _write_and_expect(
        entries,
        expected_status=Status.ARCHIVED,
        action="revive",
        reason_of=lambda e: "fresh evidence",
        actor_label="lifecycle:revive",
        row_values={
            entries[0].pk: {"base_confidence": 0.71234, "last_verified_at": days_before(3)},
            entries[1].pk: {"base_confidence": 0.6, "last_verified_at": days_before(1)},
        },
    )
    assert stored == expected
    assert {"base_confidence", "confidence", "last_verified_at", "status"} <= set(stored[0]["after"])
    assert stored[0]["after"]["base_confidence"] == 0.7123


def test_every_kind_of_column_renders_as_the_snapshot_renders_it():
    """Text (redacting and not), JSON, a date, a time with and without microseconds, a flag, a link, a number,
    a null, and a new trigger past the label's 60 characters: each as Entry.snapshot() holds it."""
    one, two = make_entry(), make_entry()
    queued = AS_OF - datetime.timedelta(hours=2, microseconds=-120000)
    long_trigger = "When the nightly deploy of the billing API fails halfway through the migration step"
    stored, expected = _write_and_expect(
        [one, two],
        expected_status=None,
        action="outcome_success",
        reason_of=lambda row: f"used #{row['id']}; reach me at ops.lead@example.com",
        actor_label="agent:ci",
        values={"quarantined": True, "trust": 3, "supersedes": None},
        row_values={
            one.pk: {
                "conditions": ["deploy", "smoke", "eu-west"],
                "review_by": datetime.date(2027, 1, 31),
                "queued_at": queued,
                "queue_reason": "recheck_failure",
                "recheck_when": "the schema changes; api key sk_live_51HxQ2aV9cK3mZpL8bT4nR7wY",
                "trigger": long_trigger,
                "supersedes": two.pk,
            },
            two.pk: {"queued_at": AS_OF - datetime.timedelta(days=1), "review_by": None, "conditions": []},
        },
    )
    assert stored == expected
    first = stored[0]
    assert first["after"]["queued_at"].endswith(".120000+00:00") and first["after"]["review_by"] == "2027-01-31"
    assert first["entry_label"].endswith("...") and "[REDACTED" in first["reason"]
    assert "[REDACTED" in first["after"]["recheck_when"]


def test_the_fold_rebuilds_the_archived_version():
    entry = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    run_sweep("archive", as_of=AS_OF)
    stored = Entry.objects.get(pk=entry.pk)
    events = Event.objects.filter(entry=entry).order_by("created_at", "id").values_list("entry_version", "after")
    rebuilt = event_deltas.version_at(events, stored.version)
    snapshot = stored.snapshot(AS_OF)
    # The confidence a version holds is the one written with it (the archive freezes it where it stood).
    assert {k: v for k, v in rebuilt.items() if k != "confidence"} == {
        k: v for k, v in snapshot.items() if k != "confidence"
    }
    assert (rebuilt["status"], rebuilt["archive_reason"]) == (Status.ARCHIVED, "decayed")


def test_a_dry_run_writes_no_event_and_changes_no_row():
    entry = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    events = Event.objects.count()
    run, sweep = run_sweep("archive", as_of=AS_OF, dry_run=True)
    assert sweep.changed == 1
    assert Event.objects.count() == events
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE


@pytest.mark.parametrize("moved", ["status", "version"])
def test_a_row_changed_under_the_batch_writes_nothing(moved):
    """A row that left the expected status, or whose version moved, since the caller read it: ConcurrentChange,
    and neither the rows nor the Events are written."""
    entries = [make_entry(base_confidence=0.3, last_verified_at=days_before(90)) for _ in range(2)]
    events = Event.objects.count()
    with transaction.atomic():
        rows = list(
            Entry.objects.select_for_update()
            .filter(pk__in=[e.pk for e in entries])
            .order_by("id")
            .values("id", "version")
        )
        if moved == "status":
            # Another writer archived it after the caller read the row (as SQLite's one writer may).
            Entry.objects.filter(pk=rows[1]["id"]).update(status=Status.ARCHIVED)
        else:
            Entry.objects.filter(pk=rows[1]["id"]).update(version=rows[1]["version"] + 1)
        with pytest.raises(ConcurrentChange):
            write_entries(
                rows,
                expected_status=Status.ACTIVE,
                action="archive",
                reason_of=lambda e: "decayed",
                actor_label="lifecycle:archive",
                at=AS_OF,
                values={"archive_reason": "decayed"},
            )
        assert Event.objects.count() == events
        assert Entry.objects.get(pk=rows[0]["id"]).status == Status.ACTIVE


def test_a_batch_submission_stores_each_new_entrys_whole_first_version(settings):
    """The Events of a batch's new entries are built by the database from the rows just inserted: each one
    what the per-row insert stores (event_deltas.delta of no snapshot: the whole first version), the label,
    the version and the time, whichever decision made it (a submission, a policy's approval), redacted."""
    from curation.services.submissions import submit_batch
    from curation.services.tokens import create_agent_token
    from tests.factories import api_candidate

    settings.CURATION_ADMISSION = {"acme/web": {"name": "take-all", "mode": "all"}}
    token, _ = create_agent_token(name="batch-agent", scopes=["acme"])
    items = [
        api_candidate(review_by="2031-02-03", recheck_when="the vendor ships v2"),
        api_candidate(scope="acme/web", trigger="Deploying the web tier on Fridays", conditions=[]),
        api_candidate(trigger="Rotating the key " + "x" * 80, content="Mail ops@example.com before rotating."),
    ]
    results = submit_batch(items=items, token=token, at=AS_OF)
    assert all(r["ok"] for r in results), results
    ids = [r["id"] for r in results]
    stored = {e["entry_id"]: e for e in Event.objects.filter(entry_id__in=ids).values(*EVENT_FIELDS)}
    for entry in Entry.objects.filter(pk__in=ids):
        event = stored[entry.pk]
        assert event["after"] == event_deltas.delta(None, entry.snapshot(AS_OF))[1]
        assert (event["before"], event["actor_id"], event["entry_version"]) == (None, None, 1)
        assert (event["entry_label"], event["created_at"]) == (entry.label, AS_OF)
    web = Entry.objects.get(scope="acme/web")
    assert (web.status, stored[web.pk]["action"], stored[web.pk]["actor_label"]) == (
        Status.ACTIVE,
        "approve",
        "policy:take-all",
    )
    mailed = Entry.objects.get(trigger__startswith="Rotating")
    assert (
        stored[mailed.pk]["entry_label"].endswith("...")
        and "redacted e-mail address in content" in (stored[mailed.pk]["reason"])
    )
    assert "ops@example.com" not in str(stored[mailed.pk])


def _archived_in_one_batch(entries, *, reason_of) -> str:
    """The entries archived by one bulk write, their rows read under the lock as a sweep reads them; answers
    the statement that wrote them with their Events."""
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        rows = [entry_row(e) for e in Entry.objects.select_for_update().filter(pk__in=[e.pk for e in entries])]
        write_entries(
            rows,
            expected_status=Status.ACTIVE,
            action="archive",
            reason_of=reason_of,
            actor_label="lifecycle:archive",
            at=AS_OF,
            values={"archive_reason": "decayed"},
        )
    (statement,) = [q["sql"] for q in queries if "INSERT INTO curation_event" in q["sql"]]
    return statement


def test_a_batch_write_reads_each_row_once(on_postgres):
    """On PostgreSQL the write of a batch reads each entry once, for its old values, and writes that row (reached
    by its ctid, not looked up again); the Events come from the rows as written. Before, the Events' part and
    the UPDATE each looked every row up."""
    entries = [make_entry(base_confidence=0.3, last_verified_at=days_before(90 + i)) for i in range(3)]
    statement = _archived_in_one_batch(entries, reason_of=lambda row: "decayed")
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}")
        plan = cursor.fetchone()[0]

    def nodes(node):
        yield node
        for child in node.get("Plans", ()):
            yield from nodes(child)

    reads = [
        n["Node Type"]
        for n in nodes(plan[0]["Plan"])
        if n.get("Relation Name") == Entry._meta.db_table and n["Node Type"] != "ModifyTable"
    ]
    # One read of the rows (whichever way the planner finds them), and the write reaching each by its ctid.
    assert len(reads) == 2 and reads.count("Tid Scan") == 1, reads
    assert Event.objects.filter(entry__in=entries, action="archive").count() == 3


def test_a_batch_sends_each_distinct_reason_once(on_postgres):
    """On PostgreSQL a batch's rows reach the database as arrays (ids, versions, each row's reason by number)
    with the distinct reasons once: a sweep's thousands of rows share a few reasons, which were sent and
    parsed again with every row. The Events still carry each row's own reason."""
    entries = [make_entry(base_confidence=0.3, last_verified_at=days_before(90 + i)) for i in range(4)]
    statement = _archived_in_one_batch(
        entries, reason_of=lambda row: "decayed below the threshold" if row["id"] != entries[0].pk else "the first"
    )
    assert statement.count("decayed below the threshold") == 1 and statement.count("the first") == 1
    reasons = dict(Event.objects.filter(entry__in=entries, action="archive").values_list("entry_id", "reason"))
    assert reasons == {e.pk: "the first" if e == entries[0] else "decayed below the threshold" for e in entries}
