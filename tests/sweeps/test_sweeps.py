"""The sweeps as the history sees them: each state change is one Event and one version, a second run at
the same moment changes nothing, a run killed between batches is finished by the next, and two runs at
once do the work once."""

import datetime
import math
import threading

import pytest
from django.core.management import call_command
from django.db import DataError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from curation import services, sweeps
from curation.rules import clock, lifecycle
from curation.models import Conflict, ConsolidationProposal, Entry, Event, QueueReason, Status, TaskRun
from curation.services.entry_writes import ROW_COLUMNS
from curation.sweeps import run_sweep
from tests.factories import AS_OF, add_evidence_row, days_before, holding_lock, make_archived, make_entry, retrieve

pytestmark = pytest.mark.django_db


def state_of_all():
    return list(
        Entry.objects.order_by("id").values_list(
            "id",
            "status",
            "base_confidence",
            "queued_at",
            "queue_reason",
            "archived_at",
            "decay_stopped_at",
            "decay_key",
            "archive_reason",
            "version",
            "last_verified_at",
        )
    )


def mixed_population(settings):
    """One entry for every policy, plus bystanders that none of them touch. The archived one comes first:
    the archive run that archives it would take every entry already decayed by then with it."""
    settings.CURATION = {**settings.CURATION, "SCOPE_CAPACITY": {"acme/web": 2}}
    revivable = make_archived(archived_at=days_before(10))
    add_evidence_row(revivable, signal="external", observed_at=days_before(1))
    fresh = make_entry(last_verified_at=days_before(1), created_at=days_before(5))
    retrieve(fresh, at=days_before(1))
    faded = make_entry(base_confidence=0.4, last_verified_at=days_before(200))
    unused = make_entry(last_verified_at=days_before(60))
    useless = make_entry(last_verified_at=days_before(2), retrieval_count=4, utility_sum=0.4, utility_n=4)
    retrieve(useless, at=days_before(2))
    due = make_entry(last_verified_at=days_before(3), review_by=(AS_OF - datetime.timedelta(days=2)).date())
    retrieve(due, at=days_before(3))
    web = [
        make_entry(scope="acme/web", last_verified_at=days_before(1), signal=s) for s in ("external", "self", "self")
    ]
    for e in web:
        retrieve(e, at=days_before(1))
    return locals()


def test_every_policy_once_then_nothing(settings):
    rows = mixed_population(settings)
    versions = dict(Entry.objects.values_list("id", "version"))
    setup_events = Event.objects.order_by("-id").values_list("id", flat=True).first()
    for task in sweeps.TASK_NAMES:
        run_sweep(task, as_of=AS_OF)
    first_state = state_of_all()
    first_events = Event.objects.count()

    get = lambda name: Entry.objects.get(pk=rows[name].pk)  # noqa: E731
    assert get("fresh").status == Status.ACTIVE and get("fresh").version == versions[rows["fresh"].pk]
    assert (get("faded").status, get("faded").archive_reason, get("faded").archived_at) == (
        Status.ARCHIVED,
        "decayed",
        AS_OF,
    )
    assert (get("unused").status, get("unused").archive_reason) == (Status.ARCHIVED, "unused")
    useless = get("useless")
    assert (useless.status, useless.archive_reason, useless.queue_reason) == (
        Status.ARCHIVED,
        "low utility",
        QueueReason.RECHECK_LOW_UTILITY,
    )
    assert useless.queued_at == AS_OF  # appears in the candidates queue as a recheck
    due = get("due")
    assert (due.status, due.queue_reason, due.queued_at) == (Status.ACTIVE, QueueReason.RECHECK_REVIEW_DUE, AS_OF)
    assert get("revivable").status == Status.ACTIVE
    web = [Entry.objects.get(pk=e.pk) for e in rows["web"]]
    assert [e.status for e in web] == [Status.ACTIVE, Status.ARCHIVED, Status.ACTIVE]  # the weaker, older self
    assert web[1].archive_reason == f"displaced by #{web[2].pk}"

    # Every state change is one Event by the task, at the run's time, with the new version.
    for name, action in [
        ("faded", "archive"),
        ("unused", "archive"),
        ("useless", "archive"),
        ("due", "queue_recheck"),
        ("revivable", "revive"),
    ]:
        entry = get(name)
        events = list(Event.objects.filter(entry=entry, id__gt=setup_events))
        assert [(e.action, e.created_at, e.entry_version) for e in events] == [(action, AS_OF, entry.version)], name
        assert entry.version == versions[entry.pk] + 1
        # The Event holds what changed: the status, except for a recheck, which only queues the entry.
        assert ("status" in events[0].after) == (name != "due")
        assert events[0].before.get("status") != events[0].after.get("status") or name == "due"
        assert events[0].actor_label.startswith("lifecycle:")
        assert events[0].request_id.startswith("taskrun-")

    # Idempotent: the same moment again changes no row and writes no Event.
    for task in sweeps.TASK_NAMES:
        run, sweep = run_sweep(task, as_of=AS_OF)
        assert (run.state, sweep.changed) == (TaskRun.State.SUCCEEDED, 0), task
    assert state_of_all() == first_state
    assert Event.objects.count() == first_events


