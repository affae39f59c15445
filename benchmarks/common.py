"""What a benchmark does before it measures, and how it summarises what it measured.

Importing this module changes nothing: no environment variable is set and Django is not configured until
a bench calls `configure`, so a bench that imports another bench's helpers does not inherit its database.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def database_url(default_db_name: str) -> str:
    """The bench's database: BENCH_DATABASE_URL, else DATABASE_URL, else `default_db_name` on the local server."""
    return (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("DATABASE_URL")
        or f"postgres://postgres@127.0.0.1:5432/{default_db_name}"
    )


def use_bench_redis_keys() -> None:
    """The bench's own Redis key prefix, before Django reads its settings (its servers and workers inherit it):
    the buffered reads a bench flushes, and the counters it makes, are none of a running install's."""
    os.environ.setdefault("MEMORYADMIN_REDIS_KEY_PREFIX", "memoryadmin-bench")


def configure(default_db_name: str, *, migrate: bool = True, **env: str) -> str:
    """Point Django at the bench's own database (made if missing) in the production shape, set it up and
    bring the schema up to date; answers the database URL. `env` sets further variables for this run.

    DEBUG is off (no query log, no debug pages) unless the caller says otherwise, and the test client's
    host is allowed, so django.test.Client requests go through the same middleware as production."""
    url = database_url(default_db_name)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("DEBUG", "false")
    use_bench_redis_keys()
    os.environ["ALLOWED_HOSTS"] = os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1") + ",testserver"
    os.environ.update(env)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    ensure_database(url)
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
    return url


def ensure_database(url: str) -> None:
    """CREATE DATABASE if missing; it needs autocommit, and a connection to another database."""
    import dj_database_url
    import psycopg
    from psycopg import sql

    db = dj_database_url.parse(url)
    params = {
        k: v
        for k, v in {"host": db["HOST"], "port": db["PORT"], "user": db["USER"], "password": db["PASSWORD"]}.items()
        if v
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
            print(f"created database {db['NAME']}")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, parent, ..., utime, stime, ...), or
    None for a process gone meanwhile (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pids) -> float:
    """The CPU time (user + system) the processes `pids` have used so far; a process gone meanwhile
    counts nothing."""
    ticks = 0
    for pid in pids:
        if fields := _stat_fields(pid):
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def children_of(parent: int) -> list[int]:
    """The pids whose parent is `parent` (a gunicorn master's workers)."""
    return [
        int(name)
        for name in os.listdir("/proc")
        if name.isdigit() and (fields := _stat_fields(int(name))) and int(fields[1]) == parent
    ]


def percentile(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile of already sorted samples (share 0.95 for p95)."""
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def timed(client, urls: str | list[str], reps: int, *, cpu: list[float] | None = None, **headers) -> list[float]:
    """Milliseconds per GET, each answering 200, after 3 warm-ups; cycles through `urls` (one URL: the same
    page each time). `cpu`, when given, receives the milliseconds of this process's CPU each GET took: what
    the request cost here, without waiting for the cores others use (nor the database's own work)."""
    urls = [urls] if isinstance(urls, str) else urls
    for url in (urls * 3)[:3]:
        response = client.get(url, **headers)
        assert response.status_code == 200, (url, response.status_code)
    samples = []
    for i in range(reps):
        url = urls[i % len(urls)]
        started, cpu_started = time.perf_counter(), time.process_time()
        response = client.get(url, **headers)
        samples.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - cpu_started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return samples


def summary(name: str, samples: list[float], target_ms: float, *, width: int = 30) -> bool:
    """Print one line (n, p50, p95, max) and whether p95 is under `target_ms`; answers that."""
    ordered = sorted(samples)
    p95 = percentile(ordered, 0.95)
    ok = p95 < target_ms
    print(
        f"  {name:<{width}} n={len(ordered):<4} p50 {statistics.median(ordered):7.1f}  p95 {p95:7.1f}  "
        f"max {ordered[-1]:7.1f} ms   {'PASS' if ok else 'FAIL'} (p95 < {target_ms:.0f} ms)"
    )
    return ok
