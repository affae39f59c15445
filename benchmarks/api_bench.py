"""The agent API at scale, through the real HTTP stack.

    .venv/bin/python benchmarks/api_bench.py [--entries 1000000] [--scopes 1000] [--requests 2000] [--rounds 5]
                                              (make bench-api)

1. GET /api/v1/memory with 1,000,000 active entries across 1,000 scopes (released as the published
   version), served by gunicorn, 4 client threads: p50 and p99 latency (targets: 10 ms and 30 ms); beside
   it one client alone (a read that waits for no other), and the CPU a read costs the web workers, the
   PostgreSQL backends and the clients (/proc), which on this machine's cores sets how long 4 clients
   queue. Then the exact SQL statements those requests ran to rank the version's rows (captured from
   selectors.releases.retrieve_released for the same requests), issued directly through psycopg by as
   many threads, each with its own connection: p50 and p99, and retrieval / raw. The CPU per read of the
   whole request (web workers + PostgreSQL backends + clients) beside the raw statement's (its PostgreSQL
   backends + psycopg in this process), and their ratio (target: <= 2x; one client's p50 < 8 ms). The
   measured reads run in `--rounds` rounds, each served and then raw, so that both sides of the ratio share
   each stretch of the run (a shared machine's speed drifts); the ratio is printed per round too. The reads'
   records wait in Redis (services.retrieval_buffer); the bench flushes them after the pass, as the worker
   would, and prints that flush's CPU per read beside the ratio. The dead row versions on curation_entry
   before and after the measured reads and after the flush (the retrieval counters' updates leave them),
   and the machine's load average. MEMORYADMIN_BUFFER_RETRIEVALS=false measures each read writing its own.
2. POST /api/v1/candidates/batch: 10,000 candidates in batches of 500, with every check (redaction,
   exact and near duplicates, conflicts): candidates per second (target: 2,000).

Uses its own PostgreSQL database (BENCH_DATABASE_URL, default memoryadmin_api_bench), filled on the first
run and reused afterwards, and Redis for the rate-limit counters. Everything else on the machine competes
for the same cores: the figures are upper bounds for a quiet machine.
"""

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DB_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_api_bench")
os.environ["DATABASE_URL"] = DB_URL
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.update(
    DEBUG="false", ALLOWED_HOSTS="127.0.0.1,localhost", MEMORYADMIN_API_RATE_LIMIT="100000000", LOG_LEVEL="WARNING"
)
# Every request ranks in the database (no answer from the retrieval cache), so retrieval / raw compares
# like with like; BENCH_RETRIEVAL_CACHE_SECONDS=300 measures the cache instead.
os.environ["MEMORYADMIN_RETRIEVAL_CACHE_SECONDS"] = os.environ.get("BENCH_RETRIEVAL_CACHE_SECONDS", "0")

from common import children_of, cpu_seconds, use_bench_redis_keys  # noqa: E402
from queue_bench import ensure_database  # noqa: E402

use_bench_redis_keys()  # before Django reads the settings: the buffered reads it flushes are none of an install's

PORT = int(os.environ.get("BENCH_PORT", "8765"))
TOKEN = "bench-agent-token-0123456789"
WORDS = (
    "deploy migrate config container cache worker queue ledger invoice webhook signing key rotate "
    "restart drain lock retry timeout schema index backup restore release branch rebase merge test "
    "fixture mock secret token session cookie header proxy nginx kubectl helm terraform docker image "
    "build lint format upgrade pin version rollback canary metrics alert log trace"
).split()


# Lessons mix common words with a long tail of specific terms (part123, unit456), as real lessons do:
# a three-word query then matches a few dozen of a scope's 1,000 entries, not a third of them.
TERMS = 2000


def query_words(rng) -> str:
    return f"{rng.choice(WORDS)} part{rng.randrange(TERMS)} unit{rng.randrange(TERMS)}"


def scope_name(j: int) -> str:
    return f"org{j // 50}/svc{j}"