def test_confidence_decays_as_it_is_read_and_never_compounds():
    entry = make_entry(base_confidence=0.8, last_verified_at=days_before(60))
    history = Event.objects.filter(entry=entry).count()
    stored = Entry.objects.get(pk=entry.pk)
    later = AS_OF + datetime.timedelta(days=30)
    run_sweep("decay", as_of=AS_OF)
    run_sweep("decay", as_of=AS_OF)
    run_sweep("decay", as_of=later)
    after = Entry.objects.get(pk=entry.pk)
    assert (after.confidence_at(AS_OF), after.confidence_at(later)) == (
        pytest.approx(0.8 * 0.95**2),
        pytest.approx(0.8 * 0.95**3),
    )
    with clock.running_at(later):
        assert after.confidence == pytest.approx(0.8 * 0.95**3)
    # Nothing is written as days pass: not the row, not an Event; the runs are recorded with nothing changed.
    assert (after.base_confidence, after.version, after.updated_at, after.decay_key) == (
        0.8,
        stored.version,
        stored.updated_at,
        stored.decay_key,
    )
    assert Event.objects.filter(entry=entry).count() == history
    runs = list(TaskRun.objects.filter(task="decay").order_by("id").values_list("rows_examined", "rows_changed"))
    assert runs == [(0, 0), (0, 0), (0, 0)]


def test_decay_reports_what_fell_under_the_retrieval_floor_that_day():
    rules = lifecycle.rules()
    # Verified so that it crosses 0.5 twelve hours before AS_OF, and one that crossed long ago.
    days_to_floor = rules.decay_period_days * math.log(rules.retrieve_at_least / 0.8) / math.log(rules.decay_factor)
    crossing = make_entry(base_confidence=0.8, last_verified_at=AS_OF - datetime.timedelta(days=days_to_floor + 0.5))
    make_entry(base_confidence=0.8, last_verified_at=AS_OF - datetime.timedelta(days=days_to_floor + 30))
    make_entry(base_confidence=0.8, last_verified_at=days_before(1))
    run, sweep = run_sweep("decay", as_of=AS_OF)
    assert (run.rows_examined, run.rows_changed) == (1, 0)
    assert sweep.samples == [
        f"#{crossing.pk} confidence 0.500: under the retrieval floor 0.5, agents no longer receive it".replace(
            "0.500", f"{crossing.confidence_at(AS_OF):.3f}"
        )
    ]


def test_decay_counts_all_it_reports_describes_the_first_and_writes_its_record_only_at_the_end():
    """The report is one statement (the rule in SQL with a count of all it finds), so every entry under the
    floor is counted while only the first SAMPLE_LIMIT are described, and the count reaches the run's record
    with its end: the run's record is written twice (its start, its end), not once more for progress."""
    rules = lifecycle.rules()
    days_to_floor = rules.decay_period_days * math.log(rules.retrieve_at_least / 0.8) / math.log(rules.decay_factor)
    crossing = [
        make_entry(base_confidence=0.8, last_verified_at=AS_OF - datetime.timedelta(days=days_to_floor + 0.1 + i / 100))
        for i in range(sweeps.SAMPLE_LIMIT + 5)
    ]
    with CaptureQueriesContext(connection) as queries:
        run, sweep = run_sweep("decay", as_of=AS_OF)
    assert (run.rows_examined, run.rows_changed) == (sweeps.SAMPLE_LIMIT + 5, 0)
    assert TaskRun.objects.get(pk=run.pk).rows_examined == sweeps.SAMPLE_LIMIT + 5
    assert [line.split(" ")[0] for line in sweep.samples] == [f"#{e.pk}" for e in crossing[: sweeps.SAMPLE_LIMIT]]
    record_writes = [
        q["sql"] for q in queries if 'INTO "curation_taskrun"' in q["sql"] or 'UPDATE "curation_taskrun"' in q["sql"]
    ]
    assert len(record_writes) == 2


