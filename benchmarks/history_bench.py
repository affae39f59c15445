"""The partitioned history: do an entry's history and the candidates queue keep their query counts and their
times when the Event table (10,000,000 rows) goes from one heap to monthly partitions? And with
--retrievals N, do an agent's read (its record's insert) and a feedback's lookup keep theirs when the
retrievals and the feedback go too (migration 0054)?

    .venv/bin/python benchmarks/history_bench.py [--events N] [--entries N] [--retrievals N] [--reps N] [--keep]
    (make bench-history)

One PostgreSQL database of its own (BENCH_DATABASE_URL, default ma_partitions_bench), made afresh: migrated
to the schema before partitioning, filled set-based (the pending queue by COPY, as queue_bench does; the
Events with one INSERT ... SELECT generate_series a million rows at a time, spread over the last 24 months
and over the entries, with a few under a replayed clock far in the past), VACUUM ANALYZEd, measured; then
`migrate` partitions it (its time is printed), VACUUM ANALYZE, measured again. The retrievals (--retrievals,
none by default) are filled the same way over the same months, each with two retrieved entries and half
with feedback, one in ten under a random id as made before ids were time-ordered; a read's record and the
feedback's reads are measured at each step: one heap, the history partitioned (0048, migrated to 0053), and
the retrievals and feedback partitioned (0054). The pages go through
django.test.Client as a logged-in reviewer (server time: middleware, queries, templates). The database is
dropped at the end unless --keep."""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import configure, cpu_seconds, percentile, timed  # noqa: E402

BEFORE = ("curation", "0046_screened_evidence_and_skill_drafts")
# The history partitioned (0048), the retrievals and feedback not yet (0054).
EVENTS_ONLY = ("curation", "0053_forget_purge_evidence_text")
CHUNK = 1_000_000
MONTHS = 24
QUEUE_URL = "/review/candidates/"


def fill_entries(total: int) -> None:
    """`total` pending entries by COPY, with queue_bench's rows (its evidence rows are left out: this bench
    is about the Events)."""
    import random

    from django.db import connection, transaction
    from django.utils import timezone

    from benchmarks.queue_bench import ENTRY_COLUMNS, entry_row

    rng, now, started = random.Random(7), timezone.now(), time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.copy(f"COPY curation_entry ({', '.join(ENTRY_COLUMNS)}) FROM STDIN") as copy:
            for _ in range(total):
                copy.write_row(entry_row(rng, now))
    print(f"  entries: {total:>11,}  ({time.perf_counter() - started:6.0f} s)", flush=True)


