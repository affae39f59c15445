"""The cost of a forget's receipt (the search of every surface after the purge, in the approval's transaction).

    .venv/bin/python benchmarks/forget_receipt_bench.py [--entries 200000] [--scopes 200] [--runs 3]
                                                         (make bench-forget-receipt)

On a memory of --entries active entries, released as one version, with one Event per entry (its approval,
with the snapshot Events hold): file and approve --runs forget requests with the receipt and --runs without
it (issue_receipt replaced by nothing), and time the search alone. Prints the median of each and the
receipt's places and rows. Target: at 200,000 entries the approval with its receipt stays well inside the
web worker's 30 s limit (20 s): the search reads every text once per token, so it grows with the memory.

Uses its own PostgreSQL database (BENCH_DATABASE_URL, default memoryadmin_receipt_bench), filled on the first
run and reused afterwards.
"""

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DB_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_receipt_bench")
os.environ["DATABASE_URL"] = DB_URL
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.update(DEBUG="false", LOG_LEVEL="WARNING")

from api_bench import fill  # noqa: E402
from queue_bench import ensure_database  # noqa: E402
from release_bench import release_everything  # noqa: E402

os.environ["DATABASE_URL"] = DB_URL
TARGET_SECONDS = 20.0


def add_history() -> None:
    """One approval Event per entry, with the snapshot an Event holds, in SQL (once)."""
    from django.db import connection

    from curation.models import Event

    if Event.objects.filter(action="approve").exists():
        return
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO curation_event (entry_id, entry_label, actor_label, action, reason, before, after,
                                        request_id, entry_version, created_at)
            SELECT id, '#' || id || ' ' || scope, 'bench', 'approve', '',
                   jsonb_build_object('status', 'pending'),
                   jsonb_build_object('status', 'active', 'trigger', trigger, 'content', content), '', 1, now()
            FROM curation_entry""")
        cursor.execute("ANALYZE curation_event")


def forget_one(n: int, lead, reviewer, *, with_receipt: bool):
    from curation.services import forget_receipt, forgets
    from curation.services.forgets import approve_forget_request, file_forget_request
    from tests.factories import active

    w = [uuid.uuid4().hex[:9] for _ in range(6)]  # a lesson of its own each run: no tombstone refuses it
    entry = active(
        lead,
        scope="org0/svc0",
        trigger=f"When {w[0]} meets {w[1]} during {w[2]}",
        content=f"Run {w[3]} with BENCHTOKEN-{n}-{os.getpid()} then ask Quillon about {w[4]} {w[5]}.",
    )
    request = file_forget_request(entry_id=entry.pk, reason="bench", actor=reviewer)
    original = forgets.issue_receipt
    if not with_receipt:
        forgets.issue_receipt = lambda *args, **kwargs: None
    try:
        started = time.perf_counter()
        outcome = approve_forget_request(request.pk, actor=lead)
        return time.perf_counter() - started, outcome.receipt
    finally:
        forgets.issue_receipt = original
        assert forget_receipt.issue_receipt is original


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--scopes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ensure_database(DB_URL)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    fill(args.entries, args.scopes)
    release_everything()
    add_history()
    from curation.selectors.forget_receipt import search_surfaces
    from tests.factories import make_user

    lead = make_user(f"bench-lead-{os.getpid()}", "lead")
    reviewer = make_user(f"bench-reviewer-{os.getpid()}", "reviewer")
    without = [forget_one(i, lead, reviewer, with_receipt=False)[0] for i in range(args.runs)]
    timed = [forget_one(args.runs + i, lead, reviewer, with_receipt=True) for i in range(args.runs)]
    receipt = timed[-1][1]
    started = time.perf_counter()
    search_surfaces(["BENCHTOKEN-absent-1", "Quillon"], scopes=["org0/svc0"])
    search_alone = time.perf_counter() - started
    with_receipt = statistics.median(t for t, _ in timed)
    added = with_receipt - statistics.median(without)
    print(f"approval without the receipt: median {statistics.median(without) * 1000:,.0f} ms")
    print(f"approval with the receipt:    median {with_receipt * 1000:,.0f} ms (+{added * 1000:,.0f} ms)")
    print(f"the search alone (2 tokens):  {search_alone * 1000:,.0f} ms")
    print(f"receipt: {receipt.summary()}; tokens {receipt.tokens}; places {receipt.places_by_surface}")
    ok = with_receipt < TARGET_SECONDS
    print(f"target: approval with its receipt < {TARGET_SECONDS:.0f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
