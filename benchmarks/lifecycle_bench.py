"""The daily decay + archive at scale: 1,000,000 active entries on PostgreSQL.

    .venv/bin/python benchmarks/lifecycle_bench.py [--entries N]      (make bench-lifecycle)

Confidence is derived where it is read; the daily runs only find what crossed a threshold, through the
decay index (`decay_key`). Measured side by side in one run, on the same table, as of the same moment:
  1. full-table UPDATE  the way it was done before: one hand-written UPDATE that writes every active row's
                        decayed confidence (into a plain column the bench adds, as the schema had) and
                        archives those below the threshold; rolled back, so the sweep finds the same rows;
  2. minimal raw SQL    one hand-written statement doing the minimal work: the index range, the exact
                        rule, the archive UPDATE and one Event per archived entry, committed (then the
                        archiving is put back by hand, untimed);
  3. minimal report     the decay run's other work by hand: one count of what fell under the retrieval
                        floor in the day, by the index range and the exact rule;
  4. sweep              the real tasks: run_sweep("decay") then run_sweep("archive"), with their run
                        records, batches and an Event per archived entry (what it changed, old and new).
Targets: the sweep ≥ 50× faster than the full-table UPDATE, and ≤ 1.25× the minimal raw SQL. Printed beside
them: the archive sweep alone against the minimal raw SQL, and both sweeps against the same work by hand
(the minimal raw SQL and the minimal report), with the Python CPU per archived entry and the load. On a
machine whose cores others share, the times wait for them; so each side's CPU is printed too, and their
ratio: the database's (its backend's CPU, read from /proc when the server runs on this machine) and, for the
sweep, the worker's own.

The table is refilled on every run (generate_series INSERT; --reuse keeps a previous run's) in a database of its own (BENCH_DATABASE_URL,
else DATABASE_URL, default memoryadmin_lifecycle_bench). It is the state a daily schedule keeps: every active entry was
above the archive threshold at yesterday's run, its base between 0.5 and 0.95 and its last verification
spread over the time that allows. Today's run archives the entries that crossed since (about 0.25%).
"""

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# BENCH_DATABASE_URL names the bench's database as for the other benches; else DATABASE_URL, else its own.
if os.environ.get("BENCH_DATABASE_URL"):
    os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_lifecycle_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from benchmarks.common import use_bench_redis_keys  # noqa: E402
from benchmarks.queue_bench import ensure_database  # noqa: E402  (the same CREATE DATABASE helper)

use_bench_redis_keys()  # the buffered reads it flushes before timing are none of a running install's

AS_OF = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc)