@pytest.mark.django_db(transaction=True)
def test_a_runs_own_records_do_not_wait_for_the_disk_and_its_batches_do(on_postgres):
    """PostgreSQL: a run's start and end records commit with synchronous_commit off (the next durable commit
    makes them durable too); the batch that archives, and its Events, commits as every decision does."""
    make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    with CaptureQueriesContext(connection) as queries:
        run, _ = run_sweep("archive", as_of=AS_OF)
    assert (run.state, run.rows_changed) == (TaskRun.State.SUCCEEDED, 1)
    statements = [q["sql"] for q in queries]
    unflushed = "BEGIN; SET LOCAL synchronous_commit TO OFF; "
    record = [sql for sql in statements if '"curation_taskrun"' in sql and not sql.startswith("SELECT")]
    assert len(record) == 2 and all(sql.startswith(unflushed) for sql in record)
    batch = next(sql for sql in statements if "INSERT INTO curation_event" in sql)
    assert "synchronous_commit" not in batch and sum("synchronous_commit" in sql for sql in statements) == 2
    assert TaskRun.objects.get(pk=run.pk).state == TaskRun.State.SUCCEEDED


@pytest.mark.django_db(transaction=True)
def test_a_runs_start_and_its_end_are_one_round_trip_each(on_postgres):
    """PostgreSQL: a run's record, its lock and the read of the task's other running records go to the server
    together, and so do its end and the unlock; between them only the sweep's own statements."""
    make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    with CaptureQueriesContext(connection) as queries:
        run, _ = run_sweep("archive", as_of=AS_OF)
    statements = [q["sql"] for q in queries]
    start, end = statements[0], statements[-1]
    assert 'INSERT INTO "curation_taskrun"' in start and "pg_try_advisory_lock" in start
    assert start.index("pg_try_advisory_lock") < start.index('FROM "curation_taskrun"')  # read once it is held
    assert 'UPDATE "curation_taskrun"' in end and end.index("COMMIT") < end.index("pg_advisory_unlock")
    assert not [sql for sql in statements[1:-1] if "curation_taskrun" in sql or "advisory" in sql]
    assert (run.state, run.rows_changed) == (TaskRun.State.SUCCEEDED, 1)
    with connection.cursor() as cursor:  # the lock was given back: another session takes it
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        assert cursor.fetchone()[0] == 0


@pytest.mark.django_db(transaction=True)
def test_a_failed_round_trip_inside_a_callers_transaction_is_rolled_back_by_the_caller_alone(on_postgres):
    """A statement of one_round_trip that fails inside the caller's atomic block leaves the caller's transaction
    to the caller: its block rolls back to its savepoint and the transaction goes on. A ROLLBACK sent here ended
    the caller's whole transaction under Django: what it had written was gone, and the block's own rollback to
    its savepoint failed in turn."""
    from curation.infra.round_trip import one_round_trip

    with transaction.atomic():
        kept = make_entry()
        with pytest.raises(DataError), transaction.atomic():
            one_round_trip([("SELECT 1 / %s", [0])])
        assert Entry.objects.filter(pk=kept.pk).exists()  # the caller's transaction, still open
    assert Entry.objects.filter(pk=kept.pk).exists()  # and committed


@pytest.mark.django_db(transaction=True)
def test_a_sweeps_batch_is_its_read_and_its_write_without_a_savepoint():
    """A batch's transaction is the batch's own: its write makes no savepoint (two round trips) inside it, and
    a ConcurrentChange in it still rolls the whole batch back."""
    make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    with CaptureQueriesContext(connection) as queries:
        run, _ = run_sweep("archive", as_of=AS_OF)
    assert not [q["sql"] for q in queries if "SAVEPOINT" in q["sql"]]
    assert (run.state, run.rows_changed) == (TaskRun.State.SUCCEEDED, 1)


