"""What an entry's history costs to store: Event bytes per 1,000,000 Events, as deltas and as the two whole
snapshots each write stored before.

    .venv/bin/python benchmarks/event_bytes_bench.py [--entries N]      (make bench-event-bytes)

Each of N entries lives the life the product gives most entries, through the write path itself
(services/entry_writes.py, in batches as the sweeps and the outcomes write): submitted, approved, used by
two tasks that succeeded (an agent's outcome: its hits and its utility, which raise the base confidence),
then archived by the daily sweep's action. That is five Events an entry. The Events are those the product
writes now (deltas). The same Events as two whole snapshots are rebuilt from them (rules/event_deltas.fold:
the version before and the version after, with the words the write added): exactly what each write stored
before, so both shapes are measured on the same history, in one run, in the same table's column types.

Printed per 1,000,000 Events: the bytes of `before` + `after` as PostgreSQL stores them (pg_column_size,
after its compression) and as JSON text, and of the whole row. Target: the columns ≥ 3× smaller.
Runs on PostgreSQL in a database of its own (DATABASE_URL, default memoryadmin_event_bytes_bench)."""

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_event_bytes_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from benchmarks.common import ensure_database  # noqa: E402

AT = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.timezone.utc)
BATCH = 500
PER_MILLION = 1_000_000


def live(n: int) -> None:
    """n entries through their life, BATCH at a time, each step one call of the write path."""
    from django.db import transaction
    from django.db.models import F

    from curation.models import Entry, EventAction, QueueReason, Signal, Status
    from curation.services.entry_writes import insert_entries, write_entries

    for start in range(0, n, BATCH):
        new = [
            (
                Entry(
                    kind="failure_lesson",
                    scope=f"org{i % 50}/service-{i % 400}/ci",
                    trigger=f"When the deploy of service {i % 400} fails with a lock timeout on step {i % 37}",
                    content=(
                        f"Release the migration lock of service {i % 400} with the runbook's unlock step, then "
                        f"re-run the deploy; do not restart the database (lesson {i})."
                    ),
                    conditions=["deploy", "lock timeout", f"service-{i % 400}"],
                    boundary="Not when another deploy of the same service is running.",
                    recheck_when="The deploy tool replaces its migration lock.",
                    signal=Signal.SELF,
                    base_confidence=0.5,
                    status=Status.PENDING,
                    queued_at=AT,
                    queue_reason=QueueReason.NEW,
                    created_by_label="agent-ci",
                    created_at=AT,
                ),
                "submitted by agent-ci for task ci-run-" + str(i),
            )
            for i in range(start, min(n, start + BATCH))
        ]
        with transaction.atomic():
            insert_entries(new, action=EventAction.SUBMIT, at=AT, actor_label="agent-ci")
        rows = list(Entry.objects.filter(pk__in=[e.pk for e, _ in new]).values("id", "version", "status"))
        steps = [
            (Status.PENDING, EventAction.APPROVE, {"status": Status.ACTIVE}, "approved by the scope's policy"),
            (Status.ACTIVE, EventAction.OUTCOME_SUCCESS, None, "task succeeded with it"),
            (Status.ACTIVE, EventAction.OUTCOME_SUCCESS, None, "task succeeded with it"),
            (Status.ACTIVE, EventAction.ARCHIVE, {"archive_reason": "unused for 90 days"}, "unused for 90 days"),
        ]
        for day, (status, action, values, reason) in enumerate(steps, start=1):
            at = AT + datetime.timedelta(days=day)
            row_values = None
            if values is None:  # an outcome: one more hit, its utility, a little more confidence
                values = {"hit_count": F("hit_count") + 1, "utility_sum": F("utility_sum") + 1.0}
                row_values = {r["id"]: {"base_confidence": 0.5 + 0.05 * day, "last_verified_at": at} for r in rows}
            with transaction.atomic():
                write_entries(
                    rows,
                    expected_status=status,
                    action=action,
                    reason_of=lambda e, reason=reason: reason,
                    actor_label="bench",
                    at=at,
                    values=values,
                    row_values=row_values,
                )
            rows = list(Entry.objects.filter(pk__in=[r["id"] for r in rows]).values("id", "version", "status"))