def fill(entries: int, scopes: int) -> None:
    from django.db import connection

    from curation.models import Entry
    from curation.services.entry_writes import rewrite_decay_keys

    have = Entry.objects.filter(status="active").count()
    if have >= entries:
        print(f"database has {have:,} active entries; reusing them")
        return
    print(f"inserting {entries - have:,} active entries across {scopes:,} scopes (generated in SQL)...", flush=True)
    started = time.perf_counter()
    words = "ARRAY[" + ",".join(f"'{w}'" for w in WORDS) + "]"
    n = len(WORDS)
    step = 100_000
    with connection.cursor() as cursor:
        for low in range(have, entries, step):
            high = min(entries, low + step)
            cursor.execute(f"""
                INSERT INTO curation_entry (kind, scope, trigger, content, conditions, boundary, recheck_when, signal,
                    base_confidence, last_verified_at, hit_count, retrieval_count, utility_sum, utility_n,
                    status, queue_reason, flags, fingerprint, archive_reason, source_task, created_by_label, version,
                    created_at, updated_at)
                SELECT (ARRAY['procedure','failure_lesson','success_pattern','fact','preference','human_correction'])[1 + i % 6],
                       'org' || ((i % {scopes}) / 50) || '/svc' || (i % {scopes}),
                       'When ' || w[1 + i % {n}] || 'ing the ' || 'part' || ((i::bigint * 7919) % {TERMS})
                         || ' ' || w[1 + (i / 13) % {n}],
                       'Always ' || w[1 + (i / 3) % {n}] || ' the ' || 'unit' || ((i::bigint * 104729) % {TERMS})
                         || ' before you ' || w[1 + (i / 29) % {n}] || ' the ' || 'part' || ((i::bigint * 31) % {TERMS})
                         || '; lesson ' || i,
                       jsonb_build_array(w[1 + (i / 5) % {n}]), '', '',
                       (ARRAY['self','independent','external'])[1 + i % 3],
                       0.5 + (i % 45) / 100.0, now() - (i % 90) * interval '1 day',
                       0, 0, 0, 0, 'active', '', '[]', md5(i::text), '', 'bench', 'bench', 1, now(), now()
                FROM generate_series({low}, {high - 1}) AS i, (SELECT {words} AS w) AS v
            """)
            print(f"  {high:,}", flush=True)
    # Rows inserted by SQL carry no decay index yet: computed as the write path would have.
    rewrite_decay_keys(Entry.objects.filter(decay_rate__lt=0))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE curation_entry")
    print(f"  done in {time.perf_counter() - started:.0f} s")


def ensure_token(scopes: int) -> None:
    from curation.models import AgentToken
    from curation.services.tokens import create_agent_token

    if not AgentToken.objects.filter(name="bench").exists():
        create_agent_token(name="bench", scopes=sorted({scope_name(j).split("/")[0] for j in range(scopes)}), key=TOKEN)


def start_server(workers: int):
    env = {**os.environ}
    proc = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "memoryadmin.asgi:application",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--workers",
            str(workers),
            "--timeout",
            "300",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        # The access log is written as in production (its cost is part of a read's) but not into the report.
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            http.client.HTTPConnection("127.0.0.1", PORT, timeout=1).request("GET", "/api/v1/openapi.json")
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not start")


_client = threading.local()