def test_keys_written_under_other_decay_settings_are_still_judged_and_then_rewritten(settings):
    faded = make_entry(base_confidence=0.5, last_verified_at=days_before(120))  # 0.407 at 0.95 a month
    kept = make_entry(base_confidence=0.9, last_verified_at=days_before(10))
    # The operator makes decay much faster: 0.5 × 0.7^4 = 0.12, under the archive threshold.
    settings.CURATION = {**settings.CURATION, "DECAY_FACTOR": 0.7}
    run, _ = run_sweep("archive", as_of=AS_OF)
    assert Entry.objects.get(pk=faded.pk).status == Status.ARCHIVED
    assert Entry.objects.get(pk=kept.pk).status == Status.ACTIVE
    first, _ = run_sweep("decay", as_of=AS_OF)
    again, _ = run_sweep("decay", as_of=AS_OF)
    assert (first.rows_changed, again.rows_changed) == (1, 0)  # the one active entry's key, then nothing
    rules = lifecycle.rules()
    stored = Entry.objects.get(pk=kept.pk)
    assert (stored.decay_key, stored.decay_rate) == (
        pytest.approx(lifecycle.decay_key(0.9, days_before(10), rules)),
        lifecycle.decay_rate(rules),
    )


def test_archive_reads_only_the_entries_that_may_have_crossed():
    faded = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    for _ in range(5):
        make_entry(base_confidence=0.9, last_verified_at=days_before(5))
    run, _ = run_sweep("archive", as_of=AS_OF)
    assert (run.rows_examined, run.rows_changed) == (1, 1)
    assert Entry.objects.get(pk=faded.pk).status == Status.ARCHIVED


def test_archive_reads_its_batch_once_finding_judging_and_locking_it_in_one_statement():
    """The entries the archive changes are read once, in the statement that finds them by the decay index,
    judges them by the rule and locks them (on PostgreSQL); then one statement writes them with their Events."""
    faded = [make_entry(base_confidence=0.3, last_verified_at=days_before(90 + i)) for i in range(3)]
    make_entry(base_confidence=0.9, last_verified_at=days_before(5))
    with CaptureQueriesContext(connection) as queries:
        run, _ = run_sweep("archive", as_of=AS_OF)
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and 'FROM "curation_entry"' in q["sql"]]
    assert len(reads) == 1
    if connection.vendor == "postgresql":
        assert reads[0].endswith("FOR NO KEY UPDATE")
    assert (run.rows_examined, run.rows_changed) == (3, 3)
    assert {e.status for e in Entry.objects.filter(pk__in=[e.pk for e in faded])} == {Status.ARCHIVED}
    assert Event.objects.filter(entry__in=faded, action="archive").count() == 3


def test_archive_reads_only_what_its_write_checks_and_the_confidence():
    """The archive's batch statement selects the columns write_entries checks and the decayed confidence its
    reasons name: not the other sweeps' columns (when it was archived, the review date, the utility)."""
    make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    with CaptureQueriesContext(connection) as queries:
        run, _ = run_sweep("archive", as_of=AS_OF)
    (read,) = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and 'FROM "curation_entry"' in q["sql"]]
    selected = read.split(' FROM "curation_entry"')[0]
    assert [column.split(" AS ")[-1].strip('"') for column in selected.split(", ") if " AS " in column] == [
        *ROW_COLUMNS,
        "new_confidence",
    ]
    assert run.rows_changed == 1


def test_a_sweeps_confidence_is_compiled_once_for_its_settings(monkeypatch):
    """The archive's and the decay's statements carry the decay rule compiled once per decay settings and bound
    to each run's time: a later run at a later moment compiles nothing again, and archives what has decayed
    by its own moment."""
    from django.db.models import Case

    from curation.selectors import confidence

    monkeypatch.setattr(confidence, "_COMPILED", {}, raising=False)
    compiled = []
    case_sql = Case.as_sql

    def counted(self, compiler, connection, **extra):
        sql, params = case_sql(self, compiler, connection, **extra)
        if "base_confidence" in sql:
            compiled.append(sql)
        return sql, params

    monkeypatch.setattr(Case, "as_sql", counted)
    rules = lifecycle.rules()
    days_to_threshold = rules.decay_period_days * math.log(rules.archive_below / 0.8) / math.log(rules.decay_factor)
    later = make_entry(base_confidence=0.8, last_verified_at=AS_OF - datetime.timedelta(days=days_to_threshold - 10))
    for moment in (AS_OF, AS_OF + datetime.timedelta(days=20)):
        run_sweep("decay", as_of=moment)
        archive, _ = run_sweep("archive", as_of=moment)
        assert archive.rows_changed == (moment > AS_OF)
    assert Entry.objects.get(pk=later.pk).status == Status.ARCHIVED
    assert len(compiled) == 1


