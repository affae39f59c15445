"""The candidates queue at scale: is a page under 100 ms (the compact list: 50 ms) with 100,000 pending entries?

    .venv/bin/python benchmarks/queue_bench.py [--entries N] [--reps N]      (make bench)

Uses a PostgreSQL database of its own (BENCH_DATABASE_URL or DATABASE_URL, default memoryadmin_bench), made and filled on
the first run and kept for the next: a rerun only tops it up. Requests go through django.test.Client,
so the timings include middleware, the queries and template rendering, but no network.
"""

import argparse
import datetime
import html
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# ensure_database stays importable from here: api_bench and lifecycle_bench still take it from this module.
from benchmarks.common import configure, ensure_database, summary, timed  # noqa: E402,F401

TARGET_MS = 100.0
COMPACT_TARGET_MS = 50.0  # the compact list (one line a lesson), 50 lines a page
QUEUE_URL = "/review/candidates/"


# --- data: varied enough that the planner sees a realistic table -------------------------------------

ORGS = ["acme", "globex", "initech", "umbrella", "hooli"]
SERVICES = ["billing-api", "web", "search", "auth", "payments", "ingest", "reports", "mobile-gw"]
ENVS = ["container", "ci", "staging", "prod", "host"]
SCOPES = [f"{o}/{s}/{e}" for o in ORGS for s in SERVICES for e in ENVS]  # 200 scopes
SCOPE_WEIGHTS = [1 / (i + 1) ** 0.8 for i in range(len(SCOPES))]  # a few busy scopes, a long tail
TOOLS = ["pytest", "alembic", "terraform", "npm", "git", "kubectl", "psql", "make", "celery", "nginx"]
ACTIONS = ["editing config files", "running migrations", "rotating credentials", "restarting workers",
           "bumping dependencies", "rebuilding the cache", "deploying a hotfix", "reading the logs"]
KINDS = ["procedure", "failure_lesson", "success_pattern", "preference", "fact", "human_correction"]
KIND_WEIGHTS = [30, 30, 20, 8, 10, 2]
SIGNALS = ["self", "independent", "external"]
SIGNAL_WEIGHTS = [60, 30, 10]
ENTRY_COLUMNS = (
    "kind", "scope", "trigger", "content", "conditions", "boundary", "recheck_when", "signal",
    "base_confidence", "confidence", "hit_count", "retrieval_count", "utility_sum", "utility_n", "status",
    "queued_at", "queue_reason", "flags", "source_task", "created_by_label", "version", "created_at", "updated_at",
    "archive_reason", "fingerprint",
)
EVIDENCE_COLUMNS = ("entry_id", "kind", "signal", "polarity", "excerpt", "task_ref", "observed_at",
                    "recorded_by_label", "created_at")


def entry_row(rng: random.Random, now: datetime.datetime) -> tuple:
    from psycopg.types.json import Jsonb

    tool, action, scope = rng.choice(TOOLS), rng.choice(ACTIONS), rng.choices(SCOPES, weights=SCOPE_WEIGHTS)[0]
    queued = now - datetime.timedelta(seconds=rng.uniform(60, 60 * 86400))  # the last 60 days, all ready
    confidence = round(rng.uniform(0.3, 0.85), 3)
    trigger = f"When {action} with {tool} in {scope.split('/')[1]} ({scope.split('/')[2]})"
    content = (f"Run `{tool} --check` first and confirm the working directory; {action} without it has "
               f"failed {rng.randint(2, 9)} times this month. " * rng.randint(1, 4)).strip()
    boundary = "" if rng.random() < 0.3 else f"Not on the {rng.choice(ENVS)} checkout, where paths are fixed."
    return (
        rng.choices(KINDS, weights=KIND_WEIGHTS)[0], scope, trigger, content, Jsonb([tool, action.split()[0]]),
        boundary, "", rng.choices(SIGNALS, weights=SIGNAL_WEIGHTS)[0], confidence, confidence, 0, 0, 0.0, 0,
        "pending", queued, "new", Jsonb([]), f"task-{rng.randint(1, 10**6)}", f"agent:bench-{rng.randint(1, 40)}",
        1, queued, queued, "", "",  # no fingerprint: random lessons repeat, and one pending per fingerprint holds
    )