def whole_snapshots() -> int:
    """Fill bench_whole_snapshots with each Event as the two whole snapshots it stored before: the entry's
    version before the write and the version after it (with the words the write added), rebuilt from the
    deltas. Answers the Events rebuilt."""
    from django.db import connection

    from curation.models import Event
    from curation.rules.event_deltas import STATE_KEYS, fold

    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_whole_snapshots (id bigint PRIMARY KEY, before jsonb, after jsonb)"
        )
        cursor.execute("TRUNCATE bench_whole_snapshots")
    rows, history, last_entry = [], [], None
    events = Event.objects.order_by("entry_id", "entry_version", "id").values_list(
        "id", "entry_id", "entry_version", "after"
    )
    for pk, entry_id, version, after in events.iterator(chunk_size=5000):
        if entry_id != last_entry:
            history, last_entry = [], entry_id
        previous = fold(history)[-1][1] if history else None
        history.append((version, after))
        state = fold(history)[-1][1]
        words = {k: v for k, v in (after or {}).items() if k not in STATE_KEYS}
        rows.append((pk, json.dumps(previous) if previous else None, json.dumps({**state, **words})))
        if len(rows) >= 5000:
            _insert(rows)
            rows = []
    _insert(rows)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM bench_whole_snapshots")
        return cursor.fetchone()[0]


def _insert(rows) -> None:
    from django.db import connection

    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO bench_whole_snapshots (id, before, after) VALUES (%s, %s::jsonb, %s::jsonb)", rows
            )


SIZES = """
SELECT count(*),
       sum(coalesce(pg_column_size(e.before), 0) + coalesce(pg_column_size(e.after), 0)),
       sum(coalesce(pg_column_size(w.before), 0) + coalesce(pg_column_size(w.after), 0)),
       sum(coalesce(octet_length(e.before::text), 0) + coalesce(octet_length(e.after::text), 0)),
       sum(coalesce(octet_length(w.before::text), 0) + coalesce(octet_length(w.after::text), 0)),
       sum(pg_column_size(e.*)),
       sum(pg_column_size(e.*) - coalesce(pg_column_size(e.before), 0) - coalesce(pg_column_size(e.after), 0)
           + coalesce(pg_column_size(w.before), 0) + coalesce(pg_column_size(w.after), 0))
FROM curation_event e JOIN bench_whole_snapshots w ON w.id = e.id
"""


def per_million(total: int, events: int) -> str:
    return f"{total * PER_MILLION / events / 1e6:8,.0f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000)
    args = parser.parse_args()

    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE curation_event, curation_evidence, curation_similarentry, curation_entry, curation_entryband "
            "RESTART IDENTITY CASCADE"
        )
    print(
        f"PostgreSQL {connection.cursor().connection.info.server_version}, database "
        f"{connection.settings_dict['NAME']}, {args.entries:,} entries, {os.cpu_count()} CPUs (shared)"
    )
    start = time.perf_counter()
    live(args.entries)
    print(f"wrote their lives through the write path in {time.perf_counter() - start:.1f} s")
    rebuilt = whole_snapshots()
    with connection.cursor() as cursor:
        cursor.execute(SIZES)
        events, delta_cols, whole_cols, delta_text, whole_text, delta_row, whole_row = cursor.fetchone()
        cursor.execute("DROP TABLE bench_whole_snapshots")
    assert events == rebuilt, (events, rebuilt)
    print(f"{events:,} Events (5 an entry: submit, approve, 2 outcomes, archive); per 1,000,000 Events:")
    print(f"  {'':32} {'whole snapshots':>16} {'deltas':>12} {'smaller':>8}")
    for name, whole, delta in (
        ("before + after, stored", whole_cols, delta_cols),
        ("before + after, JSON text", whole_text, delta_text),
        ("whole row, stored", whole_row, delta_row),
    ):
        print(f"  {name:32} {per_million(whole, events):>16} {per_million(delta, events):>12} {whole / delta:7.2f}×")
    ratio = whole_cols / delta_cols
    ok = ratio >= 3
    print(f"before + after stored: {ratio:.2f}× smaller (target ≥ 3×): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