def test_revive_through_the_evidence_service(reviewer, make_candidate):
    """The whole path a reviewer takes: an archived entry gets independent evidence on its page; the next
    revive run brings it back, verified at the evidence's time. Self-signal evidence does nothing."""
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1, at=days_before(700))
    run_sweep("archive", as_of=days_before(1))
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED
    services.add_evidence(
        entry.pk,
        data={"kind": "reflection", "signal": "self", "excerpt": "I still think so"},
        actor=reviewer,
        at=days_before(0.5),
    )
    run_sweep("revive", as_of=AS_OF)
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED
    evidence = services.add_evidence(
        entry.pk,
        data={"kind": "review", "signal": "independent", "excerpt": "second judge agrees"},
        actor=reviewer,
        at=days_before(0.25),
    )
    run, sweep = run_sweep("revive", as_of=AS_OF)
    revived = Entry.objects.get(pk=entry.pk)
    assert (revived.status, revived.archived_at, revived.archive_reason) == (Status.ACTIVE, None, "")
    assert revived.base_confidence == pytest.approx(0.8)
    assert revived.last_verified_at == evidence.observed_at
    event = Event.objects.filter(entry=entry).latest("id")
    assert (event.action, event.actor_label) == ("revive", "lifecycle:revive")
    assert "independent evidence" in event.reason
    assert (event.before["status"], event.after["status"]) == ("archived", "active")
    assert sweep.changed == 1


def test_a_run_killed_between_batches_is_finished_by_the_next():
    doomed = [make_entry(base_confidence=0.3, last_verified_at=days_before(90)) for _ in range(5)]
    calls = []

    def die_after_first_batch(sweep):
        calls.append(sweep.changed)
        raise SystemExit("worker killed")

    with pytest.raises(SystemExit):
        run_sweep("archive", as_of=AS_OF, batch_size=2, after_batch=die_after_first_batch)
    failed = TaskRun.objects.get(task="archive")
    assert (failed.state, failed.rows_changed) == (TaskRun.State.FAILED, 2)
    assert "worker killed" in failed.error
    # The finished batch is whole (rows and their Events), the rest untouched.
    statuses = [Entry.objects.get(pk=e.pk).status for e in doomed]
    assert statuses == [Status.ARCHIVED] * 2 + [Status.ACTIVE] * 3
    assert Event.objects.filter(action="archive").count() == 2

    run, sweep = run_sweep("archive", as_of=AS_OF, batch_size=2)
    assert (run.state, sweep.changed) == (TaskRun.State.SUCCEEDED, 3)
    for e in doomed:
        assert Event.objects.filter(entry_id=e.pk, action="archive").count() == 1
        assert Entry.objects.get(pk=e.pk).version == e.version + 1


def test_dry_run_changes_nothing():
    entry = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    before, events = state_of_all(), Event.objects.count()
    run, sweep = run_sweep("archive", as_of=AS_OF, dry_run=True)
    assert sweep.changed == 1 and sweep.samples == [f"#{entry.pk} archive: decayed to 0.257 (below 0.3)"]
    assert run.dry_run and run.state == TaskRun.State.SUCCEEDED
    assert state_of_all() == before
    assert Event.objects.count() == events


def test_capacity_counts_the_scope_and_below(settings):
    settings.CURATION = {**settings.CURATION, "SCOPE_CAPACITY": {"acme": 1}}
    outside = make_entry(scope="globex/web", signal="self")
    weak = make_entry(scope="acme/web/ci", signal="self")
    newest = make_entry(scope="acme", signal="self")
    run_sweep("capacity", as_of=AS_OF)
    assert Entry.objects.get(pk=weak.pk).archive_reason == f"displaced by #{newest.pk}"
    assert Entry.objects.get(pk=outside.pk).status == Status.ACTIVE
    event = Event.objects.get(entry=weak, action="archive")
    assert event.reason == "capacity: acme holds 2 active entries, its budget is 1"


def test_unknown_task_and_naive_time_are_refused():
    with pytest.raises(ValueError, match="Unknown lifecycle task"):
        run_sweep("vacuum")
    with pytest.raises(ValueError, match="time zone"):
        run_sweep("decay", as_of=datetime.datetime(2026, 1, 1))


# --- the lock -----------------------------------------------------------------------------------------------