def fill_events(total: int) -> None:
    """`total` Events over the pending entries, oldest first, as a busy history would be: each entry's share
    spread over the last MONTHS months; one in a thousand written under a replayed clock in 1999."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM curation_entry")
        low, high = cursor.fetchone()
    span = high - low + 1
    started = time.perf_counter()
    # Set-based and fast: the table's indexes and keys go while it fills and come back after (one build and
    # one check each, where row by row they would cost per row).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'curation_event'::regclass AND NOT i.indisprimary"
        )
        indexes = cursor.fetchall()
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'curation_event'::regclass AND contype = 'f'"
        )
        keys = cursor.fetchall()
        for name, _ in keys:
            cursor.execute(f"ALTER TABLE curation_event DROP CONSTRAINT {name}")
        for name, _ in indexes:
            cursor.execute(f"DROP INDEX {name}")
    for start in range(0, total, CHUNK):
        stop = min(total, start + CHUNK)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                """
                INSERT INTO curation_event (entry_id, entry_label, actor_label, action, reason, before, after,
                                            request_id, entry_version, created_at)
                SELECT %(low)s + g %% %(span)s,
                       '#' || (%(low)s + g %% %(span)s) || ' When the deploy of a service fails with a lock timeout',
                       CASE WHEN g %% 3 = 0 THEN 'agent:ci' ELSE 'rita' END,
                       CASE WHEN g %% 3 = 0 THEN 'add_evidence' ELSE 'decay' END,
                       CASE WHEN g %% 3 = 0 THEN '' ELSE 'confidence decayed by the nightly sweep' END,
                       jsonb_build_object('confidence', 0.7),
                       jsonb_build_object('confidence', 0.69, 'excerpt', 'exit 1: lock timeout on step ' || g %% 37),
                       'taskrun-' || g / 5000, 1 + g / %(span)s,
                       CASE WHEN g %% 1000 = 7 THEN timestamptz '1999-06-01' + g * interval '1 second'
                            ELSE now() - interval '%(months)s months' + (g::float8 / %(total)s) * interval '%(months)s months'
                       END
                FROM generate_series(%(start)s, %(stop)s - 1) AS g
                """,
                {"low": low, "span": span, "start": start, "stop": stop, "total": total, "months": MONTHS},
            )
        print(f"  events: {stop:>12,}  ({time.perf_counter() - started:6.0f} s)", flush=True)
    with connection.cursor() as cursor:
        for _, definition in indexes:
            cursor.execute(definition)
        for name, definition in keys:
            cursor.execute(f"ALTER TABLE curation_event ADD CONSTRAINT {name} {definition}")
    print(f"  indexes and keys back  ({time.perf_counter() - started:6.0f} s)", flush=True)


def fill_retrievals(total: int, token_id: int) -> None:
    """`total` agent reads spread over the last MONTHS months as record_retrieval writes them: an id made from
    the read's time (UUID version 7; one in ten random, as before), two retrieved entries each, and feedback
    on every other one."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM curation_entry")
        low, high = cursor.fetchone()
    span, started = high - low + 1, time.perf_counter()
    for start in range(0, total, CHUNK):
        stop = min(total, start + CHUNK)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                """
                WITH given AS (
                    SELECT g, now() - interval '%(months)s months'
                              + (g::float8 / %(total)s) * interval '%(months)s months' AS at
                    FROM generate_series(%(start)s, %(stop)s - 1) AS g
                ), retrieval AS (
                    INSERT INTO curation_retrieval (id, token_id, scope, query, task_ref, entry_ids, memory_version,
                                                    arm, created_at)
                    SELECT CASE WHEN g %% 10 = 4 THEN gen_random_uuid()
                                ELSE (lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7'
                                      || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid
                           END,
                           %(token)s, 'acme/billing-api', 'the queue backs up', 'task-' || g,
                           jsonb_build_array(%(low)s + g %% %(span)s, %(low)s + (g * 7) %% %(span)s), 1, 'memory', at
                    FROM given
                    RETURNING id, entry_ids, task_ref, created_at
                ), items AS (
                    INSERT INTO curation_retrievedentry (retrieval_id, entry_id, rank, created_at)
                    SELECT r.id, e.value::bigint, e.position - 1, r.created_at
                    FROM retrieval AS r, jsonb_array_elements_text(r.entry_ids) WITH ORDINALITY AS e(value, position)
                )
                INSERT INTO curation_feedback (retrieval_id, outcome, used_entry_ids, created_at)
                SELECT id, 'success', '[]', created_at + interval '1 minute' FROM retrieval
                WHERE right(task_ref, 1) IN ('0', '2', '4', '6', '8')
                """,
                {"low": low, "span": span, "start": start, "stop": stop, "total": total, "months": MONTHS,
                 "token": token_id},
            )  # fmt: skip
        print(f"  retrievals: {stop:>8,}  ({time.perf_counter() - started:6.0f} s)", flush=True)


def vacuum() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("curation_event", "curation_entry", "curation_evidence", "curation_retrieval",
                      "curation_retrievedentry", "curation_feedback"):  # fmt: skip
            cursor.execute(f"VACUUM (ANALYZE) {table}")


def load() -> str:
    """The load average (1, 5, 15 minutes): the machine is shared, every figure is read beside it."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def read_record_times(token_id: int, reps: int) -> dict:
    """An agent's read as it is written (entry_writes.insert_counted_retrieval: the retrieval, its items and the
    counters, one statement committed on its own), `reps` times, against the raw statement in the same run:
    one row inserted and committed the same way into a plain table of the retrievals' shape. Wall p50 and
    the database backend's CPU per read, both ways."""
    import datetime

    from django.db import connection

    from curation.models import Retrieval
    from curation.services.entry_writes import insert_counted_retrieval
    from curation.services.usage import time_ordered_id

    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id), min(id) + 1 FROM curation_entry")
        entry_ids = list(cursor.fetchone())
        cursor.execute("DROP TABLE IF EXISTS bench_raw_retrieval")
        cursor.execute(
            "CREATE TABLE bench_raw_retrieval (id uuid PRIMARY KEY, token_id bigint, scope text, query text, "
            "task_ref text, entry_ids jsonb, memory_version integer, arm text, created_at timestamptz)"
        )
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    def app():
        now = datetime.datetime.now(datetime.timezone.utc)
        insert_counted_retrieval(
            Retrieval(id=time_ordered_id(now), token_id=token_id, scope="acme/billing-api", query="queue",
                      task_ref="bench", entry_ids=entry_ids, memory_version=1, arm="memory", created_at=now)
        )  # fmt: skip

    def raw():
        now = datetime.datetime.now(datetime.timezone.utc)
        with connection.cursor() as cursor:
            cursor.execute(
                "BEGIN; SET LOCAL synchronous_commit TO OFF; INSERT INTO bench_raw_retrieval VALUES "
                "(%s, %s, 'acme/billing-api', 'queue', 'bench', '[]', 1, 'memory', %s); COMMIT",
                [time_ordered_id(now), token_id, now],
            )

    results = {}
    for name, write in (("a read's record", app), ("raw one-row insert", raw)):
        for _ in range(10):
            write()
        samples, cpu_started = [], cpu_seconds([backend])
        for _ in range(reps):
            started = time.perf_counter()
            write()
            samples.append((time.perf_counter() - started) * 1000)
        cpu = (cpu_seconds([backend]) - cpu_started) * 1000 / reps
        results[name] = (statistics.median(samples), percentile(sorted(samples), 0.95), cpu)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_raw_retrieval")
    return results


