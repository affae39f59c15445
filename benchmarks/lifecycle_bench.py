"""The decay + archive sweep at scale: 1,000,000 active entries on PostgreSQL.

    .venv/bin/python benchmarks/lifecycle_bench.py [--entries N] [--sample N]      (make bench-lifecycle)

Measured side by side in one run, on the same table, as of the same moment:
  1. raw SQL  one hand-written UPDATE doing the same arithmetic (decay, and archive below the threshold)
              over the whole table, in one transaction (rolled back, so the sweep finds the same rows);
  2. sweep    the real tasks: run_sweep("decay") then run_sweep("archive"), keyset batches of
              CURATION["SWEEP_BATCH_SIZE"] rows, one short transaction each, an Event per archived entry;
  3. raw SQL  again (rolled back), to show how much the order and the cache moved the figures;
  4. ORM loop a per-row Python loop (load, compute with lifecycle.decayed(), save, Event when archived)
              on a sample of --sample rows, scaled to the table.
--fillfactor below 100 leaves room in each page, so an UPDATE that changes no indexed column (decay
changes only confidence) is a HOT update and skips the table's nine indexes.
Targets: sweep <= 2 × raw SQL, and ORM loop (scaled) >= 50 × sweep.

The table is refilled on every run (generate_series INSERT) in a database of its own (DATABASE_URL,
default memoryadmin_lifecycle_bench). It is the state a daily schedule keeps: every active entry was
above the archive threshold at yesterday's run (an entry below it would have been archived then), its
base confidence between 0.5 and 0.95 and its last verification spread over the time that allows; the
stored confidence is a stale value from before, so decay rewrites nearly every row. Today's run archives
the entries that crossed the threshold since yesterday (about 0.25%).
"""

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_lifecycle_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from benchmarks.queue_bench import ensure_database  # noqa: E402  (the same CREATE DATABASE helper)

AS_OF = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc)