def test_second_run_skips_while_the_first_holds_the_lock():
    """Whatever the database: while one run holds the lock the other exits at once, records "skipped",
    and changes nothing."""
    entry = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    with holding_lock("archive"):
        run, sweep = run_sweep("archive", as_of=AS_OF)
    assert run.state == TaskRun.State.SKIPPED
    assert "another archive run held the lock" in run.error
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE
    run, sweep = run_sweep("archive", as_of=AS_OF)
    assert (run.state, sweep.changed) == (TaskRun.State.SUCCEEDED, 1)


def test_a_lost_worker_neither_blocks_nor_stays_running(settings):
    """A run whose worker was killed past the hard time limit: the next run works, and the old record
    says the worker was lost instead of "running" forever."""
    lost = TaskRun.objects.create(
        task="decay",
        as_of=AS_OF,
        started_at=datetime.datetime.now(datetime.timezone.utc)
        - datetime.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60),
    )
    run, _ = run_sweep("decay", as_of=AS_OF)
    assert run.state == TaskRun.State.SUCCEEDED
    lost.refresh_from_db()
    assert lost.state == TaskRun.State.FAILED and "worker was lost" in lost.error and lost.finished_at


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_change_each_row_once(on_postgres):
    """Real threads and connections: the second run starts while the first is between batches."""
    doomed = [make_entry(base_confidence=0.3, last_verified_at=days_before(90)) for _ in range(6)]
    first_is_working, second_done = threading.Event(), threading.Event()
    results = {}

    def hold_between_batches(sweep):
        first_is_working.set()
        second_done.wait(10)

    def first():
        try:
            results["first"] = run_sweep("archive", as_of=AS_OF, batch_size=2, after_batch=hold_between_batches)
        finally:
            connection.close()

    def second():
        try:
            first_is_working.wait(10)
            results["second"] = run_sweep("archive", as_of=AS_OF, batch_size=2)
        finally:
            second_done.set()
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results["first"][0].state == TaskRun.State.SUCCEEDED and results["first"][1].changed == 6
    assert results["second"][0].state == TaskRun.State.SKIPPED and results["second"][1].changed == 0
    for e in doomed:
        assert Event.objects.filter(entry_id=e.pk, action="archive").count() == 1
    assert set(Entry.objects.values_list("status", flat=True)) == {Status.ARCHIVED}


def test_review_due_entry_confirmed_is_not_sent_back(reviewer, make_candidate):
    entry = make_candidate(review_by=(AS_OF - datetime.timedelta(days=3)).date().isoformat())
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1, at=days_before(30))
    run_sweep("review_due", as_of=AS_OF)
    queued = Entry.objects.get(pk=entry.pk)
    assert queued.queue_reason == QueueReason.RECHECK_REVIEW_DUE
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=queued.version, at=AS_OF)
    run, sweep = run_sweep("review_due", as_of=AS_OF + datetime.timedelta(days=1))
    assert sweep.changed == 0
    assert Entry.objects.get(pk=entry.pk).queued_at is None
    assert list(Event.objects.filter(entry=entry).values_list("action", flat=True).order_by("id")) == [
        "submit",
        "approve",
        "queue_recheck",
        "confirm",
    ]


def test_low_utility_keeps_an_earlier_queue_position():
    # Three failed uses: the first sent it back for a recheck, nobody has confirmed it since.
    entry = make_entry(
        utility_n=3, utility_sum=0.0, outcomes=["failure"] * 3, confirm_failures=False, base_confidence=0.2
    )
    earlier = entry.queued_at
    assert (earlier, entry.queue_reason) == (days_before(10) - datetime.timedelta(hours=2), QueueReason.RECHECK_FAILURE)
    run_sweep("low_utility", as_of=AS_OF)
    got = Entry.objects.get(pk=entry.pk)
    assert (got.queued_at, got.queue_reason, got.status) == (earlier, QueueReason.RECHECK_LOW_UTILITY, Status.ARCHIVED)
    assert lifecycle.is_low_utility(retrieval_count=3, utility_sum=0.0, utility_n=3, policies=lifecycle.policies())


