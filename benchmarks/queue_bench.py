"""The candidates queue flat: do its first page and a deep page answer in under 50 ms with 100,000 pending,
and within 1.2x of the same pages with 1,000 pending, as full cards and as the compact list?

    .venv/bin/python benchmarks/queue_bench.py [--small N] [--large N] [--reps N]      (make bench)

Two PostgreSQL databases of its own, one a queue size: BENCH_DATABASE_URL (or DATABASE_URL; default
memoryadmin_bench) holds the large queue and the same name with "_small" the small one. Each is made and
filled on the first run and kept for the next: a rerun only tops it up. Requests go through
django.test.Client, so the timings are server time: middleware, the queries and template rendering, no
network. The two sizes are measured in alternating rounds in one process, so a load that comes and goes
on the machine falls on both. The deep page is the one a reviewer reaches by following "Next page" to the
middle of the queue (its URL is the link the page before it offers). After the table, one request of each
page is taken apart: its queries (time and EXPLAIN ANALYZE), the time in templates, and the rest.
"""

import argparse
import datetime
import html
import random
import re
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# ensure_database stays importable from here: api_bench and lifecycle_bench still take it from this module.
from benchmarks.common import configure, ensure_database, percentile, timed  # noqa: E402,F401

TARGET_MS = 50.0  # server time at p95, with the large queue, full cards and compact list alike
FLAT_RATIO = 1.2  # the large queue's p50 over the small queue's, page for page
ROUNDS = 5  # alternating rounds of small and large: a passing load falls on both
QUEUE_URL = "/review/candidates/"
MODES = (("cards", False), ("compact", True))


# --- data: varied enough that the planner sees a realistic table -------------------------------------

ORGS = ["acme", "globex", "initech", "umbrella", "hooli"]
SERVICES = ["billing-api", "web", "search", "auth", "payments", "ingest", "reports", "mobile-gw"]
ENVS = ["container", "ci", "staging", "prod", "host"]
SCOPES = [f"{o}/{s}/{e}" for o in ORGS for s in SERVICES for e in ENVS]  # 200 scopes
SCOPE_WEIGHTS = [1 / (i + 1) ** 0.8 for i in range(len(SCOPES))]  # a few busy scopes, a long tail
TOOLS = ["pytest", "alembic", "terraform", "npm", "git", "kubectl", "psql", "make", "celery", "nginx"]
ACTIONS = [
    "editing config files",
    "running migrations",
    "rotating credentials",
    "restarting workers",
    "bumping dependencies",
    "rebuilding the cache",
    "deploying a hotfix",
    "reading the logs",
]
KINDS = ["procedure", "failure_lesson", "success_pattern", "preference", "fact", "human_correction"]
KIND_WEIGHTS = [30, 30, 20, 8, 10, 2]
SIGNALS = ["self", "independent", "external"]
SIGNAL_WEIGHTS = [60, 30, 10]
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
    "queued_at",
    "queue_reason",
    "flags",
    "source_task",
    "created_by_label",
    "version",
    "created_at",
    "updated_at",
    "archive_reason",
    "fingerprint",
)
EVIDENCE_COLUMNS = (
    "entry_id",
    "kind",
    "signal",
    "polarity",
    "excerpt",
    "task_ref",
    "observed_at",
    "recorded_by_label",
    "evaluator",
    "created_at",
)


