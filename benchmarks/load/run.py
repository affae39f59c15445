"""`make load`: a load test with locust against the whole stack on this machine, loopback only.

    LOAD_MINUTES=10 .venv/bin/python benchmarks/load/run.py        (make load; LOAD_MINUTES shortens it)

Starts a hot standby of the local PostgreSQL (scripts/replica.sh, where the cluster tools are installed and
this runs as root; LOAD_REPLICA=0 leaves it out), gunicorn (uvicorn workers, 127.0.0.1) reading agents'
retrievals there, a Celery worker per queue and beat (the sweeps on their schedule) on PostgreSQL and Redis,
then runs locust headless for LOAD_MINUTES: 8 reviewers deciding candidates in the console and 32 agents
retrieving, submitting and reporting outcomes (benchmarks/load/locustfile.py). Meanwhile a lead publishes
every 30 s, the nightly detection sweeps are started at once (the sweeps' worker is busy, as at night), and
one probe task a queue every 10 s measures each queue's wait (sent to started).
Prints, per endpoint, the requests, failures (must be 0) and p50/p95/p99; each queue's wait; the standby's
replay lag and the share of retrievals each server answered; and the database's size and its tables' dead
tuples (pg_stat_user_tables) before and after. Exits non-zero on any failure.

Its own database, LOAD_DATABASE_URL (default memoryadmin_load), seeded on the first run: 8 reviewers with a
scope each, 32 agent tokens, LOAD_ENTRIES active entries released as the published version, and a few
hundred candidates waiting. Redis: LOAD_REDIS_URL (default redis://127.0.0.1:6379/15), under keys of its own
(`memoryadmin-load`): an install's queued tasks and buffered reads on that database are left alone.
"""

import csv
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "load"))

DB_URL = os.environ.get("LOAD_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_load")
REDIS_URL = os.environ.get("LOAD_REDIS_URL", "redis://127.0.0.1:6379/15")
PORT = int(os.environ.get("LOAD_PORT", "8766"))
MINUTES = float(os.environ.get("LOAD_MINUTES", "10"))
ENTRIES = int(os.environ.get("LOAD_ENTRIES", "20000"))
DATA = Path(tempfile.mkdtemp(prefix="memoryadmin-load-"))
os.environ.update(
    DATABASE_URL=DB_URL,
    CELERY_BROKER_URL=REDIS_URL,
    DJANGO_SETTINGS_MODULE="memoryadmin.settings",
    DEBUG="false",
    ALLOWED_HOSTS="127.0.0.1,localhost",
    LOG_LEVEL="WARNING",
    MEMORYADMIN_DATA_DIR=str(DATA),
    CSRF_TRUSTED_ORIGINS=f"http://127.0.0.1:{PORT}",
    SECURE_SSL_REDIRECT="false",
    SECURE_COOKIES="false",
    # Keys of its own on LOAD_REDIS_URL's database (memoryadmin/settings.py): the purge at its start empties its
    # own queues only, and its workers take and flush none of an install's tasks or agents' buffered reads there.
    MEMORYADMIN_REDIS_KEY_PREFIX="memoryadmin-load",
    MEMORYADMIN_BROKER_KEY_PREFIX="memoryadmin-load:broker:",
)

REPLICA = os.environ.get("LOAD_REPLICA", "1") != "0"
PUBLISH_SECONDS = 30
PROBE_SECONDS = 10
LAG_SAMPLE_SECONDS = 1
PROBES = {"interactive": "vacuum_purged", "sweeps": "capacity"}  # what a purge sends; a short scheduled sweep

from locustfile import PASSWORD, TEAMS, WORDS, token_key  # noqa: E402
from queue_bench import ensure_database  # noqa: E402

BIN = ROOT / ".venv" / "bin"


