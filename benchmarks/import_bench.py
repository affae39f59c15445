"""Import: 10,000 lessons of a JSON Lines file through `import_memory`, beside the same lessons through the
plain agent-API submission path (`submit_batch`, what POST /api/v1/candidates/batch calls after the token
check), both in batches of 500 with every check.

    .venv/bin/python benchmarks/import_bench.py [--db sqlite|postgres] [--total 10000] [--batch 500]
                                                                                   (make bench-import)

Prints the import's lessons/s and this process's CPU per lesson (reading the file, keys, ImportRecords and
the ingest), the API path's CPU per lesson on the same lessons in another scope, and a re-import of the
same file (everything skipped). The API path runs first, so the import meets the larger table.

SQLite runs in a temporary folder; PostgreSQL uses BENCH_DATABASE_URL (default memoryadmin_import_bench),
emptied at the start.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

WORDS = (
    "deploy migrate config container cache worker queue ledger invoice webhook signing key rotate "
    "restart drain lock retry timeout schema index backup restore release branch rebase merge test "
    "fixture mock session cookie header proxy nginx kubectl helm terraform docker image "
    "build lint format upgrade pin version rollback canary metrics alert log trace"
).split()


def configure(db: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.update(DEBUG="false", LOG_LEVEL="WARNING")
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["MEMORYADMIN_DATA_DIR"] = tempfile.mkdtemp(prefix="import-bench-")
    if db == "sqlite":
        os.environ.pop("DATABASE_URL", None)
    else:
        from common import ensure_database

        url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_import_bench")
        ensure_database(url)
        os.environ["DATABASE_URL"] = url


def record(rng: random.Random, run: str, i: int) -> dict:
    """One line of an agent's JSONL memory: an id, a scope below the import's, a timestamp."""
    w = rng.sample(WORDS, 4)
    return {
        "id": f"{run}-{i}",
        "scope": f"svc{i % 50}",
        "kind": "failure_lesson",
        "trigger": f"When {w[0]}ing the part{rng.randrange(500)} {w[1]} (item {run}-{i})",
        "content": f"Never {w[2]} the unit{rng.randrange(500)} before the {w[3]} is drained; seen in {run}-{i}.",
        "created_at": "2025-11-02T10:00:00+00:00",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()

    configure(args.db)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from curation.management.commands.import_memory import progress_line
    from curation.models import AgentToken, ImportRecord
    from curation.rules.memory_import import read
    from curation.services.imports import import_memory, read_source
    from curation.services.submissions import submit_batch
    from curation.services.tokens import create_agent_token

    call_command("migrate", verbosity=0)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "TRUNCATE curation_entry, curation_entryband, curation_agenttoken, curation_event, curation_importrecord "
                "RESTART IDENTITY CASCADE"
            )
    create_agent_token(name="bench", scopes=["bench-api"])
    token = AgentToken.objects.get(name="bench")
    run = format(int(time.time()), "x")  # hex: a long digit run would be redacted as a phone number
    rng = random.Random(7)
    folder = Path(tempfile.mkdtemp(prefix="import-bench-source-"))
    source = folder / "lessons.jsonl"
    source.write_text("".join(json.dumps(record(rng, run, i)) + "\n" for i in range(args.total)), encoding="utf-8")
    print(
        f"import on {connection.vendor}: {args.total:,} lessons of {source.name}, batches of {args.batch}", flush=True
    )

    # The plain agent-API path on the same lessons, in its own scope.
    reading = read("jsonl", read_source(source))
    items = [lesson.candidate(f"bench-api/{lesson.scope}") for lesson in reading.lessons]
    started, cpu_started = time.perf_counter(), time.process_time()
    landed = 0
    for low in range(0, len(items), args.batch):
        landed += sum(r["ok"] for r in submit_batch(items=items[low : low + args.batch], token=token))
    api_wall, api_cpu = time.perf_counter() - started, time.process_time() - cpu_started

    # The import: reading the file included.
    shown = max(1, args.total // args.batch // 5)
    started, cpu_started = time.perf_counter(), time.process_time()
    reading = read("jsonl", read_source(source))
    report = import_memory(
        reading,
        prefix="bench-import",
        label="import:jsonl",
        batch_size=args.batch,
        progress=lambda r: print("  " + progress_line(r), flush=True) if r.batches % shown == 0 else None,
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    added = report.by_outcome()["added"]

    started, cpu_started = time.perf_counter(), time.process_time()
    again = import_memory(read("jsonl", read_source(source)), prefix="bench-import", label="import:jsonl")
    again_wall, again_cpu = time.perf_counter() - started, time.process_time() - cpu_started

    print(
        f"import_memory on {connection.vendor}: {added:,} lessons added in {wall:.1f} s = {added / wall:.0f} lessons/s; "
        f"this process's CPU {cpu * 1000 / args.total:.2f} ms a lesson"
    )
    print(
        f"submit_batch (agent API) on {connection.vendor}: {landed:,} lessons in {api_wall:.1f} s = "
        f"{landed / api_wall:.0f}/s; this process's CPU {api_cpu * 1000 / args.total:.2f} ms a lesson"
    )
    print(
        f"re-import of the same file: {again.by_outcome()['skipped']:,} skipped in {again_wall:.1f} s; "
        f"CPU {again_cpu * 1000 / args.total:.2f} ms a lesson; ImportRecords {ImportRecord.objects.count():,}"
    )
    ok = added == args.total == landed and again.by_outcome()["skipped"] == args.total
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