def seed(target: int) -> None:
    """Top the pending queue up to `target` entries with COPY (seconds, where .save() would take minutes)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from curation.models import Entry

    have = Entry.objects.filter(status="pending").count()
    missing = target - have
    print(f"pending entries: {have:,}" + (f"; inserting {missing:,}" if missing > 0 else ""))
    if missing <= 0:
        return
    rng, now, started = random.Random(have), timezone.now(), time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        first_new = (Entry.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
        with cursor.copy(f"COPY curation_entry ({', '.join(ENTRY_COLUMNS)}) FROM STDIN") as copy:
            for _ in range(missing):
                copy.write_row(entry_row(rng, now))
        # A few evidence rows on one entry in seven, so the page's evidence prefetch has work to do.
        new_ids = list(Entry.objects.filter(id__gte=first_new).values_list("id", "queued_at"))
        with cursor.copy(f"COPY curation_evidence ({', '.join(EVIDENCE_COLUMNS)}) FROM STDIN") as copy:
            for entry_id, queued in rng.sample(new_ids, len(new_ids) // 7):
                for _ in range(rng.randint(1, 3)):
                    copy.write_row((entry_id, rng.choice(["tool_output", "test_result", "task_outcome"]),
                                    rng.choice(SIGNALS), rng.choice(["supports", "supports", "contradicts"]),
                                    "exit status 1: no such file or directory: config/settings.yaml " * 3,
                                    f"task-{rng.randint(1, 10**6)}", queued, "agent:bench", queued))
    print(f"inserted in {time.perf_counter() - started:.1f} s")


def reviewer():
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username="bench-reviewer")
    user.groups.add(Group.objects.get(name="reviewer"))
    return user


# --- measuring ----------------------------------------------------------------------------------------


def next_link(response) -> str:
    match = re.search(r'<a href="([^"]*after=[^"]*)" rel="next"', response.content.decode())
    assert match, "no next-page link on the page"
    return QUEUE_URL + html.unescape(match.group(1))


def get(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response


def set_compact(user, compact: bool) -> None:
    from curation import services

    services.remember_queue(user, "candidates", compact=compact, filters="")


def explain(sql: str) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=100_000, help="pending entries to have (default 100000)")
    parser.add_argument("--reps", type=int, default=30, help="timed requests per case (default 30)")
    args = parser.parse_args()

    configure("memoryadmin_bench")
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from curation.models import Entry
    from curation.selectors import encode_cursor

    seed(args.entries)
    with connection.cursor() as cursor:
        # Fresh statistics and visibility map, as autovacuum would leave a table that has settled.
        cursor.execute("VACUUM (ANALYZE) curation_entry")
        cursor.execute("VACUUM (ANALYZE) curation_evidence")

    client = Client()
    bench_reviewer = reviewer()
    client.force_login(bench_reviewer)
    set_compact(bench_reviewer, False)
    page_size = settings.CURATION["QUEUE_PAGE_SIZE"]

    # The 20 pages after the first, by following each page's own "Next page" link.
    later, url = [], QUEUE_URL
    for _ in range(20):
        url = next_link(get(client, url))
        later.append(url)
    ready = Entry.objects.filter(queued_at__isnull=False, queued_at__lte=timezone.now())
    depth = min(50_000, ready.count() - page_size - 1)
    deep_url = f"{QUEUE_URL}?after={encode_cursor(ready.order_by('queued_at', 'id')[depth])}"

    print(f"\nGET {QUEUE_URL} as a reviewer, {page_size} cards a page, {args.reps} timed requests each:")
    ok = summary("first page", timed(client, [QUEUE_URL], args.reps), TARGET_MS)
    ok &= summary("pages 2-21 (next links)", timed(client, later, args.reps), TARGET_MS)
    ok &= summary(f"deep page (~{depth:,} rows in)", timed(client, [deep_url], args.reps), TARGET_MS)
    set_compact(bench_reviewer, True)
    compact_page = get(client, QUEUE_URL).content.decode()
    assert compact_page.count('class="card line"') == page_size, "the compact list did not render"
    print(f"\nthe same, as the compact list ({page_size} lines a page):")
    ok &= summary("compact first page", timed(client, [QUEUE_URL], args.reps), COMPACT_TARGET_MS)
    ok &= summary("compact pages 2-21", timed(client, later, args.reps), COMPACT_TARGET_MS)
    set_compact(bench_reviewer, False)

    # One request's SQL: a fixed number of queries, and no unbounded COUNT(*).
    for name, url in (("first page", QUEUE_URL), ("deep page", deep_url)):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            get(client, url)
            total_ms = (time.perf_counter() - started) * 1000
        sql_ms = sum(float(q["time"]) for q in captured.captured_queries) * 1000
        print(f"\n{name}: {len(captured)} queries, {sql_ms:.1f} ms in SQL of {total_ms:.1f} ms for the request")
        for q in captured.captured_queries:
            print(f"  {float(q['time']) * 1000:6.1f} ms  {q['sql'][:150]}{'...' if len(q['sql']) > 150 else ''}")
        counts = [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()]
        bounded = [bool(re.search(r"FROM \(SELECT .* LIMIT \d+\)", s, re.S)) for s in counts]
        print(f"  COUNT queries: {len(counts)}, each capped by a LIMIT inside a subquery: "
              f"{'PASS' if counts and all(bounded) else 'FAIL'}")
        ok &= bool(counts) and all(bounded)
        main_sql = next(q["sql"] for q in captured.captured_queries
                        if 'FROM "curation_entry"' in q["sql"] and 'ORDER BY "curation_entry"."queued_at"' in q["sql"])
        plan = explain(main_sql)
        uses_index = "entry_queue_idx" in plan
        print(f"\n  EXPLAIN ANALYZE of the {name} query (uses entry_queue_idx: {'PASS' if uses_index else 'FAIL'}):")
        print("    " + plan.replace("\n", "\n    "))
        ok &= uses_index
        if name == "first page":
            print("\n  EXPLAIN ANALYZE of the capped count:")
            print("    " + explain(counts[0]).replace("\n", "\n    "))

    print(f"\n{'PASS' if ok else 'FAIL'}: queue pages under {TARGET_MS:.0f} ms at p95 ({COMPACT_TARGET_MS:.0f} ms as the"
          " compact list), bounded SQL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