def fill(n: int, fillfactor: int) -> None:
    """n active entries, in one INSERT ... SELECT generate_series (tens of seconds, not hours)."""
    from django.db import connection

    from curation.rules import lifecycle

    with connection.cursor() as cursor:
        # 100 is PostgreSQL's default (and the schema's); below it, pages keep room for HOT updates.
        cursor.execute(f"ALTER TABLE curation_entry SET (fillfactor = {int(fillfactor)})")
        cursor.execute(
            "TRUNCATE curation_event, curation_evidence, curation_similarentry, curation_retrievedentry, "
            "curation_retrieval, curation_feedback, curation_conflict, curation_taskrun, curation_entry, curation_entryband "
            "RESTART IDENTITY CASCADE"
        )
        # days_max: the age at which base × 0.95^(days/30) reaches 0.3, as of yesterday's run.
        cursor.execute(
            """
            INSERT INTO curation_entry (
                kind, scope, trigger, content, conditions, boundary, recheck_when, signal,
                base_confidence, decay_key, decay_rate, last_verified_at, hit_count, retrieval_count, utility_sum, utility_n,
                status, queue_reason, flags, fingerprint, archive_reason, source_task, created_by_label, version,
                created_at, updated_at)
            SELECT
                (ARRAY['procedure','failure_lesson','success_pattern','fact'])[1 + g %% 4],
                'org' || (g %% 50) || '/service-' || (g %% 400) || '/' || (ARRAY['ci','container','prod'])[1 + g %% 3],
                'When deploying service ' || (g %% 400) || ' with tool ' || (g %% 37),
                'Run the smoke tests of service ' || (g %% 400) || ' first; lesson ' || g,
                '["deploy", "smoke"]'::jsonb, '', '',
                (ARRAY['self','independent','external'])[1 + g %% 3],
                base, ln(base) + %(rate)s * EXTRACT(EPOCH FROM %(yesterday)s::timestamptz
                                                 - make_interval(secs => age_days * 86400))::double precision / 86400.0,
                %(rate)s, %(yesterday)s::timestamptz - make_interval(secs => age_days * 86400),
                0, 0, 0, 0, 'active', '', '[]'::jsonb, md5(g::text), '', '', 'bench', 1,
                %(yesterday)s::timestamptz - make_interval(secs => age_days * 86400) - interval '1 day',
                %(yesterday)s::timestamptz
            FROM (
                SELECT g, base, random() * (30 * ln(0.3 / base) / ln(0.95)) AS age_days
                FROM (SELECT g, 0.5 + 0.45 * random() AS base FROM generate_series(1, %(n)s) AS g) AS b
            ) AS rows
            """,
            {"n": n, "yesterday": AS_OF - datetime.timedelta(days=1), "rate": lifecycle.decay_rate(lifecycle.rules())},
        )
        # The stored confidence the schema used to have, for the full-table UPDATE to write (bench only).
        cursor.execute("ALTER TABLE curation_entry ADD COLUMN IF NOT EXISTS stored_confidence double precision")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE curation_entry")


def reusable(n: int) -> bool:
    """Does the table hold the n entries a previous run filled (active, or archived by that run)?"""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM information_schema.columns "
            "WHERE table_name = 'curation_entry' AND column_name = 'stored_confidence'"
        )
        if not cursor.fetchone()[0]:
            return False
        cursor.execute("SELECT count(*) FROM curation_entry WHERE status IN ('active', 'archived')")
        return cursor.fetchone()[0] == n


def put_back() -> None:
    """What the previous run's sweep archived, made active again by hand (as after the minimal raw SQL)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE curation_entry SET status = 'active', archived_at = NULL, archive_reason = '', "
            "decay_stopped_at = NULL, version = version - 1 WHERE status = 'archived'"
        )
        cursor.execute("VACUUM ANALYZE curation_entry")


FULL_TABLE_SQL = """
UPDATE curation_entry SET
    stored_confidence = d.value,
    status = CASE WHEN d.value < %(below)s THEN 'archived' ELSE status END,
    archived_at = CASE WHEN d.value < %(below)s THEN %(as_of)s ELSE archived_at END,
    archive_reason = CASE WHEN d.value < %(below)s THEN 'decayed' ELSE archive_reason END
FROM (
    SELECT id, {decayed} AS value FROM curation_entry WHERE status = 'active'
) AS d
WHERE curation_entry.id = d.id
"""

# The minimal work by hand: the index range, the exact rule, the archive and one Event per archived entry
# (with the fields its snapshots carry).
MINIMAL_SQL = """
WITH crossed AS (
    SELECT id FROM curation_entry
    WHERE status = 'active' AND decay_key < %(key_below)s AND {decayed} < %(below)s
    FOR UPDATE
), archived AS (
    UPDATE curation_entry e SET status = 'archived', archived_at = %(as_of)s, archive_reason = 'decayed',
        decay_stopped_at = %(as_of)s, version = e.version + 1, updated_at = now()
    FROM crossed WHERE e.id = crossed.id
    RETURNING e.id, e.scope, e.trigger, e.version, e.base_confidence, e.last_verified_at
)
INSERT INTO curation_event (entry_id, entry_label, actor_label, action, reason, entry_version, before, after,
                            request_id, created_at)
SELECT id, '#' || id || ' ' || scope || ': ' || left(trigger, 60), 'lifecycle:archive', 'archive', 'decayed',
       version, jsonb_build_object('status', 'active', 'base_confidence', base_confidence, 'version', version - 1,
                                   'last_verified_at', last_verified_at),
       jsonb_build_object('status', 'archived', 'base_confidence', base_confidence, 'version', version,
                          'last_verified_at', last_verified_at), '', %(as_of)s