def planned_times(reads: dict, reps: int) -> dict:
    """{name: (sql, params)} -> {name: (planning ms, execution ms)}, each the median of `reps` EXPLAIN ANALYZE
    runs: the database's own time, without the client's."""
    import re

    from django.db import connection

    results = {}
    with connection.cursor() as cursor:
        for name, (sql, params) in reads.items():
            samples = []
            for _ in range(reps):
                cursor.execute("EXPLAIN (ANALYZE, TIMING OFF) " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                planning, execution = (float(x) for x in re.findall(r"(?:Planning|Execution) Time: ([0-9.]+)", plan))
                samples.append((planning, execution))
            results[name] = (statistics.median(p for p, _ in samples), statistics.median(e for _, e in samples))
    return results


def feedback_sql_times(reps: int = 30) -> dict:
    """The database's own time (EXPLAIN ANALYZE, median of `reps`) of what feedback reads: the retrieval by its
    id and its feedback by the retrieval (record_feedback), for a read of the middle month and for one under
    a random id."""

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM curation_retrieval WHERE task_ref = 'task-' || ((SELECT count(*) FROM curation_retrieval) / 2)"
        )
        middle = cursor.fetchone()[0]
        cursor.execute(
            "SELECT r.id FROM curation_retrieval r JOIN curation_feedback f ON f.retrieval_id = r.id "
            "WHERE substr(r.id::text, 15, 1) = '4' LIMIT 1"
        )
        random_id = cursor.fetchone()[0]
    reads = {}
    for label, retrieval_id in (("a month's", middle), ("a random id's", random_id)):
        reads[f"SQL: {label} retrieval by id"] = ("SELECT * FROM curation_retrieval WHERE id = %s", [retrieval_id])
        reads[f"SQL: {label} feedback"] = ("SELECT * FROM curation_feedback WHERE retrieval_id = %s", [retrieval_id])
    return planned_times(reads, reps)


def measure(client, entry_id: int, reps: int) -> dict:
    """Each page: p50 and p95 of `reps` GETs, and the queries one GET runs."""
    import re
    from html import unescape

    from contextlib import ExitStack

    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    first = client.get(QUEUE_URL)
    match = re.search(r'<a href="([^"]*after=[^"]*)" rel="next"', first.content.decode())
    assert match, "no next-page link on the queue"
    pages = {
        "entry page (its history)": f"/entries/{entry_id}/",
        "entry history.json": f"/entries/{entry_id}/history.json",
        "candidates queue, page 1": QUEUE_URL,
        "candidates queue, page 2": QUEUE_URL + unescape(match.group(1)),
    }
    results = {}
    for name, url in pages.items():
        for c in connections.all():  # each request clears the log (reset_queries): start it empty
            c.queries_log.clear()
        with ExitStack() as stack:  # reads may go to the replica's connection name (db_router)
            captured = [stack.enter_context(CaptureQueriesContext(c)) for c in connections.all()]
            assert client.get(url).status_code == 200, url
        queries = sum(len(c.captured_queries) for c in captured)
        samples = sorted(timed(client, url, reps))
        results[name] = (queries, statistics.median(samples), percentile(samples, 0.95))
    return results


def sql_times(entry_id: int, event_id: int, reps: int = 30) -> dict:
    """The database's own time (planning + execution, EXPLAIN ANALYZE, median of `reps`) of the two reads a
    partitioned table makes dearer: an entry's history (every partition's index, merged) and one Event by id."""

    reads = {
        "SQL: an entry's Events, in order": (
            "SELECT * FROM curation_event WHERE entry_id = %s ORDER BY created_at, id",
            [entry_id],
        ),
        "SQL: one Event by id": ("SELECT * FROM curation_event WHERE id = %s", [event_id]),
    }
    return planned_times(reads, reps)