def seed() -> None:
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from curation.models import AgentToken, Entry, ScopeGrant
    from curation.services.submissions import submit_batch
    from curation.services.tokens import create_agent_token
    from curation.services.entry_writes import rewrite_decay_keys

    if AgentToken.objects.filter(name="load-agent-31").exists():
        print(
            f"database seeded before: {Entry.objects.filter(status='active').count():,} active entries, "
            f"{Entry.objects.filter(status='pending').count():,} pending",
            flush=True,
        )
        return
    started = time.perf_counter()
    reviewer = Group.objects.get(name="reviewer")
    for j in range(TEAMS):
        user = User.objects.create_user(f"load-reviewer-{j}", password=PASSWORD)
        user.groups.add(reviewer)
        ScopeGrant.objects.create(user=user, prefix=f"load/team{j}")
    tokens = [
        create_agent_token(name=f"load-agent-{i}", scopes=[f"load/team{i % TEAMS}"], key=token_key(i))[0]
        for i in range(32)
    ]
    words = "ARRAY[" + ",".join(f"'{w}'" for w in WORDS) + "]"
    n = len(WORDS)
    with connection.cursor() as cursor:  # the memory agents read: generated in SQL, as api_bench does
        cursor.execute(f"""
            INSERT INTO curation_entry (kind, scope, trigger, content, conditions, boundary, recheck_when, signal,
                base_confidence, last_verified_at, hit_count, retrieval_count, utility_sum, utility_n,
                status, queue_reason, flags, fingerprint, archive_reason, source_task, created_by_label, version,
                created_at, updated_at)
            SELECT 'failure_lesson', 'load/team' || (i % {TEAMS}) || '/svc' || (i % 32),
                   'When ' || w[1 + i % {n}] || 'ing the ' || w[1 + (i / 7) % {n}] || ' (lesson ' || i || ')',
                   'Always ' || w[1 + (i / 3) % {n}] || ' the ' || w[1 + (i / 11) % {n}] || ' before you '
                     || w[1 + (i / 29) % {n}] || ' it; lesson ' || i,
                   jsonb_build_array(w[1 + (i / 5) % {n}]), '', '', 'external',
                   0.6 + (i % 35) / 100.0, now(), 0, 0, 0, 0, 'active', '', '[]',
                   md5('load' || i), '', 'load', 'load', 1, now(), now()
            FROM generate_series(0, {ENTRIES - 1}) AS i, (SELECT {words} AS w) AS v
        """)
    rewrite_decay_keys(Entry.objects.filter(decay_rate__lt=0))  # as the write path would have
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE curation_entry")
    from release_bench import release_everything

    os.environ["DATABASE_URL"] = DB_URL  # release_bench names its own database when imported
    release_everything()
    # Work waiting for the reviewers, submitted with every check as agents submit.
    for i, token in enumerate(tokens):
        submit_batch(
            token=token,
            items=[
                {
                    "scope": f"load/team{i % TEAMS}/svc{i}",
                    "kind": "failure_lesson",
                    "signal": "self",
                    "trigger": f"When {WORDS[(i + j) % n]}ing the {WORDS[(i * 3 + j) % n]} of seed {i}-{j}",
                    "content": f"Always {WORDS[(i * 5 + j) % n]} the {WORDS[(i * 7 + j) % n]} first (seed {i}-{j}).",
                    "boundary": "Not in the staging cluster.",
                }
                for j in range(20)
            ],
        )
    print(
        f"seeded in {time.perf_counter() - started:.0f} s: {TEAMS} reviewers, 32 agent tokens, {ENTRIES:,} "
        f"released entries, {Entry.objects.filter(status='pending').count():,} candidates waiting",
        flush=True,
    )


def database_figures() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        size = cursor.fetchone()[0]
        cursor.execute("SELECT relname, n_live_tup, n_dead_tup, n_tup_ins, n_tup_upd FROM pg_stat_user_tables")
        tables = {name: (live, dead, ins, upd) for name, live, dead, ins, upd in cursor.fetchall()}
    connection.close()
    return {"size": size, "tables": tables}


def start_replica() -> str | None:
    """The standby's URL for the load database, or None where it cannot be made here."""
    if not REPLICA:
        return None
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("pg_createcluster", "pg_basebackup")):
        print("no hot standby: the cluster tools need root and Debian's postgresql-common", flush=True)
        return None
    started = time.perf_counter()
    url = subprocess.run(
        ["bash", str(ROOT / "scripts/replica.sh"), "up"],
        env=dict(os.environ),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"hot standby at {url} ({time.perf_counter() - started:.0f} s to make)", flush=True)
    return url