def entry_row(rng: random.Random, now: datetime.datetime) -> tuple:
    from psycopg.types.json import Jsonb

    tool, action, scope = rng.choice(TOOLS), rng.choice(ACTIONS), rng.choices(SCOPES, weights=SCOPE_WEIGHTS)[0]
    queued = now - datetime.timedelta(seconds=rng.uniform(60, 60 * 86400))  # the last 60 days, all ready
    confidence = round(rng.uniform(0.3, 0.85), 3)
    trigger = f"When {action} with {tool} in {scope.split('/')[1]} ({scope.split('/')[2]})"
    content = (
        f"Run `{tool} --check` first and confirm the working directory; {action} without it has "
        f"failed {rng.randint(2, 9)} times this month. " * rng.randint(1, 4)
    ).strip()
    boundary = "" if rng.random() < 0.3 else f"Not on the {rng.choice(ENVS)} checkout, where paths are fixed."
    return (
        rng.choices(KINDS, weights=KIND_WEIGHTS)[0],
        scope,
        trigger,
        content,
        Jsonb([tool, action.split()[0]]),
        boundary,
        "",
        rng.choices(SIGNALS, weights=SIGNAL_WEIGHTS)[0],
        confidence,
        0,
        0,
        0.0,
        0,
        "pending",
        queued,
        "new",
        Jsonb([]),
        f"task-{rng.randint(1, 10**6)}",
        f"agent:bench-{rng.randint(1, 40)}",
        1,
        queued,
        queued,
        "",
        "",  # no fingerprint: random lessons repeat, and one pending per fingerprint holds
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
                    copy.write_row(
                        (
                            entry_id,
                            rng.choice(["tool_output", "test_result", "task_outcome"]),
                            rng.choice(SIGNALS),
                            rng.choice(["supports", "supports", "contradicts"]),
                            "exit status 1: no such file or directory: config/settings.yaml " * 3,
                            f"task-{rng.randint(1, 10**6)}",
                            queued,
                            "agent:bench",
                            "",
                            queued,
                        )
                    )
    print(f"inserted in {time.perf_counter() - started:.1f} s")


def reviewer():
    from django.contrib.auth.models import Group, User

    from curation.models import ScopeGrant
    from curation.rules.access import EVERY_SCOPE

    user, _ = User.objects.get_or_create(username="bench-reviewer")
    user.groups.add(Group.objects.get(name="reviewer"))
    ScopeGrant.objects.get_or_create(user=user, prefix=EVERY_SCOPE)
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


def explain(sql: str, params) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def sibling_url(url: str, suffix: str) -> str:
    """The same server and user, the database name with `suffix`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + suffix))


def use_database(url: str) -> None:
    """Point the default connection at another database of the same server (the next query reconnects)."""
    import dj_database_url
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = dj_database_url.parse(url)["NAME"]


class Queue:
    """One database's queue: its size, a logged-in reviewer's client, and the URLs of its pages."""

    def __init__(self, label: str, url: str, pending: int):
        self.label, self.url, self.pending = label, url, pending
        self.urls: dict[str, str] = {}

    def prepare(self) -> None:
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client
        from django.utils import timezone

        from curation.rules import config
        from curation.models import Entry
        from curation.selectors import encode_cursor

        use_database(self.url)
        ensure_database(self.url)
        call_command("migrate", verbosity=0)
        print(f"[{self.label}] ", end="")
        seed(self.pending)
        with connection.cursor() as cursor:
            # Fresh statistics and visibility map, as autovacuum would leave a table that has settled.
            cursor.execute("VACUUM (ANALYZE) curation_entry")
            cursor.execute("VACUUM (ANALYZE) curation_evidence")
        self.user = reviewer()
        self.client = Client()
        self.client.force_login(self.user)
        set_compact(self.user, False)
        page_size = config.QUEUE_PAGE_SIZE.value
        ready = Entry.objects.filter(queued_at__isnull=False, queued_at__lte=timezone.now()).order_by("queued_at", "id")
        # The middle of the queue, on a page boundary: the page a reviewer reaches by following "Next page".
        depth = (ready.count() // 2) // page_size * page_size
        before = f"{QUEUE_URL}?after={encode_cursor(ready[depth - page_size - 1])}" if depth > page_size else QUEUE_URL
        deep = next_link(get(self.client, before))
        assert unquote(deep) == f"{QUEUE_URL}?after={encode_cursor(ready[depth - 1])}", (deep, depth)
        second = next_link(get(self.client, QUEUE_URL))
        assert unquote(second) == f"{QUEUE_URL}?after={encode_cursor(ready[page_size - 1])}", second
        self.urls = {"first page": QUEUE_URL, "deep page": deep}
        self.depth_page = depth // page_size + 1


def measure(queues: list[Queue], reps: int) -> tuple[dict, dict]:
    """Wall and CPU milliseconds per (queue, view, page), the queues alternating in ROUNDS rounds."""
    wall: dict[tuple, list[float]] = {}
    cpu: dict[tuple, list[float]] = {}
    for _ in range(ROUNDS):
        for queue in queues:
            use_database(queue.url)
            for mode, compact in MODES:
                set_compact(queue.user, compact)
                for page, url in queue.urls.items():
                    key = (queue.label, mode, page)
                    wall.setdefault(key, []).extend(
                        timed(queue.client, url, max(1, reps // ROUNDS), cpu=cpu.setdefault(key, []))
                    )
    return wall, cpu


def anatomy(queue: Queue, compact: bool, url: str) -> dict:
    """One request taken apart: its queries (statement, parameters, milliseconds from send to the last row
    read), the time in templates (render()), and in all."""
    from django.db import connection

    from curation.views import queues as queue_views

    use_database(queue.url)
    set_compact(queue.user, compact)
    get(queue.client, url)
    rendering, queries = [], []
    original = queue_views.render

    def timed_render(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            rendering.append((time.perf_counter() - started) * 1000)

    def timed_query(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            queries.append({"sql": sql, "params": params, "ms": (time.perf_counter() - started) * 1000})

    queue_views.render = timed_render
    try:
        with connection.execute_wrapper(timed_query):
            started = time.perf_counter()
            response = get(queue.client, url)
            total_ms = (time.perf_counter() - started) * 1000
    finally:
        queue_views.render = original
    if compact:
        assert response.content.decode().count('class="card line"') > 0, "the compact list did not render"
    return {
        "queries": queries,
        "total_ms": total_ms,
        "template_ms": sum(rendering),
        "sql_ms": sum(q["ms"] for q in queries),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1_000, help="pending entries in the small queue (default 1000)")
    parser.add_argument(
        "--large", type=int, default=100_000, help="pending entries in the large queue (default 100000)"
    )
    parser.add_argument("--reps", type=int, default=60, help="timed requests per page and size (default 60)")
    parser.add_argument(
        "--explain",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="print EXPLAIN ANALYZE of each query of the large queue's pages (default on)",
    )
    args = parser.parse_args()

    large_url = configure("memoryadmin_bench")
    from curation.rules import config

    queues = [
        Queue(f"{args.small:,}", sibling_url(large_url, "_small"), args.small),
        Queue(f"{args.large:,}", large_url, args.large),
    ]
    for queue in queues:
        queue.prepare()
    small, large = queues
    samples, cpu = measure(queues, args.reps)
    parts = {
        (q.label, mode, page): anatomy(q, compact, url)
        for q in queues
        for mode, compact in MODES
        for page, url in q.urls.items()
    }

    page_size = config.QUEUE_PAGE_SIZE.value
    print(
        f"\nGET {QUEUE_URL} as a reviewer, {page_size} a page, {args.reps} timed requests per cell in {ROUNDS} "
        f"alternating rounds; server time in ms (in-process, no network); cpu = p50 of this process's CPU "
        f"time (without the wait for a core, nor PostgreSQL's own work); q = queries per request."
    )
    print(
        f"deep page: page {small.depth_page} of the {small.label} queue, page {large.depth_page} of the "
        f"{large.label} queue (the middle, reached by its own Next links)."
    )
    print(
        f"\n{'view':<8} {'page':<11}| {small.label + ' pending':>30} | {large.label + ' pending':>30} | "
        f"{'large/small':>11} | verdict"
    )
    print(f"{'':<8} {'':<11}|" + f" {'p50':>7} {'p95':>7} {'cpu':>7} {'q':>6} |" * 2 + f" {'p50':>11} |")
    misses = []
    for mode, _ in MODES:
        for page in small.urls:
            small_ms, large_ms = (sorted(samples[(q.label, mode, page)]) for q in queues)
            sq, lq = (len(parts[(q.label, mode, page)]["queries"]) for q in queues)
            s50, l50 = statistics.median(small_ms), statistics.median(large_ms)
            s95, l95 = percentile(small_ms, 0.95), percentile(large_ms, 0.95)
            scpu, lcpu = (statistics.median(cpu[(q.label, mode, page)]) for q in queues)
            ratio = l50 / s50
            missed = []
            if l95 >= TARGET_MS:
                missed.append(
                    f"{mode} {page}: p95 {l95:.1f} ms with {large.label} pending, target < {TARGET_MS:.0f} ms"
                )
            if ratio > FLAT_RATIO:
                missed.append(f"{mode} {page}: {ratio:.2f}x the {small.label} queue's p50, target <= {FLAT_RATIO}x")
            if lq != sq:
                missed.append(f"{mode} {page}: {lq} queries with {large.label} pending, {sq} with {small.label}")
            misses += missed
            print(
                f"{mode:<8} {page:<11}| {s50:7.1f} {s95:7.1f} {scpu:7.1f} {sq:6} | {l50:7.1f} {l95:7.1f} {lcpu:7.1f} {lq:6} | "
                f"{ratio:10.2f}x | {'MISS' if missed else 'ok'}"
            )
        first, deep = (len(parts[(large.label, mode, page)]["queries"]) for page in large.urls)
        if first != deep:
            misses.append(f"{mode}: the deep page runs {deep} queries, the first page {first}")

    print(
        "\nWhere a request's time goes, in ms (one request each; template = render(); SQL = from sending each query "
        "to reading its last row):"
    )
    print(f"{'queue':>9} {'view':<8} {'page':<11} {'total':>7} {'SQL':>6} {'template':>9} {'other':>6} {'queries':>8}")
    for (label, mode, page), part in parts.items():
        other = part["total_ms"] - part["sql_ms"] - part["template_ms"]
        print(
            f"{label:>9} {mode:<8} {page:<11} {part['total_ms']:7.1f} {part['sql_ms']:6.1f} "
            f"{part['template_ms']:9.1f} {other:6.1f} {len(part['queries']):8}"
        )

    use_database(large.url)
    for mode, _ in MODES:
        for page in large.urls:
            part = parts[(large.label, mode, page)]
            print(f"\n{large.label} pending, {mode}, {page}: {len(part['queries'])} queries")
            for q in part["queries"]:
                print(f"  {q['ms']:6.2f} ms  {q['sql'][:140]}{'...' if len(q['sql']) > 140 else ''}")
            counts = [q["sql"] for q in part["queries"] if "COUNT(" in q["sql"].upper()]
            bounded = all(re.search(r"FROM \(SELECT .* LIMIT \d+\)", sql, re.S) for sql in counts)
            if not bounded:
                misses.append(f"{mode} {page}: a COUNT without a LIMIT inside it")
            main_sql = [
                (q["sql"], q["params"])
                for q in part["queries"]
                if 'FROM "curation_entry"' in q["sql"] and 'ORDER BY "curation_entry"."queued_at"' in q["sql"]
            ]
            if not main_sql:
                misses.append(f"{mode} {page}: no page query ordered by queued_at")
            elif "entry_queue_idx" not in explain(*main_sql[0]):
                misses.append(f"{mode} {page}: the page query does not use entry_queue_idx")
            if args.explain:
                for q in part["queries"]:
                    if q["sql"].startswith("SELECT") and '"curation_' in q["sql"]:
                        print(f"\n  EXPLAIN ANALYZE {q['sql'][:100]}...")
                        print("    " + explain(q["sql"], q["params"]).replace("\n", "\n    "))

    print()
    for miss in misses:
        print(f"MISS: {miss}")
    print(
        f"{'FAIL' if misses else 'PASS'}: queue pages under {TARGET_MS:.0f} ms at p95 with {large.label} pending "
        f"and within {FLAT_RATIO}x of {small.label} pending, as cards and as the compact list, in the same "
        f"queries at any depth (upper bounds: the machine is shared)"
    )
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
