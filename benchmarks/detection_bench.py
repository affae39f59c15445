"""Detection sweeps on one scope full of near-identical entries: the bound on partners per entry.

    .venv/bin/python benchmarks/detection_bench.py [--flood 3000] [--bounds 100,1000000]

Fills one scope with --flood active entries that say nearly the same thing (half "Always restart the
worker ...", half "Never restart the worker ..." under conditions that never overlap, so every opposite
pair is compared and none is a conflict), then times a full pass of conflict detection and of
consolidation for each DETECTION_PARTNERS_PER_ENTRY in --bounds, in the same run: 100 is the setting,
1,000,000 is no bound (every pair in the pool, as before). Prints the time and the pairs compared.

First, ingest into that scope: a batch of --ingest candidates (half "Always restart ...", half "Never
restart ...", each a near duplicate of hundreds and a contradiction of thousands) through submit_batch,
with the near-duplicate and partner lookups reading at most OVERLAPPING_MATCHES_READ matches each, then
with no bound (every match, as before), side by side.

Uses its own PostgreSQL database (BENCH_DATABASE_URL, default memoryadmin_detection_bench), emptied first.
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DB_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_detection_bench")
os.environ["DATABASE_URL"] = DB_URL
os.environ.pop("CELERY_BROKER_URL", None)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.update(DEBUG="false", LOG_LEVEL="WARNING")

from queue_bench import ensure_database  # noqa: E402


def flood(n: int) -> None:
    from django.db import connection

    from curation.models import Entry
    from curation.services.entry_writes import rewrite_decay_keys

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE curation_entry, curation_entryband RESTART IDENTITY CASCADE")
        cursor.execute(f"""
            INSERT INTO curation_entry (kind, scope, trigger, content, conditions, boundary, recheck_when, signal,
                base_confidence, last_verified_at, hit_count, retrieval_count, utility_sum, utility_n,
                status, queue_reason, flags, fingerprint, archive_reason, source_task, created_by_label, version,
                created_at, updated_at)
            SELECT 'procedure', 'acme/flood',
                   'Restarting the billing worker after a deploy of release ' || (i % 7),
                   CASE WHEN i % 2 = 0 THEN 'Always restart the billing worker after the deploy finishes (note '
                        ELSE 'Never restart the billing worker after the deploy finishes (note ' END || i || ').',
                   jsonb_build_array(CASE WHEN i % 2 = 0 THEN 'staging' ELSE 'production' END), '', '',
                   'external', 0.8, now(), 0, 0, 0, 0, 'active', '', '[]', md5('flood' || i), '', 'bench',
                   'bench', 1, now() - (i || ' minutes')::interval, now()
            FROM generate_series(0, {n - 1}) AS i
        """)
    rewrite_decay_keys(Entry.objects.filter(decay_rate__lt=0))  # as the write path would have
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE curation_entry")


EVERY_MATCH = 10**9  # a read bound no scope reaches: the lookups as they were before the bound


def ingest(size: int, read: int, run: int) -> float:
    """Seconds for one batch of `size` candidates into the flooded scope, the lookups reading `read`."""
    from curation.models import AgentToken
    from curation.selectors import sql
    from curation.services.submissions import submit_batch
    from curation.services.tokens import create_agent_token

    token = (
        AgentToken.objects.filter(name="flood-bench").first()
        or create_agent_token(name="flood-bench", scopes=["acme"])[0]
    )
    items = [
        {
            "scope": "acme/flood",
            "kind": "procedure",
            "signal": "self",
            "trigger": f"Restarting the billing worker after a deploy of release {i % 7}",
            "content": f"{'Always' if i % 2 == 0 else 'Never'} restart the billing worker after the deploy "
            f"finishes (ticket {run}-{i}).",
            "conditions": ["staging"],
            "source_task": f"flood-{run}-{i}",
            "evidence": [{"kind": "tool_output", "signal": "external", "excerpt": "restart failed: exit 1"}],
        }
        for i in range(size)
    ]
    bound, sql.OVERLAPPING_MATCHES_READ = sql.OVERLAPPING_MATCHES_READ, read
    try:
        started = time.perf_counter()
        results = submit_batch(items=items, token=token)
        elapsed = time.perf_counter() - started
    finally:
        sql.OVERLAPPING_MATCHES_READ = bound
    assert all(r["ok"] for r in results)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flood", type=int, default=3000)
    parser.add_argument("--bounds", default="100,1000000")
    parser.add_argument("--ingest", type=int, default=200, help="candidates in the ingest batch (0: none)")
    args = parser.parse_args()
    ensure_database(DB_URL)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from curation.rules.config import overriding
    from curation.selectors import sql
    from curation.sweeps import conflicts as conflict_sweep, consolidation as consolidation_sweep

    call_command("migrate", verbosity=0)
    flood(args.flood)
    print(f"one scope, {args.flood:,} near-identical active entries")
    if args.ingest and connection.vendor == "postgresql":
        for run, read in enumerate((sql.OVERLAPPING_MATCHES_READ, EVERY_MATCH)):
            seconds = ingest(args.ingest, read, run)
            label = "every match" if read == EVERY_MATCH else f"{read:,} matches"
            print(
                f"ingest, lookups reading {label:>13}: a batch of {args.ingest} in {seconds:6.1f} s "
                f"({seconds * 1000 / args.ingest:.1f} ms a candidate)",
                flush=True,
            )
    for bound in [int(b) for b in args.bounds.split(",")]:
        with overriding(DETECTION_PARTNERS_PER_ENTRY=bound):
            started = time.perf_counter()
            found = conflict_sweep.sweep_conflicts()
            conflict_seconds = time.perf_counter() - started
            started = time.perf_counter()
            proposed = consolidation_sweep.sweep_consolidation()
            consolidation_seconds = time.perf_counter() - started
        print(
            f"partners per entry {bound:>9,}: conflicts {conflict_seconds:6.1f} s "
            f"({found.compared:,} pairs compared, {len(found.opened)} opened); consolidation {consolidation_seconds:6.1f} s "
            f"({len(proposed.proposed)} proposed)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