class Background(threading.Thread):
    """During the load: a lead publishes, probes measure each queue's wait, the standby's lag is sampled."""

    def __init__(self, replica: bool):
        super().__init__(daemon=True)
        self.replica = replica
        self.stopping = threading.Event()
        self.sent: dict[str, tuple[str, float]] = {}  # probe's triggered_by -> (queue, sent at)
        self.lag_bytes: list[int] = []
        self.lag_ms: list[float] = []
        self.publishes = 0

    def run(self):
        from django.contrib.auth.models import Group, User
        from django.core.exceptions import ValidationError
        from django.db import connection

        from curation.models import ScopeGrant
        from curation.rules.access import EVERY_SCOPE
        from curation.services.releases import publish_version
        from curation.tasks import TASKS

        lead, _ = User.objects.get_or_create(username="load-lead")
        lead.groups.add(Group.objects.get(name="lead"))
        ScopeGrant.objects.get_or_create(user=lead, prefix=EVERY_SCOPE)
        for name in ("consolidation", "conflicts"):  # the night's long sweeps, on the sweeps' worker
            TASKS[name].apply_async(kwargs={"triggered_by": "load: the night's sweeps"})
        last_publish = last_probe = 0.0
        n = 0
        while not self.stopping.wait(LAG_SAMPLE_SECONDS):
            now = time.monotonic()
            if now - last_probe >= PROBE_SECONDS:
                last_probe = now
                for queue, task in PROBES.items():
                    n += 1
                    name = f"load-probe:{queue}:{n}"
                    self.sent[name] = (queue, time.time())
                    TASKS[task].apply_async(kwargs={"triggered_by": name}, queue=queue)
            if now - last_publish >= PUBLISH_SECONDS:
                last_publish = now
                try:
                    publish_version(actor=lead, summary="load: what the reviewers approved", acknowledge=True)
                    self.publishes += 1
                except ValidationError:  # nothing approved since the last one
                    pass
            if self.replica:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), "
                        "EXTRACT(epoch FROM replay_lag) * 1000 FROM pg_stat_replication"
                    )
                    for lag_bytes, lag_ms in cursor.fetchall():
                        self.lag_bytes.append(int(lag_bytes or 0))
                        self.lag_ms.append(float(lag_ms or 0))
        connection.close()

    def queue_waits(self) -> dict[str, tuple[list[float], list[float]]]:
        """Per queue: the waits of the probes that started, and how long those still queued have waited."""
        from curation.models import TaskRun

        started_at = dict(
            TaskRun.objects.filter(triggered_by__startswith="load-probe:").values_list("triggered_by", "started_at")
        )
        waits: dict[str, tuple[list[float], list[float]]] = {queue: ([], []) for queue in PROBES}
        for name, (queue, sent) in self.sent.items():
            if name in started_at:
                waits[queue][0].append(started_at[name].timestamp() - sent)
            else:
                waits[queue][1].append(time.time() - sent)
        return waits


def _spread(values: list[float], unit: str, scale: float = 1.0) -> str:
    if not values:
        return "none measured"
    ordered = sorted(v * scale for v in values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered):,.1f} {unit}, p95 {p95:,.1f} {unit}, max {ordered[-1]:,.1f} {unit} ({len(ordered)})"


def start(name: str, argv: list[str], log: Path) -> subprocess.Popen:
    handle = open(log, "w")
    return subprocess.Popen(
        argv, cwd=ROOT, env=dict(os.environ), stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_for_server() -> None:
    for _ in range(150):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz/", timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not start: see its log")


def stop(processes: dict) -> None:
    for proc in processes.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for name, proc in processes.items():
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def report(stats_csv: Path) -> int:
    rows = list(csv.DictReader(open(stats_csv)))
    print(f"\n{'endpoint':<46} {'requests':>9} {'failures':>9} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}")
    failures = 0
    for row in rows:
        name = row["Name"] if row["Name"] != "Aggregated" else "all"
        label = f"{row['Type']} {name}".strip() if row["Type"] and not name.startswith(row["Type"]) else name
        print(
            f"{label[:46]:<46} {row['Request Count']:>9} {row['Failure Count']:>9} {row['50%']:>7} {row['95%']:>7} "
            f"{row['99%']:>7}"
        )
        if row["Name"] == "Aggregated":
            failures = int(row["Failure Count"])
    return failures