def test_capacity_names_the_approval_that_went_over_the_budget(settings, reviewer, make_candidate):
    """An older candidate approved last is the newcomer, even though a newer row exists in the scope."""
    settings.CURATION = {**settings.CURATION, "SCOPE_CAPACITY": {"acme/billing-api": 2}}
    late_approval = make_candidate(confidence=0.3)  # merit 0.15: weaker than `weak` (0.2)
    strong = make_entry(signal="external", base_confidence=0.9)
    weak = make_entry(signal="self", base_confidence=0.4)
    services.approve_candidate(late_approval.pk, actor=reviewer, expected_version=1, at=days_before(1))
    run_sweep("capacity", as_of=AS_OF)
    assert Entry.objects.get(pk=weak.pk).archive_reason == f"displaced by #{late_approval.pk}"
    assert Entry.objects.get(pk=late_approval.pk).status == Status.ACTIVE  # weaker still, but the newcomer
    assert Entry.objects.get(pk=strong.pk).status == Status.ACTIVE


def _contradicting_and_duplicated_entries():
    """Active entries as a revival or an import leaves them: never compared at ingest."""
    rebase = make_entry(
        scope="acme/billing-api",
        trigger="Merging a feature branch into main",
        content="Always rebase before merging.",
        last_verified_at=days_before(1),
    )
    no_rebase = make_entry(
        scope="acme/billing-api/container",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        last_verified_at=days_before(1),
    )
    twins = [
        make_entry(
            scope="acme/web",
            trigger="Editing config files inside the web container",
            content=f"Confirm the repository root with git rev-parse before editing config{tail}.",
            last_verified_at=days_before(1),
        )
        for tail in ("", " files")
    ]
    return rebase, no_rebase, twins


def test_conflict_and_consolidation_detection_run_as_recorded_lifecycle_tasks():
    rebase, no_rebase, twins = _contradicting_and_duplicated_entries()
    before = state_of_all()
    conflicts_run, conflicts_sweep = run_sweep("conflicts", as_of=AS_OF, triggered_by="test")
    proposals_run, _ = run_sweep("consolidation", as_of=AS_OF, triggered_by="test")

    [conflict] = Conflict.objects.all()
    assert (conflict.entry_a_id, conflict.entry_b_id, conflict.detected_by) == (rebase.pk, no_rebase.pk, "sweep")
    [proposal] = ConsolidationProposal.objects.all()
    assert proposal.kind == ConsolidationProposal.Kind.MERGE and {e.pk for e in proposal.entries.all()} == {
        t.pk for t in twins
    }
    for run in (conflicts_run, proposals_run):
        run.refresh_from_db()
        assert (run.state, run.rows_examined, run.rows_changed) == (TaskRun.State.SUCCEEDED, 4, 1)
    assert conflicts_sweep.samples == [f"#{rebase.pk} and #{no_rebase.pk}: {conflict.reason}"]
    assert state_of_all() == before  # detection opens queue items; it changes no entry
    # What each run opened is traced to it by its Events.
    assert {e.request_id for e in Event.objects.filter(conflict=conflict)} == {f"taskrun-{conflicts_run.pk}"}
    assert {e.request_id for e in Event.objects.filter(proposal=proposal)} == {f"taskrun-{proposals_run.pk}"}

    again = [run_sweep(task, as_of=AS_OF)[0] for task in ("conflicts", "consolidation")]
    assert [run.rows_changed for run in again] == [0, 0]
    assert (Conflict.objects.count(), ConsolidationProposal.objects.count()) == (1, 1)


def test_a_dry_run_of_detection_says_what_it_would_open_and_opens_nothing():
    _contradicting_and_duplicated_entries()
    events = Event.objects.count()
    runs = [run_sweep(task, as_of=AS_OF, dry_run=True) for task in ("conflicts", "consolidation")]
    assert [(run.dry_run, run.rows_changed, len(sweep.samples)) for run, sweep in runs] == [(True, 1, 1), (True, 1, 1)]
    assert (Conflict.objects.count(), ConsolidationProposal.objects.count(), Event.objects.count() - events) == (
        0,
        0,
        0,
    )