def drop_database(url: str) -> None:
    import dj_database_url
    import psycopg
    from psycopg import sql

    db = dj_database_url.parse(url)
    params = {k: v for k, v in {"host": db["HOST"], "port": db["PORT"], "user": db["USER"]}.items() if v}
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(db["NAME"])))
    print(f"\ndropped database {db['NAME']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--retrievals", type=int, default=0, help="agent reads to fill (none: not measured)")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="keep the bench database afterwards")
    args = parser.parse_args()

    url = configure("ma_partitions_bench", migrate=False)
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from benchmarks.queue_bench import reviewer
    from curation.infra import partitions

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'curation_event'")
        fresh = cursor.fetchone()[0] == 0
    if not fresh:
        sys.exit(f"{url} already has tables: drop it first (dropdb), the bench fills it from empty")
    print(f"database {url}; {args.events:,} Events over {args.entries:,} pending entries")
    call_command("migrate", "curation", BEFORE[1], verbosity=0)
    for app in ("contenttypes", "auth", "admin", "sessions", "axes"):  # the pages' other tables, up to date
        call_command("migrate", app, verbosity=0)
    fill_entries(args.entries)
    fill_events(args.events)
    token_id = None
    if args.retrievals:
        from curation.services.tokens import create_agent_token

        token_id = create_agent_token(name="bench-reader", scopes=["acme/billing-api"])[0].pk
        fill_retrievals(args.retrievals, token_id)
    vacuum()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('curation_event'))")
        print(f"  curation_event: {cursor.fetchone()[0]} with its indexes")
        # An entry of the middle, whose history is its share of the Events.
        cursor.execute("SELECT entry_id FROM curation_event WHERE id = (SELECT max(id) / 2 FROM curation_event)")
        entry_id = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM curation_event WHERE entry_id = %s", [entry_id])
        history = cursor.fetchone()[0]
    user = reviewer()
    client = Client()
    client.force_login(user)

    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) / 3 FROM curation_event")
        event_id = cursor.fetchone()[0]
    load_before = load()
    before = measure(client, entry_id, args.reps)
    sql_before = sql_times(entry_id, event_id)
    # The reads at each step: one heap (0046), the history partitioned (0053), the reads too (0054 on).
    stages = {}

    def measure_reads(stage):
        if args.retrievals:
            vacuum()
            stages[stage] = (load(), read_record_times(token_id, args.reps * 10), feedback_sql_times())

    measure_reads("one heap")
    started = time.perf_counter()
    call_command("migrate", *EVENTS_ONLY, verbosity=0)
    converted = time.perf_counter() - started
    measure_reads("history partitioned")
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    converted_reads = time.perf_counter() - started
    vacuum()
    assert partitions.is_partitioned("curation_event")
    months = len(partitions.partitions("curation_event"))
    load_after = load()
    after = measure(client, entry_id, args.reps)
    sql_after = sql_times(entry_id, event_id)
    measure_reads("reads partitioned")

    print(
        f"\nEntry #{entry_id}: {history} Events. Partitioning (migrate to 0053, all its tables): {converted:.0f} s, "
        f"{months} partitions of curation_event (DEFAULT among them). The retrievals and feedback (0054 on): "
        f"{converted_reads:.0f} s. Load average before {load_before}, after {load_after}."
    )
    print(f"\n  {'page':<28} {'queries':>15}   {'p50 ms (before → after)':>26}   {'p95 ms (before → after)':>26}")
    for name in before:
        (q0, p50_0, p95_0), (q1, p50_1, p95_1) = before[name], after[name]
        print(
            f"  {name:<28} {q0:>6} → {q1:<6}   {p50_0:>11.1f} → {p50_1:<11.1f}   {p95_0:>11.1f} → {p95_1:<11.1f}"
            + ("" if q0 == q1 else "   QUERY COUNT CHANGED")
        )
    print(f"\n  {'read':<34} {'planning ms (before → after)':>30}   {'execution ms (before → after)':>30}")
    for name in sql_before:
        (p0, e0), (p1, e1) = sql_before[name], sql_after[name]
        print(f"  {name:<34} {p0:>13.3f} → {p1:<13.3f}   {e0:>13.3f} → {e1:<13.3f}")
    if stages:
        print(
            f"\n  {'an agent read, at each step (load average)':<62} {'p50 ms':>7} {'p95 ms':>7} {'CPU ms/read':>12} {'/ raw p50':>9}"
        )
        for stage, (at_load, reads, _) in stages.items():
            raw = reads["raw one-row insert"][0]
            for name, (p50, p95, cpu) in reads.items():
                label = f"{stage} ({at_load}): {name}"
                print(f"  {label:<62} {p50:>7.2f} {p95:>7.2f} {cpu:>12.3f} {p50 / raw:>9.2f}")
        print(f"\n  {'feedback reads (planning / execution ms)':<40}" + "".join(f"{s:>26}" for s in stages))
        for name in next(iter(stages.values()))[2]:
            cells = "".join(
                f"{feedback[name][0]:>12.3f} / {feedback[name][1]:<11.3f}" for *_, feedback in stages.values()
            )
            print(f"  {name:<40}{cells}")
    if not args.keep:
        connection.close()
        drop_database(url)


if __name__ == "__main__":
    main()
