"""Published memory versions at scale.

    .venv/bin/python benchmarks/release_bench.py [--entries 1000000] [--scopes 200] [--changes 1000,100000]
                                                  [--rounds 1] [--queries 500]        (make bench-release)

1. Publish: on a memory of --entries active entries already released as one version, change N entries
   (a new base confidence and content, with the Event a decision writes) and publish them with
   publish_version; change N others and publish them with the raw statements a minimal publish runs. Both
   commit; --rounds paired rounds per N, each swapping which side goes first. Prints each side's time, the
   CPU of this process and of its database backend, publish / raw, and the load average, then the medians.
   The work must grow with N, not with the memory.
2. Retrieval: the same --queries (scope, three words) answered from the published version
   (selectors.releases.retrieve_released, what the API reads now) and from the live rows
   (selectors.retrieve_memory, what the API read before versions), in the same run, in process:
   p50 and p99 of each (--queries 0 skips it).

Uses its own PostgreSQL database (BENCH_DATABASE_URL, default memoryadmin_release_bench), filled on the first
run and reused afterwards (entries with api_bench's generator). The database CPU is read from
/proc/<backend pid>/schedstat: the server must run on this machine.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DB_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_release_bench")
os.environ["DATABASE_URL"] = DB_URL
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.update(DEBUG="false", LOG_LEVEL="WARNING")

from api_bench import fill, query_words, scope_name  # noqa: E402
from queue_bench import ensure_database  # noqa: E402

# Importing api_bench points DATABASE_URL at its own database; this benchmark fills and reads its own.
os.environ["DATABASE_URL"] = DB_URL


def release_everything() -> None:
    """The entries generated in SQL were never released: release them all as the published version (as
    the migration does for an existing memory), in one statement."""
    from django.db import connection

    from curation.models import MemoryVersion, PublishedVersion, ReleasedEntry
    from curation.rules.versions import RELEASED_FIELDS
    from curation.selectors import releases

    if ReleasedEntry.objects.exists():
        return
    started = time.perf_counter()
    head = releases.head_number()
    number = head + 1
    # Every field a release stores (the product's one list), so the released row equals the entry's.
    columns = ", ".join(RELEASED_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO curation_releasedentry (entry_id, valid_from, entry_version, {columns})
            SELECT id, %s, version, {columns} FROM curation_entry WHERE status = 'active'
        """,
            [number],
        )
        cursor.execute("ANALYZE curation_releasedentry")
        # The history too: unanalysed (autovacuum may be off), the forgotten-lesson check was planned as a scan
        # of every Event.
        cursor.execute("ANALYZE curation_event")
    version = MemoryVersion.objects.create(
        number=number,
        summary="bench: everything",
        published_by_label="bench",
        pending_from_event=releases.last_event_id() + 1,
    )
    PublishedVersion.objects.update_or_create(pk=1, defaults={"version": version})
    print(
        f"released {ReleasedEntry.objects.count():,} entries as version {number} in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )


def make_changes(n: int, rng) -> list[int]:
    """N active entries changed with the Event a decision writes (in SQL: the benchmark measures the
    publish, not the writes)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM curation_entry")
        top = cursor.fetchone()[0]
        ids = sorted(rng.sample(range(1, top + 1), n))
        cursor.execute(
            """
            UPDATE curation_entry SET base_confidence = LEAST(0.95, base_confidence + 0.01), content = content || ' (edited)',
                   version = version + 1, updated_at = now()
            WHERE id = ANY(%s) AND status = 'active'
        """,
            [ids],
        )
        cursor.execute(
            """
            INSERT INTO curation_event (entry_id, entry_label, actor_label, action, reason, request_id,
                                        entry_version, created_at)
            SELECT id, '#' || id, 'bench', 'edit_approve', 'bench edit', '', version, now()
            FROM curation_entry WHERE id = ANY(%s)
        """,
            [ids],
        )
        # What autovacuum (off on the bench's server) keeps true: the history grows by N a round, and planned
        # on stale counts the raw side's read of the pending Events became a scan of every Event.
        cursor.execute("ANALYZE curation_event")
    return ids


def raw_publish(number: int, since: int) -> tuple[float, int]:
    """The statements a minimal publish of the pending entries must run, hand-written, timed and committed
    (the durable work a publish does): the entries the Events from id `since` on name (the pending ones),
    their open rows closed at `number` and their new rows copied from the live rows, the version row, the
    pointer moved and the version's Event. What it writes is a version as a publish makes it, so the next
    publish starts from it. (seconds, rows copied)."""
    from django.db import connection, transaction

    from curation.rules.versions import RELEASED_FIELDS

    columns = ", ".join(RELEASED_FIELDS)
    pending = f"SELECT entry_id FROM curation_event WHERE id >= {int(since)} AND entry_id IS NOT NULL"
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT version_id FROM curation_publishedversion WHERE id = 1 FOR UPDATE")
        base = cursor.fetchone()[0]
        cursor.execute(
            f"UPDATE curation_releasedentry SET valid_to = %s WHERE valid_to IS NULL AND entry_id IN ({pending})",
            [number],
        )
        cursor.execute(
            f"""INSERT INTO curation_releasedentry (entry_id, valid_from, entry_version, {columns})
                SELECT id, %s, version, {columns} FROM curation_entry
                WHERE status = 'active' AND id IN ({pending})""",
            [number],
        )
        copied = cursor.rowcount
        cursor.execute(
            """INSERT INTO curation_memoryversion (number, summary, scope_prefix, published_by_label, added,
                   changed, removed, pending_from_event, acknowledged, created_at, based_on_id)
               VALUES (%s, 'raw', '', 'bench', 0, %s, 0, (SELECT max(id) + 1 FROM curation_event), '[]', now(), %s)
               RETURNING id""",
            [number, copied, base],
        )
        version_id = cursor.fetchone()[0]
        cursor.execute(
            "UPDATE curation_publishedversion SET version_id = %s, switched_at = now() WHERE id = 1", [version_id]
        )
        cursor.execute(
            """INSERT INTO curation_event (entry_label, actor_label, action, reason, request_id, created_at,
                   memory_version_id, before, after)
               VALUES ('memory version ' || %s, 'bench', 'version_published', 'raw', '', now(), %s, '{}', '{}')""",
            [number, version_id],
        )
    return time.perf_counter() - started, copied


def backend_cpu_ns() -> int:
    """The CPU time this connection's PostgreSQL backend has used so far (ns, the kernel's exact count; the
    server runs on this machine)."""
    from django.db import connection

    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measured(run) -> tuple:
    """(run's answer, seconds of this process's CPU, seconds of its database backend's CPU)."""
    cpu, db = time.process_time(), backend_cpu_ns()
    answer = run()
    return answer, time.process_time() - cpu, (backend_cpu_ns() - db) / 1e9


def bench_publish(sizes: list[int], rounds: int) -> list[tuple]:
    """For each N, `rounds` paired rounds: N entries changed and published by publish_version (timed with the
    queries it ran), and N others changed and published by the raw statements; both commit, and every round
    swaps which goes first. Each side changes its own random N of the same memory, so each closes open rows
    as scattered as the other's, and each starts from the version the other made."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from curation.selectors import releases
    from curation.services.releases import publish_version

    from django.core.cache import cache

    cache.get("bench")  # the process's first cache access (its client's import), paid once, not per publish
    rng = random.Random(11)
    results = []

    def app(n):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            version = publish_version(actor=None, actor_label="bench", summary=f"bench: {n} changes", acknowledge=True)
            seconds = time.perf_counter() - started
        return seconds, len(queries), version.changed

    def raw(n):
        since, number = releases.published_version().pending_from_event, releases.head_number() + 1
        return measured(lambda: raw_publish(number, since))

    for n in sizes:
        for round_ in range(rounds):
            sides = {}
            for side in ("app", "raw") if round_ % 2 == 0 else ("raw", "app"):
                make_changes(n, rng)
                sides[side] = measured(lambda: app(n)) if side == "app" else raw(n)
            (seconds, queries, changed), app_cpu, app_db = sides["app"]
            (raw_seconds, copied), raw_cpu, raw_db = sides["raw"]
            results.append((n, seconds, raw_seconds, queries, app_cpu + app_db, raw_cpu + raw_db))
            print(
                f"publish {n:,} changes, round {round_ + 1} ({'publish' if round_ % 2 == 0 else 'raw'} first): "
                f"publish {seconds:.3f} s, {queries} queries, {changed:,} changed, CPU {app_cpu * 1e3:.0f} ms here + "
                f"{app_db * 1e3:.0f} ms database; raw {raw_seconds:.3f} s ({copied:,} rows), CPU "
                f"{raw_cpu * 1e3:.0f} + {raw_db * 1e3:.0f} ms; publish / raw {seconds / raw_seconds:.2f}x "
                f"(CPU {(app_cpu + app_db) / (raw_cpu + raw_db):.2f}x); load {load()}",
                flush=True,
            )
    return results


def print_table(entries: int, results: list[tuple]) -> None:
    print(f"\nPublish at {entries:,} entries (target: publish / raw <= 1.5x; both commit; median of the rounds)")
    print(
        f"{'changes':>10} {'rounds':>7} {'publish s':>10} {'raw s':>8} {'ratio':>7} {'CPU ratio':>10} "
        f"{'CPU/change ms':>14} {'raw CPU/change':>15} {'queries':>8}"
    )
    for n in dict.fromkeys(r[0] for r in results):
        mine = [r for r in results if r[0] == n]
        med = statistics.median
        print(
            f"{n:>10,} {len(mine):>7} {med(r[1] for r in mine):>10.3f} {med(r[2] for r in mine):>8.3f} "
            f"{med(r[1] / r[2] for r in mine):>6.2f}x {med(r[4] / r[5] for r in mine):>9.2f}x "
            f"{med(r[4] for r in mine) / n * 1e3:>14.4f} {med(r[5] for r in mine) / n * 1e3:>15.4f} "
            f"{max(r[3] for r in mine):>8}"
        )
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)


def percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[max(0, int(len(values) * 0.99) - 1)]


def bench_retrieval(scopes: int, queries: int) -> None:
    from curation import selectors
    from curation.selectors import releases

    rng = random.Random(7)
    plans = [(scope_name(rng.randrange(scopes)), query_words(rng)) for _ in range(queries)]
    number = releases.published_number()
    published, live = [], []
    for scope, q in plans[:50]:  # warm-up of both paths
        releases.retrieve_released(number, scopes=[scope], q=q, k=5, min_confidence=0.3)
        selectors.retrieve_memory(scopes=[scope], q=q, k=5, min_confidence=0.3)
    for scope, q in plans:
        started = time.perf_counter()
        releases.retrieve_released(number, scopes=[scope], q=q, k=5, min_confidence=0.3)
        published.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        selectors.retrieve_memory(scopes=[scope], q=q, k=5, min_confidence=0.3)
        live.append((time.perf_counter() - started) * 1000)
    p50, p99 = percentiles(published)
    l50, l99 = percentiles(live)
    print(
        f"retrieval, {queries} queries, in process: published version p50 {p50:.1f} ms, p99 {p99:.1f} ms; "
        f"live rows p50 {l50:.1f} ms, p99 {l99:.1f} ms",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--scopes", type=int, default=200)
    parser.add_argument("--changes", default="1000,100000")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1, help="paired rounds per size (publish and raw)")
    args = parser.parse_args()

    ensure_database(DB_URL)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    fill(args.entries, args.scopes)
    release_everything()
    print(f"memory: {args.entries:,} active entries across {args.scopes} scopes", flush=True)
    print_table(args.entries, bench_publish([int(n) for n in args.changes.split(",") if n], args.rounds))
    if args.queries:
        bench_retrieval(args.scopes, args.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