FROM archived
"""


def _params() -> dict:
    from curation.rules import lifecycle

    rules = lifecycle.rules()
    return {
        "as_of": AS_OF,
        "below": rules.archive_below,
        "key_below": lifecycle.key_below(rules.archive_below, AS_OF, rules),
    }


def _decayed_sql() -> str:
    from curation.rules import lifecycle
    from curation.selectors.confidence import confidence_sql

    return confidence_sql("base_confidence", "COALESCE(last_verified_at, created_at)", lifecycle.rules()).replace(
        "%(now)s", "%(as_of)s"
    )


def timed_rollback(name: str, sql: str) -> tuple[float, int]:
    """A hand-written statement, timed, then rolled back (so the next measurement finds the same rows)."""
    from django.db import connection, transaction

    start = time.perf_counter()
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(sql.format(decayed=_decayed_sql()), _params())
                cursor.execute("SELECT count(*) FROM curation_entry WHERE status = 'archived'")
                archived = cursor.fetchone()[0]
            elapsed = time.perf_counter() - start
            raise _Rollback
    except _Rollback:
        pass
    with connection.cursor() as cursor:
        cursor.execute("VACUUM curation_entry")
    print(f"  {name:<18} {elapsed:8.3f} s  ({archived:,} archived; rolled back)")
    return elapsed, archived


def timed_committed(name: str, sql: str) -> tuple[float, int, float | None]:
    """A hand-written statement, timed to its COMMIT as the sweep's work is; then its archiving is put back
    by hand (untimed), so the sweep finds the same rows. Its Events stay: the table only grows a little."""
    from django.db import connection, transaction

    statement, params = sql.format(decayed=_decayed_sql()), _params()
    cpu = backend_cpu()
    start = time.perf_counter()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
    elapsed = time.perf_counter() - start
    cpu = _cpu_since(cpu)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM curation_entry WHERE status = 'archived'")
        archived = cursor.fetchone()[0]
        cursor.execute(
            "UPDATE curation_entry SET status = 'active', archived_at = NULL, archive_reason = '', "
            "decay_stopped_at = NULL, version = version - 1 WHERE status = 'archived'"
        )
        cursor.execute("VACUUM curation_entry")
    print(f"  {name:<18} {elapsed:8.3f} s  ({archived:,} archived; committed, then put back{_cpu_words(cpu)})")
    return elapsed, archived, cpu


class _Rollback(Exception):
    pass


def backend_cpu() -> float | None:
    """The CPU seconds this connection's PostgreSQL backend has used so far (the kernel's count in
    /proc/<pid>/schedstat, exact to the nanosecond), or None when the server is not on this machine."""
    from django.db import connection

    connection.ensure_connection()
    pid = connection.connection.info.backend_pid  # known to the client: no round trip
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _cpu_since(started: float | None) -> float | None:
    ended = backend_cpu()
    return None if started is None or ended is None else ended - started


def _cpu_words(seconds: float | None) -> str:
    return "" if seconds is None else f"; PostgreSQL CPU {seconds:.3f} s"


# The decay run's other work, by hand: what fell under the retrieval floor in the day before, by the index
# range and the exact rule, counted (the run also describes the first few). With MINIMAL_SQL it is the same
# work as the daily run's two sweeps.
MINIMAL_REPORT_SQL = """
SELECT count(*) FROM curation_entry
WHERE status = 'active' AND decay_key >= %(floor_key_from)s AND decay_key < %(floor_key_below)s
  AND {decayed_now} < %(floor)s AND {decayed_before} >= %(floor)s