def fill(n: int, fillfactor: int) -> None:
    """n active entries, in one INSERT ... SELECT generate_series (tens of seconds, not hours)."""
    from django.db import connection

    with connection.cursor() as cursor:
        # 100 is PostgreSQL's default (and the schema's); below it, pages keep room for HOT updates.
        cursor.execute(f"ALTER TABLE curation_entry SET (fillfactor = {int(fillfactor)})")
        cursor.execute("TRUNCATE curation_event, curation_evidence, curation_similarentry, curation_retrievedentry, "
                       "curation_retrieval, curation_feedback, curation_conflict, curation_taskrun, curation_entry "
                       "RESTART IDENTITY CASCADE")
        # days_max: the age at which base × 0.95^(days/30) reaches 0.3, as of yesterday's run.
        cursor.execute(
            """
            INSERT INTO curation_entry (
                kind, scope, trigger, content, conditions, boundary, recheck_when, signal,
                base_confidence, confidence, last_verified_at, hit_count, retrieval_count, utility_sum, utility_n,
                status, queue_reason, flags, fingerprint, archive_reason, source_task, created_by_label, version,
                created_at, updated_at)
            SELECT
                (ARRAY['procedure','failure_lesson','success_pattern','fact'])[1 + g %% 4],
                'org' || (g %% 50) || '/service-' || (g %% 400) || '/' || (ARRAY['ci','container','prod'])[1 + g %% 3],
                'When deploying service ' || (g %% 400) || ' with tool ' || (g %% 37),
                'Run the smoke tests of service ' || (g %% 400) || ' first; lesson ' || g,
                '["deploy", "smoke"]'::jsonb, '', '',
                (ARRAY['self','independent','external'])[1 + g %% 3],
                base, base, %(yesterday)s::timestamptz - make_interval(secs => age_days * 86400),
                0, 0, 0, 0, 'active', '', '[]'::jsonb, md5(g::text), '', '', 'bench', 1,
                %(yesterday)s::timestamptz - make_interval(secs => age_days * 86400) - interval '1 day',
                %(yesterday)s::timestamptz
            FROM (
                SELECT g, base, random() * (30 * ln(0.3 / base) / ln(0.95)) AS age_days
                FROM (SELECT g, 0.5 + 0.45 * random() AS base FROM generate_series(1, %(n)s) AS g) AS b
            ) AS rows
            """,
            {"n": n, "yesterday": AS_OF - datetime.timedelta(days=1)},
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE curation_entry")


RAW_SQL = """
UPDATE curation_entry SET
    confidence = d.value,
    status = CASE WHEN d.value < %(below)s THEN 'archived' ELSE status END,
    archived_at = CASE WHEN d.value < %(below)s THEN %(as_of)s ELSE archived_at END,
    archive_reason = CASE WHEN d.value < %(below)s THEN 'decayed' ELSE archive_reason END
FROM (
    SELECT id, GREATEST(%(floor)s, LEAST(%(ceiling)s, base_confidence * POWER(%(factor)s,
           GREATEST(0, EXTRACT(EPOCH FROM (%(as_of)s - COALESCE(last_verified_at, created_at))) / 86400.0) / %(period)s)))
           AS value
    FROM curation_entry WHERE status = 'active'
) AS d
WHERE curation_entry.id = d.id
"""


def raw_update() -> tuple[float, int]:
    """The hand-written statement, timed, then rolled back."""
    from django.db import connection, transaction

    from curation import lifecycle

    rules = lifecycle.rules()
    params = {"as_of": AS_OF, "below": rules.archive_below, "floor": rules.floor, "ceiling": rules.ceiling,
              "factor": rules.decay_factor, "period": float(rules.decay_period_days)}
    start = time.perf_counter()
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(RAW_SQL, params)
                rows = cursor.rowcount
                cursor.execute("SELECT count(*) FROM curation_entry WHERE status = 'archived'")
                archived = cursor.fetchone()[0]
            elapsed = time.perf_counter() - start
            raise _Rollback
    except _Rollback:
        pass
    with connection.cursor() as cursor:
        cursor.execute("VACUUM curation_entry")
    print(f"  raw SQL UPDATE: {elapsed:7.2f} s  ({rows:,} rows written, {archived:,} archived; rolled back)")
    return elapsed, archived


class _Rollback(Exception):
    pass


def sweep() -> tuple[float, int]:
    from curation.sweeps import run_sweep

    start = time.perf_counter()
    _, decay = run_sweep("decay", as_of=AS_OF, triggered_by="bench")
    middle = time.perf_counter()
    _, archive = run_sweep("archive", as_of=AS_OF, triggered_by="bench")
    elapsed = time.perf_counter() - start
    print(f"  sweep decay:    {middle - start:7.2f} s  ({decay.changed:,} of {decay.examined:,} rows changed)")
    print(f"  sweep archive:  {elapsed - (middle - start):7.2f} s  ({archive.changed:,} archived, one Event each)")
    print(f"  sweep total:    {elapsed:7.2f} s")
    return elapsed, archive.changed


def orm_loop(sample: int) -> float:
    """The per-row way: what the sweep replaces. Autocommit per save, as such a loop is usually written."""
    from curation import lifecycle
    from curation.models import Entry, Event, Status

    rules = lifecycle.rules()
    start = time.perf_counter()
    for entry in Entry.objects.filter(status=Status.ACTIVE).order_by("id")[:sample]:
        entry.confidence = lifecycle.decayed(entry.base_confidence, entry.last_verified_at or entry.created_at, AS_OF, rules)
        if lifecycle.should_archive(entry.confidence, rules):
            entry.status, entry.archived_at, entry.archive_reason = Status.ARCHIVED, AS_OF, "decayed"
            entry.version += 1
            entry.save(update_fields=["confidence", "status", "archived_at", "archive_reason", "version"])
            Event.objects.create(entry=entry, entry_label=entry.label, actor_label="bench:loop", action="archive",
                                 reason="decayed", entry_version=entry.version, created_at=AS_OF)
        else:
            entry.save(update_fields=["confidence"])
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=20_000)
    parser.add_argument("--fillfactor", type=int, default=100, choices=range(10, 101), metavar="10..100",
                        help="curation_entry's fillfactor for this run (default 100, the schema's)")
    args = parser.parse_args()

    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    print(f"PostgreSQL {connection.cursor().connection.info.server_version}, database {connection.settings_dict['NAME']}, "
          f"batch size {settings.CURATION['SWEEP_BATCH_SIZE']}, fillfactor {args.fillfactor}, "
          f"{os.cpu_count()} CPUs (shared with other work)")
    start = time.perf_counter()
    fill(args.entries, args.fillfactor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM curation_entry WHERE status = 'active'")
        active = cursor.fetchone()[0]
    print(f"filled {active:,} active entries in {time.perf_counter() - start:.1f} s")

    raw_first, raw_archived = raw_update()
    swept, sweep_archived = sweep()
    raw_second, _ = raw_update()
    assert raw_archived == sweep_archived, f"the sweep archived {sweep_archived}, the raw UPDATE {raw_archived}"
    loop = orm_loop(args.sample)
    scaled = loop * active / args.sample
    print(f"  ORM loop:       {loop:7.2f} s for {args.sample:,} rows → {scaled:,.0f} s scaled to {active:,}")

    raw = (raw_first + raw_second) / 2  # the mean of the runs before and after the sweep
    ratio, speedup = swept / raw, scaled / swept
    ok_raw, ok_loop = ratio <= 2.0, speedup >= 50
    print(f"sweep / raw SQL = {swept:.2f} / {raw:.2f} = {ratio:.2f}× (target ≤ 2×): {'PASS' if ok_raw else 'FAIL'}"
          f"   [raw runs {raw_first:.2f} s and {raw_second:.2f} s: {swept / raw_first:.2f}× and {swept / raw_second:.2f}×]")
    print(f"ORM loop / sweep = {scaled:,.0f} / {swept:.2f} = {speedup:,.0f}× (target ≥ 50×): {'PASS' if ok_loop else 'FAIL'}")
    return 0 if ok_raw and ok_loop else 1


if __name__ == "__main__":
    sys.exit(main())
