"""`make bench-replica`: retrieval on a real hot standby, in process, on the database `make load` seeds.

    .venv/bin/python benchmarks/replica_bench.py [--reads 200]

Starts the standby (scripts/replica.sh), then measures: a retrieval answered by the standby against one
answered by the primary; after a publish, how long reads stay on the primary (the standby replaying the
publish); with the standby stopped, the first read's time and server and the next ones'; and once it is
started again, how long until reads are back on it. Drops the standby at the end.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "load"))
SCRIPT = ROOT / "scripts" / "replica.sh"

import run as load  # noqa: E402  (sets the load database, Redis and settings in the environment)


def replica(*args) -> str:
    return subprocess.run(["bash", str(SCRIPT), *args], check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=200)
    reads = parser.parse_args().reads
    load.ensure_database(load.DB_URL)
    os.environ["MEMORYADMIN_API_RATE_LIMIT"] = "0"  # one token reads here as fast as it can
    os.environ["DATABASE_REPLICA_URL"] = replica("up")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import override_settings

    from curation.infra import db_router
    from curation.models import Entry, ScopeGrant, Status
    from curation.rules.access import EVERY_SCOPE
    from curation.services.releases import publish_version

    call_command("migrate", verbosity=0)
    load.seed()
    lead, _ = User.objects.get_or_create(username="load-lead")
    lead.groups.add(Group.objects.get(name="lead"))
    ScopeGrant.objects.get_or_create(user=lead, prefix=EVERY_SCOPE)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {load.token_key(0)}", HTTP_HOST="127.0.0.1")

    def read() -> tuple[str, float]:
        started = time.perf_counter()
        answer = client.post(
            "/api/v1/memory/search", {"scope": "load/team0/svc0", "q": "deploy the cache", "k": 5}, "application/json"
        )
        assert answer.status_code == 200, answer.content
        return answer["Memory-Read-From"], (time.perf_counter() - started) * 1000

    def until_replica(limit: float = 60.0) -> tuple[float, int]:
        started, n = time.perf_counter(), 0
        while read()[0] != "replica":
            n += 1
            if time.perf_counter() - started > limit:
                raise SystemExit(f"reads did not come back to the standby within {limit:.0f} s")
        return (time.perf_counter() - started) * 1000, n

    try:
        until_replica()
        on_replica = [read() for _ in range(reads)]
        print(
            f"retrieval, {reads} reads: "
            + ", ".join(
                f"{server} {len(ms)} reads, p50 {statistics.median(ms):.1f} ms"
                for server in ("replica", "primary")
                if (ms := [t for s, t in on_replica if s == server])
            )
        )
        with override_settings(RETRIEVAL_ON_REPLICA=False):
            primary = [read()[1] for _ in range(reads)]
        print(f"the same reads on the primary: p50 {statistics.median(primary):.1f} ms")

        windows = []
        for i in range(5):
            entry = Entry.objects.filter(status=Status.ACTIVE, scope__startswith="load/team0/").order_by("?").first()
            Entry.objects.filter(pk=entry.pk).update(base_confidence=0.5 + i / 100)  # a data fix, published below
            publish_version(actor=lead, summary="bench: a publish", also_entry_ids=[entry.pk], acknowledge=True)
            first = read()[0]
            window, on_primary = until_replica()
            windows.append((first, window, on_primary))
        behind = [w for w in windows if w[0] == "primary"]
        print(
            f"right after a publish ({len(windows)} publishes): the first read on the standby after "
            f"{len(windows) - len(behind)}; after the others it was behind and reads came back to it "
            + (", ".join(f"{w[1]:.0f} ms later ({w[2] + 1} reads on the primary)" for w in behind) or "-")
        )

        replica("stop")
        first, first_ms = read()
        second, second_ms = read()
        print(f"standby stopped: first read {first} in {first_ms:.1f} ms, the next {second} in {second_ms:.1f} ms")
        replica("start")
        started = time.perf_counter()
        until_replica(limit=db_router.RETRY_SECONDS + 60)
        print(
            f"standby started again: reads back on it {(time.perf_counter() - started) * 1000:,.0f} ms after it "
            f"answered (RETRY_SECONDS = {db_router.RETRY_SECONDS:g})"
        )
    finally:
        replica("down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