"""


def timed_report() -> tuple[float, int, float | None]:
    from django.db import connection

    from curation.rules import lifecycle

    rules = lifecycle.rules()
    day = datetime.timedelta(days=1)
    params = {
        "floor": rules.retrieve_at_least,
        "floor_key_from": lifecycle.key_below(rules.retrieve_at_least, AS_OF - day, rules),
        "floor_key_below": lifecycle.key_below(rules.retrieve_at_least, AS_OF, rules),
        "as_of": AS_OF,
        "day_before": AS_OF - day,
    }
    decayed = _decayed_sql()
    sql = MINIMAL_REPORT_SQL.format(decayed_now=decayed, decayed_before=decayed.replace("%(as_of)s", "%(day_before)s"))
    cpu = backend_cpu()
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchone()[0]
    elapsed = time.perf_counter() - start
    cpu = _cpu_since(cpu)
    print(
        f"  {'minimal report':<18} {elapsed:8.3f} s  ({found:,} fell under the retrieval floor today{_cpu_words(cpu)})"
    )
    return elapsed, found, cpu


def sweep() -> tuple[float, int, float, float | None]:
    from curation.sweeps import run_sweep

    database = backend_cpu()
    cpu = time.process_time()
    start = time.perf_counter()
    _, decay = run_sweep("decay", as_of=AS_OF, triggered_by="bench")
    middle = time.perf_counter()
    _, archive = run_sweep("archive", as_of=AS_OF, triggered_by="bench")
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    database = _cpu_since(database)
    print(
        f"  {'sweep decay':<18} {middle - start:8.3f} s  ({decay.changed:,} keys rewritten, "
        f"{decay.examined:,} fell under the retrieval floor today)"
    )
    print(
        f"  {'sweep archive':<18} {elapsed - (middle - start):8.3f} s  ({archive.examined:,} read by the index, "
        f"{archive.changed:,} archived, one Event each)"
    )
    print(
        f"  {'sweep total':<18} {elapsed:8.3f} s  (Python CPU {cpu:.3f} s: "
        f"{cpu / max(1, archive.changed) * 1000:.3f} ms per archived entry{_cpu_words(database)})"
    )
    return elapsed, archive.changed, elapsed - (middle - start), None if database is None else database + cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument(
        "--fillfactor",
        type=int,
        default=70,
        choices=range(10, 101),
        metavar="10..100",
        help="curation_entry's fillfactor for this run (default 70, the schema's)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the table a previous run filled with --entries entries (what it archived is put back, "
        "untimed) instead of refilling it, which takes minutes; --fillfactor then applies only to a refill",
    )
    parser.add_argument(
        "--skip-full-table",
        action="store_true",
        help="leave out the full-table UPDATE (minutes on a loaded machine) and its ≥ 50× target",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure the minimal raw SQL and the sweep this many times, alternately; report the median round",
    )
    args = parser.parse_args()

    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from curation.rules import config

    call_command("migrate", verbosity=0)
    print(
        f"PostgreSQL {connection.cursor().connection.info.server_version}, database {connection.settings_dict['NAME']}, "
        f"batch size {config.SWEEP_BATCH_SIZE.value}, fillfactor {args.fillfactor}, "
        f"{os.cpu_count()} CPUs (shared with other work)"
    )
    start = time.perf_counter()
    if args.reuse and reusable(args.entries):
        put_back()
        print("reusing the table of a previous run (--reuse)", end="; ")
    else:
        fill(args.entries, args.fillfactor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM curation_entry WHERE status = 'active'")
        active = cursor.fetchone()[0]
    print(f"filled {active:,} active entries in {time.perf_counter() - start:.1f} s")

    # A worker is a long-lived process: load the secret detectors (which the Events' redaction uses) once
    # before timing, as a worker has long since done.
    from curation.rules.redaction import redact

    redact("warm up the detectors", "bench")
    # ... and its connection to Redis, which every run reads the buffered retrievals from first.
    from curation.services import retrieval_buffer

    retrieval_buffer.flush()
    if args.skip_full_table:
        full, full_archived = None, None
    else:
        full, full_archived = timed_rollback("full-table UPDATE", FULL_TABLE_SQL)
    # Each round: the minimal raw SQL with the report, and the sweep, on the same rows (what each archived
    # put back by hand, untimed); the ratio is taken within the round, so a load that drifts between rounds
    # weighs on both sides of it. Every other round the sweep goes first, so neither side is always the one
    # that meets the pages the other left.
    rounds = []
    for number in range(args.rounds):
        if number:
            put_back()
            print(f"round {number + 1}:")
        if number % 2:
            swept, sweep_archived, archived_in, swept_cpu = sweep()
            put_back()
        minimal, minimal_archived, minimal_cpu = timed_committed("minimal raw SQL", MINIMAL_SQL)
        report, _, report_cpu = timed_report()
        if not number % 2:
            swept, sweep_archived, archived_in, swept_cpu = sweep()
        assert full_archived in (None, minimal_archived) and minimal_archived == sweep_archived, (
            f"archived: full-table {full_archived}, minimal {minimal_archived}, sweep {sweep_archived}"
        )
        cpus = None if swept_cpu is None else (swept_cpu, minimal_cpu, report_cpu)
        rounds.append((swept / minimal, minimal, report, swept, archived_in, cpus))
    # The median round by its ratio (the only round, by default).
    ratio, minimal, report, swept, archived_in, _ = sorted(rounds, key=lambda r: r[0])[len(rounds) // 2]
    if len(rounds) > 1:
        print(f"median of {len(rounds)} rounds by the ratio (all: {', '.join(f'{r[0]:.2f}×' for r in rounds)}):")
    ok_minimal = ratio <= 1.25
    ok_full = True
    if full is not None:
        speedup = full / swept
        ok_full = speedup >= 50
        print(
            f"full-table UPDATE / sweep = {full:.2f} / {swept:.3f} = {speedup:,.0f}× (target ≥ 50×): "
            f"{'PASS' if ok_full else 'FAIL'}"
        )
    print(
        f"sweep / minimal raw SQL = {swept:.3f} / {minimal:.3f} = {ratio:.2f}× (target ≤ 1.25×): "
        f"{'PASS' if ok_minimal else 'FAIL'}"
    )
    # The same work by hand: the archive with its Events, and the decay run's report.
    print(
        f"  archive sweep / minimal raw SQL = {archived_in:.3f} / {minimal:.3f} = {archived_in / minimal:.2f}×; "
        f"sweep / (minimal raw SQL + minimal report) = {swept:.3f} / {minimal + report:.3f} = "
        f"{swept / (minimal + report):.2f}×"
    )
    if len(rounds) > 1:
        # What each side costs when nothing else delays it: its fastest round (other work on the machine
        # only ever adds time), the way timeit reports a statement.
        fastest = min(r[3] for r in rounds), min(r[1] for r in rounds), min(r[1] + r[2] for r in rounds)
        print(
            f"  fastest round of each: sweep / minimal raw SQL = {fastest[0]:.3f} / {fastest[1]:.3f} = "
            f"{fastest[0] / fastest[1]:.2f}×; sweep / (minimal raw SQL + minimal report) = "
            f"{fastest[0]:.3f} / {fastest[2]:.3f} = {fastest[0] / fastest[2]:.2f}×"
        )
    if all(r[5] is not None for r in rounds):
        # CPU, each round's own ratio, the median round by it: the sweep's (the worker's and the database's)
        # over the minimal raw SQL's (the database's; its client does nothing but wait).
        by_cpu = sorted(rounds, key=lambda r: r[5][0] / r[5][1])
        swept_cpu, minimal_cpu, report_cpu = by_cpu[len(by_cpu) // 2][5]
        print(
            f"CPU (median of {len(rounds)} rounds by its ratio; all: "
            f"{', '.join(f'{r[5][0] / r[5][1]:.2f}×' for r in rounds)}): sweep (worker + PostgreSQL) / minimal raw "
            f"SQL (PostgreSQL) = {swept_cpu:.3f} / {minimal_cpu:.3f} = {swept_cpu / minimal_cpu:.2f}×; "
            f"sweep / (minimal raw SQL + minimal report) = {swept_cpu:.3f} / {minimal_cpu + report_cpu:.3f} = "
            f"{swept_cpu / (minimal_cpu + report_cpu):.2f}×"
        )
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0 if ok_full and ok_minimal else 1


if __name__ == "__main__":
    sys.exit(main())