def main() -> int:
    ensure_database(DB_URL)
    replica_url = start_replica()
    if replica_url:  # the web server and this process (its publishes fence the standby's reads) read there
        os.environ["DATABASE_REPLICA_URL"] = replica_url
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    seed()
    before = database_figures()
    from memoryadmin.celery import app

    app.control.purge()  # what an earlier run left queued (its own queues: MEMORYADMIN_BROKER_KEY_PREFIX)
    logs = DATA / "logs"
    logs.mkdir()
    processes = {
        "web": start(
            "web",
            [
                str(BIN / "gunicorn"),
                "-c",
                "gunicorn.conf.py",
                "--bind",
                f"127.0.0.1:{PORT}",
                "--workers",
                os.environ.get("LOAD_WEB_WORKERS", "4"),
                "--access-logfile",
                "/dev/null",
                # longer than a client keeps a connection idle (a reviewer reads for seconds):
                # else the server may close it just as the client sends on it
                "--keep-alive",
                "75",
            ],
            logs / "web.log",
        ),
        # One worker per queue, as the README runs them: the sweeps' worker also takes the interactive queue.
        **{
            f"worker-{queue}": start(
                f"worker-{queue}",
                [
                    str(BIN / "celery"),
                    "-A",
                    "memoryadmin",
                    "worker",
                    "-Q",
                    queues,
                    "--loglevel=warning",
                    "--concurrency=1",
                    "--hostname",
                    f"load-{queue}@{os.uname().nodename}",
                ],
                logs / f"worker-{queue}.log",
            )
            for queue, queues in (("interactive", "interactive"), ("sweeps", "sweeps,interactive"))
        },
        "beat": start(
            "beat",
            [
                str(BIN / "celery"),
                "-A",
                "memoryadmin",
                "beat",
                "--loglevel=warning",
                "--schedule",
                str(DATA / "celerybeat-schedule"),
            ],
            logs / "beat.log",
        ),
    }
    failures = 1
    try:
        wait_for_server()
        print(
            f"load: {MINUTES:g} minutes, 8 reviewers and 32 agents against http://127.0.0.1:{PORT} (logs in {logs})",
            flush=True,
        )
        started = time.perf_counter()
        background = Background(replica=bool(replica_url))
        background.start()
        subprocess.run(
            [
                str(BIN / "locust"),
                "-f",
                str(ROOT / "benchmarks/load/locustfile.py"),
                "--headless",
                "--host",
                f"http://127.0.0.1:{PORT}",
                "--users",
                "40",
                "--spawn-rate",
                "10",
                "--run-time",
                f"{int(MINUTES * 60)}s",
                "--stop-timeout",
                "10",
                "--csv",
                str(DATA / "load"),
                "--only-summary",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            check=False,
            env={**os.environ, "LOAD_READS_FILE": str(DATA / "reads.json")},
            stdout=open(logs / "locust.log", "w"),
            stderr=subprocess.STDOUT,
        )
        elapsed = time.perf_counter() - started
        failures = report(DATA / "load_stats.csv")
        print(f"\n{elapsed / 60:.1f} minutes; failures: {failures} (must be 0)")
        background.stopping.set()
        background.join()
        time.sleep(PROBE_SECONDS)  # the last probes start
        print(f"\nqueue wait, sent to started ({background.publishes} publishes by a lead meanwhile):")
        for queue, (waits, queued) in background.queue_waits().items():
            still = f"; {len(queued)} still queued, the oldest for {max(queued):,.0f} s" if queued else ""
            print(f"  {queue:<12} {_spread(waits, 's')}{still}")
        reads = json.loads((DATA / "reads.json").read_text()) if (DATA / "reads.json").exists() else {}
        total = sum(reads.values()) or 1
        print(
            "retrievals answered: "
            + ", ".join(f"{server} {count:,} ({count / total:.1%})" for server, count in sorted(reads.items()))
        )
        if replica_url:
            print(f"standby replay lag: {_spread(background.lag_bytes, 'KB', 1 / 1024)}")
            print(f"                    {_spread(background.lag_ms, 'ms')}")
    finally:
        stop(processes)
        if replica_url:
            subprocess.run(["bash", str(ROOT / "scripts/replica.sh"), "down"], check=False)
    after = database_figures()
    print(
        f"database size: {before['size'] / 2**20:,.1f} MB -> {after['size'] / 2**20:,.1f} MB "
        f"(+{(after['size'] - before['size']) / 2**20:,.1f} MB)"
    )
    dead_before = sum(t[1] for t in before["tables"].values())
    dead_after = sum(t[1] for t in after["tables"].values())
    print(f"dead tuples (pg_stat_user_tables): {dead_before:,} -> {dead_after:,}; the tables that changed most:")

    def written(item):  # rows inserted and updated during the run
        name, (_, _, ins, upd) = item
        b = before["tables"].get(name, (0, 0, 0, 0))
        return ins - b[2] + upd - b[3]

    for name, (live, dead, ins, upd) in sorted(after["tables"].items(), key=written, reverse=True)[:8]:
        b = before["tables"].get(name, (0, 0, 0, 0))
        print(
            f"  {name:<32} live {live:>9,}  dead {b[1]:>7,} -> {dead:>7,}  "
            f"inserted +{ins - b[2]:,}  updated +{upd - b[3]:,}"
        )
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