def call(method: str, path: str, body=None) -> tuple[int, bytes, float]:
    """One request on this client thread's own keep-alive connection, as the Python client (an httpx
    Client) and the MCP server hold theirs; a new connection when the server closed the last one."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    for attempt in (1, 2):
        if getattr(_client, "conn", None) is None:
            _client.conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
        started = time.perf_counter()
        try:
            _client.conn.request(method, path, body=data, headers=headers)
            response = _client.conn.getresponse()
            payload = response.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            _client.conn.close()
            _client.conn = None
            if attempt == 2:
                raise
            continue
        return response.status, payload, time.perf_counter() - started


def run_clients(work: list, clients: int, handle) -> float:
    """Split the work among `clients` threads calling handle(item); answer the wall time."""
    threads = [
        threading.Thread(target=lambda part: [handle(item) for item in part], args=(work[i::clients],))
        for i in range(clients)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def prewarm() -> None:
    """Read the released rows an agent's read ranks (the published version's table) and their indexes once, as
    a running service has its working set in memory. They fit in shared_buffers sized as in
    docker-compose.yml (1GB); with the default 128MB the rest stays in the operating system's cache, which
    the figures show costs little."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW shared_buffers")
        buffers = cursor.fetchone()[0]
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('curation_releasedentry'))")
        size = cursor.fetchone()[0]
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            cursor.execute(
                "SELECT pg_prewarm(oid) FROM pg_class WHERE oid = 'curation_releasedentry'::regclass "
                "OR oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'curation_releasedentry'::regclass)"
            )
            loaded = "read once (pg_prewarm)"
        except Exception as exc:  # noqa: BLE001 - the extension is optional; say so and go on
            loaded = f"not preloaded ({exc.__class__.__name__})"
    connection.close()
    print(f"  PostgreSQL shared_buffers {buffers}; released rows with their indexes {size}, {loaded}", flush=True)