def test_after_a_successful_run_detection_reads_only_what_changed_since():
    rebase, _, _ = _contradicting_and_duplicated_entries()
    alone = make_entry(
        scope="acme/api",
        trigger="Rotating the signing keys of the api gateway",
        content="Announce the rotation in the ops channel a day before rotating the keys.",
    )
    for task in ("conflicts", "consolidation"):
        run_sweep(task, as_of=AS_OF)
    # Written as a revival or an edit writes them: stamped now. One contradicts the old entry from the scope
    # above it, one repeats an older (lower id) entry of its scope.
    now = timezone.now()
    below = make_entry(
        scope="acme/billing-api/container/x",
        trigger="Merging feature branches into main",
        content="Never rebase anything.",
        updated_at=now,
    )
    twin = make_entry(
        scope="acme/api",
        trigger="Rotating the signing keys of the api gateway",
        content="Announce the rotation in the ops channel a day before you rotate the keys.",
        updated_at=now,
    )
    # An old pair nobody touched since the first run: not read again (the first run would have seen it).
    make_entry(scope="acme/docs", trigger="Publishing the docs site", content="Always purge the CDN cache.")
    make_entry(scope="acme/docs", trigger="Publishing the docs site", content="Never purge the CDN cache.")

    conflicts_run, _ = run_sweep("conflicts", as_of=AS_OF)
    proposals_run, _ = run_sweep("consolidation", as_of=AS_OF)
    assert (conflicts_run.rows_examined, conflicts_run.rows_changed) == (2, 1)
    assert (proposals_run.rows_examined, proposals_run.rows_changed) == (2, 1)
    new_conflict = Conflict.objects.get(entry_b=below)
    assert new_conflict.entry_a_id == rebase.pk
    assert not Conflict.objects.filter(entry_a__scope="acme/docs").exists()
    newest = ConsolidationProposal.objects.order_by("-id").first()
    assert set(newest.entries.all()) == {alone, twin}


def test_an_entry_revived_in_a_replay_of_the_past_is_read_by_the_next_detection_run():
    rebase = make_entry(
        scope="acme/billing-api",
        trigger="Merging a feature branch into main",
        content="Always rebase before merging.",
        last_verified_at=days_before(1),
    )
    run_sweep("conflicts", as_of=AS_OF)  # the first run: nothing to find yet
    archived = make_archived(
        archived_at=days_before(10),
        scope="acme/billing-api",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
    )
    add_evidence_row(archived, signal="external", observed_at=days_before(1))
    run_sweep("revive", as_of=AS_OF)  # as of a moment in the past (run_lifecycle --at)
    assert Entry.objects.get(pk=archived.pk).status == Status.ACTIVE
    run, _ = run_sweep("conflicts", as_of=AS_OF)
    assert run.rows_examined == 1
    assert Conflict.objects.filter(entry_a=rebase, entry_b=archived).exists()


def test_a_full_run_reads_every_active_entry_again():
    _contradicting_and_duplicated_entries()
    run_sweep("conflicts", as_of=AS_OF)
    # A pair the first run could not see (written behind its back, stamped long ago), as after a change
    # of the detection rules: only a full run reads it.
    make_entry(scope="acme/docs", trigger="Publishing the docs site", content="Always purge the CDN cache.")
    make_entry(scope="acme/docs", trigger="Publishing the docs site", content="Never purge the CDN cache.")
    assert run_sweep("conflicts", as_of=AS_OF)[0].rows_examined == 0
    call_command("run_lifecycle", "conflicts", "--full", stdout=open("/dev/null", "w"))
    assert Conflict.objects.filter(entry_a__scope="acme/docs").count() == 1
    assert TaskRun.objects.filter(task="conflicts").latest("id").rows_examined == 6


def test_one_clock_stamps_decisions_evidence_and_sweeps_in_a_replayed_future(reviewer, make_candidate):
    """No `at=` anywhere: the replay only moves the clock. Evidence stamped in the replayed future revives an
    entry archived in that future, and every Event carries the replayed time."""
    future = clock.now() + datetime.timedelta(days=800)
    entry = make_candidate()
    with clock.running_at(future - datetime.timedelta(days=700)) as approved_at:
        services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    run_sweep("archive", as_of=future - datetime.timedelta(days=1))
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED
    with clock.running_at(future - datetime.timedelta(hours=12)) as evidence_at:
        evidence = services.add_evidence(
            entry.pk, data={"kind": "review", "signal": "independent", "excerpt": "second judge agrees"}, actor=reviewer
        )
    assert (evidence.created_at, evidence.observed_at) == (evidence_at, evidence_at)
    run_sweep("revive", as_of=future)
    revived = Entry.objects.get(pk=entry.pk)
    assert (revived.status, revived.last_verified_at) == (Status.ACTIVE, evidence_at)
    stamps = list(Event.objects.filter(entry=entry).order_by("id").values_list("action", "created_at"))
    assert stamps[-4:] == [
        ("archive", future - datetime.timedelta(days=1)),
        ("add_evidence", evidence_at),
        ("trust_raised", evidence_at),  # a person's evidence confirms the agent's lesson, in the same moment
        ("revive", future),
    ]
    assert ("approve", approved_at) in stamps
