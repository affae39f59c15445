"""What the MCP layer costs: `search_memory` over the stdio MCP server, client to answer, next to the
plain HTTP call it makes, in the same run, against the same server.

    .venv/bin/python benchmarks/mcp_bench.py [--entries 100000] [--scopes 100] [--requests 500]   (make bench-mcp)

1. POST /api/v1/memory/search over HTTP (httpx, one kept-alive connection): p50 and p99.
2. search_memory through the MCP SDK's client and `memoryadmin-mcp` (stdio, a subprocess), which makes
   that same call: p50 and p99, and the difference (target: a few milliseconds).
3. search_memory through /mcp (Streamable HTTP, in the server), for comparison.

Beside each pass's latencies, the CPU one call costs: the server's (the gunicorn worker's threads, and for
stdio the `memoryadmin-mcp` process too, from /proc/<pid>/task/*/schedstat) and the client's (this process).
Every client keeps its connection or session open across calls: the MCP clients negotiate once (the SDK's
server/discover, or initialize on an older server) and then send one request per call, as the HTTP client
does, so the difference is the MCP layer and nothing else.

The server is the production one: gunicorn with the shipped gunicorn.conf.py (uvicorn workers serving
memoryadmin.asgi), one worker. Uses its own PostgreSQL database (BENCH_DATABASE_URL, default
memoryadmin_mcp_bench), filled on the first run with api_bench's generated lessons and reused afterwards.
The three passes run one request at a time, interleaved in rounds, so that they meet the same machine."""

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

DB_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_mcp_bench")
os.environ["BENCH_DATABASE_URL"] = DB_URL  # api_bench (its data generator) reads it too
os.environ["DATABASE_URL"] = DB_URL
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.update(DEBUG="false", ALLOWED_HOSTS="127.0.0.1,localhost", MEMORYADMIN_API_RATE_LIMIT="0")

import anyio  # noqa: E402
import httpx  # noqa: E402
import httpx2  # noqa: E402
from api_bench import fill, query_words, scope_name  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from queue_bench import ensure_database  # noqa: E402

PORT = int(os.environ.get("BENCH_PORT", "8152"))
URL = f"http://127.0.0.1:{PORT}"
TOKEN = "mcp-bench-agent-token-0123456789"


def ensure_token(scopes: int) -> None:
    from curation.models import AgentToken
    from curation.services.tokens import create_agent_token

    if not AgentToken.objects.filter(name="mcp-bench").exists():
        create_agent_token(
            name="mcp-bench", key=TOKEN, scopes=sorted({scope_name(j).split("/")[0] for j in range(scopes)})
        )


def start_server() -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "--config",
            "gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--workers",
            "1",
            "--access-logfile",
            "/dev/null",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
    )
    for _ in range(150):
        try:
            httpx.get(f"{URL}/api/v1/openapi.json", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not start")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def cpu_ns(pids: list[int]) -> int:
    """The CPU time the processes' threads have used so far, in nanoseconds (the kernel's own count, exact
    where /proc/<pid>/stat's is in 10 ms ticks)."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
                pass
    return total


def summary(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {"n": len(ordered), "p50": statistics.median(ordered), "p99": ordered[max(0, int(len(ordered) * 0.99) - 1)]}


async def measure(plans: list[tuple[str, str]], warmup: int, master: int, worker: int) -> tuple[dict, dict, dict]:
    env = {"PATH": os.environ["PATH"], "MEMORYADMIN_URL": URL, "MEMORYADMIN_TOKEN": TOKEN}
    stdio = Client(StdioServerParameters(command=str(ROOT / ".venv/bin/memoryadmin-mcp"), env=env))
    remote = Client(
        streamable_http_client(
            f"{URL}/mcp", http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        )
    )
    times: dict[str, list[float]] = {
        "HTTP POST /api/v1/memory/search": [],
        "MCP stdio search_memory": [],
        "MCP /mcp (Streamable HTTP) search_memory": [],
    }
    names = list(times)
    server_cpu = dict.fromkeys(names, 0)
    client_cpu = dict.fromkeys(names, 0)
    async with (
        httpx.AsyncClient(base_url=URL, headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        stdio as via_stdio,
        remote as via_http,
    ):

        async def plain(scope, q):
            response = await http.post("/api/v1/memory/search", json={"scope": scope, "q": q, "k": 5})
            assert response.status_code == 200, response.text

        async def tool(client, scope, q):
            result = await client.call_tool("search_memory", {"scope": scope, "query": q, "k": 5})
            assert not result.is_error, result.content

        calls = [plain, lambda s, q: tool(via_stdio, s, q), lambda s, q: tool(via_http, s, q)]
        stdio_server = [pid for pid in children(os.getpid()) if pid != master]  # memoryadmin-mcp
        servers = [[worker], [worker, *stdio_server], [worker]]
        for i, (scope, q) in enumerate(plans):
            for name, call, pids in zip(names, calls, servers):
                server_before, client_before = cpu_ns(pids), time.process_time_ns()
                started = time.perf_counter()
                await call(scope, q)
                elapsed = time.perf_counter() - started
                if i >= warmup:
                    times[name].append(elapsed * 1000)
                    client_cpu[name] += time.process_time_ns() - client_before
                    server_cpu[name] += cpu_ns(pids) - server_before
    return times, server_cpu, client_cpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--scopes", type=int, default=100)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()

    ensure_database(DB_URL)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    fill(args.entries, args.scopes)
    ensure_token(args.scopes)
    rng = random.Random(5)
    plans = [(scope_name(rng.randrange(args.scopes)), query_words(rng)) for _ in range(args.warmup + args.requests)]

    server = start_server()
    try:
        (worker,) = children(server.pid)
        times, server_cpu, client_cpu = anyio.run(measure, plans, args.warmup, server.pid, worker)
    finally:
        server.terminate()
        server.wait(20)
    print(
        f"\nsearch, {args.requests} requests each (after {args.warmup} warm-up), one at a time, interleaved; "
        f"{args.entries:,} active entries across {args.scopes} scopes; gunicorn, 1 uvicorn worker:"
    )
    base = summary(times["HTTP POST /api/v1/memory/search"])
    for name, latencies in times.items():
        s = summary(latencies)
        extra = (
            ""
            if s is base or name.startswith("HTTP")
            else f"   ({s['p50'] - base['p50']:+.1f} ms p50, {s['p99'] - base['p99']:+.1f} ms p99 over HTTP)"
        )
        print(f"  {name:<44} p50 {s['p50']:6.1f} ms   p99 {s['p99']:6.1f} ms{extra}")
    print(
        "\nCPU per call (ms), server (the gunicorn worker; for stdio with memoryadmin-mcp) and client (this process):"
    )
    for name in times:
        server_ms, client_ms = server_cpu[name] / 1e6 / args.requests, client_cpu[name] / 1e6 / args.requests
        print(f"  {name:<44} server {server_ms:5.2f}   client {client_ms:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