def database_backends() -> dict[int, float]:
    """{pid: CPU seconds so far} of the PostgreSQL server processes connected to the bench's database (the
    web workers' connections), this process's own and autovacuum's left out: a vacuum is the table's upkeep,
    not a read's work."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
        pids = [pid for (pid,) in cursor.fetchall()]
    return {pid: cpu_seconds([pid]) for pid in pids}


def bench_retrieval(scopes: int, requests: int, clients: int, server_pid: int, rounds: int) -> dict:
    rng = random.Random(7)
    plans = [(scope_name(rng.randrange(scopes)), query_words(rng)) for _ in range(requests)]
    # Warm up: every scope once, so the measured pass reads pages from memory as a running service does
    # (the first touch of a scope after a restart reads its pages from disk: reported separately).
    cold = []
    for j in range(scopes):
        cold.append(
            call("GET", f"/api/v1/memory?scope={scope_name(j)}&q={query_words(rng).replace(' ', '+')}")[2] * 1000
        )
    cold.sort()
    print(
        f"  warm-up (first touch of each of {scopes} scopes, 1 client): p50 {statistics.median(cold):.1f} ms, "
        f"p99 {cold[int(len(cold) * 0.99) - 1]:.1f} ms",
        flush=True,
    )
    prewarm()
    latencies, failures, found = [], [], []
    lock = threading.Lock()

    def one(plan, into=latencies):
        scope, q = plan
        status, payload, elapsed = call("GET", f"/api/v1/memory?scope={scope}&q={q.replace(' ', '+')}&k=5")
        with lock:
            into.append(elapsed * 1000)
            if status != 200:
                failures.append(status)
            else:
                found.append(len(json.loads(payload)["entries"]))

    # One client alone: what a read costs when it waits for no other (other queries than the measured pass's).
    alone = []
    run_clients(
        [(scope_name(rng.randrange(scopes)), query_words(rng)) for _ in range(min(500, requests))],
        1,
        lambda plan: one(plan, alone),
    )
    alone.sort()
    # As many clients as the measured pass, unmeasured: each worker's threads open their database connections
    # (a new backend's start and first statements) before the clock starts, as in a server that has been up.
    run_clients(
        [(scope_name(rng.randrange(scopes)), query_words(rng)) for _ in range(min(400, requests))],
        clients,
        lambda plan: one(plan, []),
    )
    flush_reads()  # what the warm-ups and the lone client buffered: not the measured pass's
    workers = children_of(server_pid)
    # The measured pass in rounds, each its reads through the server and then the same reads' statements raw:
    # the two sides of the ratio share each stretch of the run, so a machine whose speed drifts (shared cores
    # do, by a fifth from one minute to the next) moves both alike. Each round's statements are captured first.
    size = -(-len(plans) // rounds)
    parts = [plans[low : low + size] for low in range(0, len(plans), size)]
    statements = [retrieval_statements(part) for part in parts]
    dead_before = dead_tuples()
    load_before = os.getloadavg()
    cpu = dict.fromkeys(("web", "database", "clients"), 0.0)
    raw_latencies, raw_cpu, ratios, wall = [], dict.fromkeys(("database", "clients"), 0.0), [], 0.0
    for part, captured in zip(parts, statements, strict=True):
        web_before, db_before, own_before = cpu_seconds(workers), database_backends(), time.process_time()
        wall += run_clients(part, clients, one)
        db_after = database_backends()
        served = {
            "web": cpu_seconds(workers) - web_before,
            "database": sum(after - db_before.get(pid, 0.0) for pid, after in db_after.items()),
            "clients": time.process_time() - own_before,
        }
        raw = bench_raw(captured, clients)
        raw_latencies += raw["latencies"]
        for side, seconds in served.items():
            cpu[side] += seconds
        for side, seconds in raw["cpu_s"].items():
            raw_cpu[side] += seconds
        ratios.append(sum(served.values()) / sum(raw["cpu_s"].values()))
    load_after = os.getloadavg()
    dead_after = dead_tuples()
    flushed = flush_reads()
    dead_flushed = dead_tuples()
    latencies.sort()
    raw_latencies.sort()
    raw = {
        "statements": len(raw_latencies),
        "p50_ms": statistics.median(raw_latencies),
        "p99_ms": raw_latencies[int(len(raw_latencies) * 0.99) - 1],
        "cpu_ms": {side: seconds * 1000 / len(raw_latencies) for side, seconds in raw_cpu.items()},
        "round_ratios": ratios,
    }
    return {
        "raw": raw,
        "dead_tuples": (dead_before, dead_after, dead_flushed),
        "flush": flushed,
        "load": (load_before, load_after),
        "requests": len(latencies),
        "failures": len(failures),
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1],
        "per_second": len(latencies) / wall,
        "mean_entries": statistics.mean(found) if found else 0,
        "alone_p50_ms": statistics.median(alone),
        "alone_p99_ms": alone[int(len(alone) * 0.99) - 1],
        "cpu_ms": {part: seconds * 1000 / len(latencies) for part, seconds in cpu.items()},
    }


def flush_reads() -> dict:
    """Write the reads the web workers buffered in Redis, as the worker's flush task does (services.
    retrieval_buffer), and what that cost: this process's CPU and its PostgreSQL backend's."""
    from django.db import connection

    from curation.services import retrieval_buffer

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    waiting = retrieval_buffer.pending()
    db_before, own_before, started = cpu_seconds([backend]), time.process_time(), time.perf_counter()
    stored = retrieval_buffer.flush()
    return {
        "buffered": waiting,
        "stored": stored,
        "seconds": time.perf_counter() - started,
        "cpu_ms": (cpu_seconds([backend]) - db_before + time.process_time() - own_before) * 1000,
    }


def retrieval_statements(plans: list) -> list[tuple[str, object]]:
    """The SQL each request's ranking runs, as Django sends it: retrieve_released for the same scope,
    query, k and floor as the API, its statements captured instead of timed."""
    from django.db import connection

    from curation.rules import config
    from curation.models import AgentToken
    from curation.selectors import releases, retrievable_scopes

    token = AgentToken.objects.get(name="bench")
    number = releases.published_number()
    floor = config.RETRIEVE_AT_LEAST.value
    statements = []
    for scope, q in plans:
        captured = []

        def capture(execute, sql, params, many, context, captured=captured):
            captured.append((sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(capture):
            releases.retrieve_released(
                number, scopes=retrievable_scopes(scope, token.scopes), q=q, k=5, min_confidence=floor
            )
        statements += captured
    return statements


def bench_raw(statements: list, clients: int) -> dict:
    """The captured statements through psycopg alone (its client-side binding, as Django uses), no
    Django, no HTTP: the floor retrieval can approach. Its CPU too: this process's (the client side) and
    the PostgreSQL backends' of its own connections, opened before the clock starts."""
    import dj_database_url
    import psycopg

    db = dj_database_url.parse(DB_URL)
    params = {
        k: v
        for k, v in {
            "host": db["HOST"],
            "port": db["PORT"],
            "user": db["USER"],
            "password": db["PASSWORD"],
            "dbname": db["NAME"],
        }.items()
        if v
    }
    conns = [
        psycopg.connect(autocommit=True, options="-c jit=off", cursor_factory=psycopg.ClientCursor, **params)
        for _ in range(clients)
    ]
    backends = [conn.info.backend_pid for conn in conns]
    latencies = []
    lock = threading.Lock()

    def run(conn, part):
        for sql, args in part:
            started = time.perf_counter()
            with conn.cursor() as cursor:
                cursor.execute(sql, args)
                cursor.fetchall()
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed * 1000)

    threads = [threading.Thread(target=run, args=(conns[i], statements[i::clients])) for i in range(clients)]
    db_before, own_before = cpu_seconds(backends), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu = {"database": cpu_seconds(backends) - db_before, "clients": time.process_time() - own_before}
    for conn in conns:
        conn.close()
    return {"latencies": latencies, "cpu_s": cpu}


