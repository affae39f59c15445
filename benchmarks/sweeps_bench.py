"""The conflict and consolidation sweeps at scale: time, queries and pairs compared (never all pairs).

    .venv/bin/python benchmarks/sweeps_bench.py [--entries N] [--batch N]

Uses a PostgreSQL database of its own (DATABASE_URL, default memoryadmin_queues_bench), made and filled
on the first run and kept: a rerun only tops the active entries up. Events are append-only, so the
conflicts the first run opens stay; a rerun measures the steady state (every pair known, nothing new).
"""

import argparse
import collections
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_queues_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("DEBUG", "false")

from queue_bench import ENVS, ORGS, SERVICES, ensure_database, explain  # noqa: E402

SCOPES = [f"{o}/{s}" for o in ORGS for s in SERVICES] + [f"{o}/{s}/{e}" for o in ORGS for s in SERVICES for e in ENVS]
VERBS = [
    f"{verb} the {thing}"
    for verb in (
        "restart",
        "rebuild",
        "pin",
        "clear",
        "rotate",
        "retry",
        "skip",
        "vendor",
        "bump",
        "check",
        "reset",
        "tag",
    )
    for thing in ("worker", "cache", "image", "lockfile", "keys", "job", "smoke tests", "branch")
]
SITUATIONS = [
    "merging a feature branch",
    "deploying a hotfix",
    "a failing CI run",
    "editing config files",
    "an incident at night",
    "a schema change",
    "a dependency upgrade",
    "a flaky integration test",
]
ENTRY_COLUMNS = (
    "kind",
    "scope",
    "trigger",
    "content",
    "conditions",
    "boundary",
    "recheck_when",
    "signal",
    "base_confidence",
    "hit_count",
    "retrieval_count",
    "utility_sum",
    "utility_n",
    "status",
    "queue_reason",
    "flags",
    "fingerprint",
    "source_task",
    "created_by_label",
    "version",
    "created_at",
    "updated_at",
    "archive_reason",
    "last_verified_at",
)


def entry_row(rng, now):
    from psycopg.types.json import Jsonb

    verb, situation = rng.choice(VERBS), rng.choice(SITUATIONS)
    # Mostly plain orders; opposite advice is rare, as in the curated libraries the product's design starts from (6% of entries in some conflict).
    marker = rng.choices(["Always", "Never", "Do not", "Make sure to", ""], weights=[25, 3, 2, 10, 60])[0]
    content = f"{marker} {verb} first; it saved {rng.randint(2, 40)} minutes last time.".strip().capitalize()
    trigger = f"When {situation} in {rng.choice(SERVICES)}"
    confidence = round(rng.uniform(0.5, 0.9), 3)
    return (
        "procedure",
        rng.choice(SCOPES),
        trigger,
        content,
        Jsonb([]),
        "",
        "",
        "self",
        confidence,
        0,
        0,
        0.0,
        0,
        "active",
        "",
        Jsonb([]),
        "",
        "",
        "agent:bench",
        1,
        now,
        now,
        "",
        now,
    )


def seed(target):
    from django.db import connection, transaction
    from django.utils import timezone

    from curation.models import Entry

    have = Entry.objects.filter(status="active").count()
    missing = target - have
    print(f"active entries: {have:,}" + (f"; inserting {missing:,}" if missing > 0 else ""))
    if missing <= 0:
        return
    rng, now = random.Random(have), timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.copy(f"COPY curation_entry ({', '.join(ENTRY_COLUMNS)}) FROM STDIN") as copy:
            for _ in range(missing):
                copy.write_row(entry_row(rng, now))
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) curation_entry")


def measure(name, call):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    connection.queries_log = collections.deque()  # count every query, not only the last 9000
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        result = call()
        seconds = time.perf_counter() - started
    print(f"  {name:<34} {seconds:7.2f} s  {len(queries):6,} queries", end="")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=2_000)
    args = parser.parse_args()
    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    from curation.rules import access
    from curation.sweeps import conflicts as conflict_sweep, consolidation as consolidation_sweep

    call_command("migrate", verbosity=0)
    seed(args.entries)
    n = args.entries
    print(f"sweeps over {n:,} active entries in {len(SCOPES)} scopes, batches of {args.batch:,}:")
    result = measure("sweep_conflicts", lambda: conflict_sweep.sweep_conflicts(batch_size=args.batch))
    print(
        f"  examined {result.examined:,}, compared {result.compared:,} pairs "
        f"({result.compared / max(1, n * (n - 1) // 2):.4%} of all {n * (n - 1) // 2:,}), opened {len(result.opened):,}"
    )
    result = measure("sweep_conflicts again (all known)", lambda: conflict_sweep.sweep_conflicts(batch_size=args.batch))
    print(f"  opened {len(result.opened):,}")
    result = measure("sweep_consolidation", lambda: consolidation_sweep.sweep_consolidation(batch_size=args.batch))
    print(f"  examined {result.examined:,}, proposed {len(result.proposed):,}")
    result = measure(
        "sweep_consolidation again", lambda: consolidation_sweep.sweep_consolidation(batch_size=args.batch)
    )
    print(f"  proposed {len(result.proposed):,}")

    # What the hourly task does after its first run: only the entries changed since (here 1% of them,
    # stamped as an approval or a revival stamps them).
    from django.utils import timezone

    from curation.models import Entry

    since = timezone.now()
    touched = list(Entry.objects.filter(status="active").order_by("?").values_list("id", flat=True)[: max(1, n // 100)])
    Entry.objects.filter(pk__in=touched).update(updated_at=timezone.now())
    result = measure(
        f"sweep_conflicts, {len(touched):,} changed",
        lambda: conflict_sweep.sweep_conflicts(batch_size=args.batch, changed_since=since),
    )
    print(f"  examined {result.examined:,}, compared {result.compared:,} pairs, opened {len(result.opened):,}")
    result = measure(
        f"sweep_consolidation, {len(touched):,} changed",
        lambda: consolidation_sweep.sweep_consolidation(batch_size=args.batch, changed_since=since),
    )
    print(f"  examined {result.examined:,}, proposed {len(result.proposed):,}")

    from django.db.models import BooleanField
    from django.db.models.expressions import RawSQL

    scope = "acme/billing-api/container"
    qs = (
        Entry.objects.filter(status="active")
        .filter(access.overlapping_scopes_q(scope))
        .alias(m=RawSQL("search_vector @@ to_tsquery('simple', %s)", ("reba:* | forc:*",), output_field=BooleanField()))
        .filter(m=True)
        .only("id", "scope", "trigger", "content")
        .order_by("-id")[:500]
    )
    sql, params = qs.query.sql_with_params()
    from django.db import connection

    with connection.cursor() as cursor:
        print("\nthe partner lookup of one scope:\n" + explain(cursor.mogrify(sql, params)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