def dead_tuples() -> int:
    """curation_entry's dead row versions as PostgreSQL counts them (the counters an agent's read bumps
    leave one behind per entry counted, until a vacuum)."""
    from django.db import connection

    time.sleep(11)  # a backend reports its counts within 10 s of going idle
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'curation_entry'")
        row = cursor.fetchone()
    return row[0] if row else 0


def bench_ingest(scopes: int, total: int, batch: int, clients: int) -> dict:
    rng = random.Random(11)
    run = format(int(time.time()), "x")  # hex: a long digit run would be redacted as a phone number

    def candidate(i):
        w = rng.sample(WORDS, 4)
        part, unit = rng.randrange(TERMS), rng.randrange(TERMS)
        return {
            "scope": scope_name(rng.randrange(scopes)),
            "kind": "failure_lesson",
            "signal": "self",
            "trigger": f"When {w[0]}ing the part{part} {w[1]} (run {run}, item {i})",
            "content": f"Never {w[2]} the unit{unit} before the {w[3]} is drained; seen in task {run}-{i}.",
            "conditions": [w[0]],
            "source_task": f"bench-{run}-{i}",
            "evidence": [{"kind": "tool_output", "signal": "external", "excerpt": f"{w[1]} failed: exit 1"}],
        }

    batches = [[candidate(b * batch + i) for i in range(batch)] for b in range(total // batch)]
    created, failed = [], []
    lock = threading.Lock()

    def one(items):
        status, payload, _ = call("POST", "/api/v1/candidates/batch", {"candidates": items})
        with lock:
            if status != 200:
                failed.append(status)
            else:
                body = json.loads(payload)
                created.append(body["created"] + body["duplicates"])
                failed.extend([1] * body["failed"])

    wall = run_clients(batches, clients, one)
    return {"candidates": sum(created), "failed": len(failed), "seconds": wall, "per_second": sum(created) / wall}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--scopes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--ingest", type=int, default=10_000)
    parser.add_argument(
        "--rounds", type=int, default=5, help="the measured reads, served then raw, in this many rounds"
    )
    args = parser.parse_args()

    ensure_database(DB_URL)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    fill(args.entries, args.scopes)
    database_url = os.environ["DATABASE_URL"]
    from release_bench import release_everything  # it names its own database for its own runs

    os.environ["DATABASE_URL"] = database_url
    release_everything()  # agents read the published version: the generated entries, released as one
    ensure_token(args.scopes)
    server = start_server(args.workers)
    try:
        r = bench_retrieval(args.scopes, args.requests, args.clients, server.pid, args.rounds)
        print(
            f"GET /api/v1/memory: {r['requests']} requests, {args.clients} clients, {args.workers} gunicorn workers: "
            f"p50 {r['p50_ms']:.1f} ms (target 10), p99 {r['p99_ms']:.1f} ms (target 30), "
            f"{r['per_second']:.0f}/s, {r['mean_entries']:.1f} entries per answer, {r['failures']} failures"
        )
        cpu = r["cpu_ms"]
        total = sum(cpu.values())
        cores = os.cpu_count()
        print(f"  one client alone: p50 {r['alone_p50_ms']:.1f} ms, p99 {r['alone_p99_ms']:.1f} ms")
        print(
            f"  CPU per read: web workers {cpu['web']:.2f} ms + PostgreSQL {cpu['database']:.2f} ms + the clients "
            f"{cpu['clients']:.2f} ms = {total:.2f} ms; {args.clients} clients on {cores} cores queue for about "
            f"{args.clients} x {total:.1f} / {cores} = {args.clients * total / cores:.1f} ms a read"
        )
        raw = r["raw"]
        print(
            f"the same ranking SQL through psycopg ({raw['statements']} statements, {args.clients} connections): "
            f"p50 {raw['p50_ms']:.1f} ms, p99 {raw['p99_ms']:.1f} ms; retrieval / raw: p50 "
            f"{r['p50_ms'] / raw['p50_ms']:.2f}x, p99 {r['p99_ms'] / raw['p99_ms']:.2f}x"
        )
        raw_cpu = raw["cpu_ms"]
        per_read = raw["statements"] / r["requests"]
        raw_total = sum(raw_cpu.values()) * per_read
        print(
            f"  CPU per read of the raw statement: PostgreSQL {raw_cpu['database'] * per_read:.2f} ms + psycopg "
            f"{raw_cpu['clients'] * per_read:.2f} ms = {raw_total:.2f} ms; the whole request / the raw statement: "
            f"{total / raw_total:.2f}x (target <= 2x)"
        )
        ratios = raw["round_ratios"]
        print(
            f"  by round ({len(ratios)} of {r['requests'] // len(ratios)} reads, each served then raw): "
            f"{', '.join(f'{x:.2f}x' for x in ratios)}; median {statistics.median(ratios):.2f}x"
        )
        flush = r["flush"]
        if flush["buffered"]:
            print(
                f"  the flush of the reads buffered in Redis (the worker's task, run here once after the pass): "
                f"{flush['stored']:,} retrievals in {flush['seconds'] * 1000:.0f} ms, CPU {flush['cpu_ms']:.0f} ms = "
                f"{flush['cpu_ms'] / r['requests']:.2f} ms a read; the whole request with its share of the flush / "
                f"the raw statement: {(total + flush['cpu_ms'] / r['requests']) / raw_total:.2f}x"
            )
        (load_before, load_after), (dead_before, dead_after, dead_flushed) = r["load"], r["dead_tuples"]
        print(
            f"  curation_entry dead row versions: {dead_before:,} before the measured pass, {dead_after:,} after "
            f"({dead_after - dead_before:+,} for {r['requests']} reads), {dead_flushed:,} after the flush "
            f"({dead_flushed - dead_before:+,}); machine load average (1, 5, 15 min) "
            f"{' '.join(f'{x:.2f}' for x in load_before)} before, {' '.join(f'{x:.2f}' for x in load_after)} after"
        )
        i = bench_ingest(args.scopes, args.ingest, 500, min(args.clients, args.workers))
        print(
            f"POST /api/v1/candidates/batch: {i['candidates']:,} candidates in {i['seconds']:.1f} s = "
            f"{i['per_second']:.0f}/s (target 2,000), {i['failed']} failed"
        )
    finally:
        server.terminate()
        server.wait(10)
    raw = r["raw"]
    missed = [
        name
        for name, met in (
            ("retrieval p50 < 10 ms", r["p50_ms"] < 10),
            ("retrieval p99 < 30 ms", r["p99_ms"] < 30),
            ("CPU per read <= 2x the raw statement's", sum(r["cpu_ms"].values()) <= 2 * raw_total),
            ("one client's p50 < 8 ms", r["alone_p50_ms"] < 8),
            ("ingest >= 2,000/s", i["per_second"] >= 2000),
            ("no failed request", not r["failures"] and not i["failed"]),
        )
        if not met
    ]
    print("targets met" if not missed else "targets NOT met: " + "; ".join(missed))
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
