"""Ingest: candidates per second through the batch submission service, with every check.

    .venv/bin/python benchmarks/ingest_bench.py [--db sqlite|postgres] [--existing 20000] [--total 10000]
                                                 [--batch 500] [--profile 25]       (make bench-ingest)

Calls `services.submissions.submit_batch` in process (what POST /api/v1/candidates/batch calls after the
token check) on batches of 500 candidates: redaction, exact duplicates (1 in 10 repeats an existing
lesson), near duplicates, conflicts and the inserts with their Events. The database holds `--existing`
active entries first, in the same scopes, so near-duplicate and conflict lookups find partners.
Beside the rate it prints where a batch's time goes, check by check: wall time and this process's CPU (the
rest of the wall time is the database's work). `--profile N` prints the N most expensive functions of one
batch (cProfile).

SQLite runs in a temporary folder; PostgreSQL uses BENCH_DATABASE_URL (default memoryadmin_ingest_bench),
emptied at the start. Target: 2,000 candidates/s.
"""

import argparse
import cProfile
import os
import pstats
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
TARGET = 2000
RECALL_TARGET = 0.95


def configure(db: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.update(DEBUG="false", LOG_LEVEL="WARNING")
    os.environ.pop("CELERY_BROKER_URL", None)
    if db == "sqlite":
        os.environ.pop("DATABASE_URL", None)
        os.environ["MEMORYADMIN_DATA_DIR"] = tempfile.mkdtemp(prefix="ingest-bench-")
    else:
        from queue_bench import ensure_database

        url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_ingest_bench")
        ensure_database(url)
        os.environ["DATABASE_URL"] = url
        os.environ["MEMORYADMIN_DATA_DIR"] = tempfile.mkdtemp(prefix="ingest-bench-")


def scope_name(j: int) -> str:
    return f"org{j // 10}/svc{j}"


def lesson(rng: random.Random, run: str, i: int, scopes: int) -> dict:
    w = rng.sample(WORDS, 4)
    part, unit = rng.randrange(500), rng.randrange(500)
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


def paraphrase(rng: random.Random, known: dict) -> dict:
    """The same lesson in other words: a word of the trigger changed, the content reworded."""
    trigger = known["trigger"].replace("When ", rng.choice(("Whenever ", "While ", "If ")), 1)
    content = known["content"].replace("Never ", rng.choice(("Do not ", "Don't ", "Never ever ")), 1)
    return {"scope": known["scope"], "trigger": trigger, "content": content}


# The steps of submit_batch, by the name it calls them under, and what each is for. A step the code does
# not have is skipped (the admission policy was a write after the insert; it is decided inside it now).
PHASES = {
    "_prepare_for": "validation and redaction",
    "_holding_by_index": "forgotten lessons (tombstones)",
    "_live_by_fingerprint": "exact duplicates",
    "insert_entries": "entries and their Events",
    "insert_decision": "  of which the admission policy",
    "similar_active_entries_many": "near duplicates",
    "detect_conflicts_many": "conflicts",
    "admit_by_policy": "admission (a write after the insert)",
}
NESTED = {"insert_decision"}  # inside another step: not added again to the total


def timing_phases(module, spent: dict) -> None:
    """Wrap each of PHASES in `module` (services.submissions) to add its wall and CPU seconds to `spent`."""
    for name in PHASES:
        step = getattr(module, name, None)
        if step is None:
            continue

        def timed_step(*args, _step=step, _name=name, **kwargs):
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                return _step(*args, **kwargs)
            finally:
                wall, cpu = spent.get(_name, (0.0, 0.0))
                spent[_name] = (wall + time.perf_counter() - started, cpu + time.process_time() - cpu_started)

        setattr(module, name, timed_step)


def fill(existing: int, scopes: int) -> None:
    """Active entries written by the service (so the rows are what ingest makes), then activated in one
    UPDATE: the bench measures the next batches, not this."""
    from django.db import connection

    from curation.models import AgentToken, Entry
    from curation.services.submissions import submit_batch

    token = AgentToken.objects.get(name="bench")
    rng = random.Random(3)
    started = time.perf_counter()
    for low in range(0, existing, 500):
        submit_batch(items=[lesson(rng, "seed", i, scopes) for i in range(low, min(existing, low + 500))], token=token)
    # bench set-up only: the rows become the active set partners are looked up in
    Entry.objects.filter(status="pending").update(status="active", queued_at=None)
    with connection.cursor() as cursor:  # the planner's statistics, as autovacuum (PostgreSQL) keeps them
        cursor.execute("ANALYZE")
    print(f"  {existing:,} existing active entries in {scopes} scopes ({time.perf_counter() - started:.0f} s)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--existing", type=int, default=20_000)
    parser.add_argument("--scopes", type=int, default=200)
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions of one batch")
    args = parser.parse_args()

    configure(args.db)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from curation.models import AgentToken, Entry
    from curation.services.submissions import submit_batch
    from curation.services.tokens import create_agent_token

    call_command("migrate", verbosity=0)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE curation_entry, curation_agenttoken, curation_event RESTART IDENTITY CASCADE")
    create_agent_token(name="bench", scopes=sorted({scope_name(j).split("/")[0] for j in range(args.scopes)}))
    token = AgentToken.objects.get(name="bench")
    print(f"ingest on {connection.vendor}: {args.total:,} candidates in batches of {args.batch}", flush=True)
    fill(args.existing, args.scopes)

    rng = random.Random(11)
    run = format(int(time.time()), "x")  # hex: a long digit run would be redacted as a phone number
    repeats = list(Entry.objects.filter(status="active").values("scope", "trigger", "content")[:1000])
    batches = []
    for b in range(args.total // args.batch):
        items = []
        for i in range(args.batch):
            if i % 10 == 9 and repeats:  # an exact repeat of a known lesson: evidence for it, no new entry
                known = rng.choice(repeats)
                items.append({**lesson(rng, run, i, args.scopes), **known})
            elif i % 10 == 4 and repeats:  # a paraphrase of a known lesson: a near duplicate to find
                items.append({**lesson(rng, run, i, args.scopes), **paraphrase(rng, rng.choice(repeats))})
            else:
                items.append(lesson(rng, run, b * args.batch + i, args.scopes))
        batches.append(items)

    if args.profile:
        statements = []

        def timed(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                statements.append((time.perf_counter() - started, " ".join(sql.split())[:110]))

        profiler = cProfile.Profile()
        with connection.execute_wrapper(timed):
            profiler.enable()
            submit_batch(items=batches.pop(), token=token)
            profiler.disable()
        print(f"{len(statements)} statements, {sum(s for s, _ in statements) * 1000:.0f} ms in the database:")
        for seconds, sql in sorted(statements, reverse=True)[:12]:
            print(f"  {seconds * 1000:7.1f} ms  {sql}")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)

    from curation.services import submissions

    # Every check on: an admission policy approves the candidates of a fifth of the scopes at ingest.
    settings.CURATION_ADMISSION = {f"org{k}": {"name": "bench-all", "mode": "all"} for k in range(0, 20, 5)}
    spent: dict[str, tuple[float, float]] = {}
    timing_phases(submissions, spent)
    failed = done = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    for items in batches:
        results = submit_batch(items=items, token=token)
        done += sum(r["ok"] for r in results)
        failed += sum(not r["ok"] for r in results)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    rate = done / seconds if seconds else 0
    print(
        f"submit_batch on {connection.vendor}: {done:,} candidates in {seconds:.1f} s = {rate:.0f}/s "
        f"(target {TARGET:,}), {failed} refused; this process's CPU {cpu:.1f} s = {done / cpu if cpu else 0:.0f}/s"
    )
    per = 1000 / len(batches)
    print(f"  a batch of {args.batch}: {seconds * per:.0f} ms, of which this process's CPU {cpu * per:.0f} ms")
    for name, purpose in PHASES.items():
        if name not in spent:
            continue
        wall, used = spent[name]
        print(f"    {purpose:<38} {wall * per:6.0f} ms  (CPU here {used * per:4.0f} ms)")
    rest_wall = seconds - sum(wall for name, (wall, _) in spent.items() if name not in NESTED)
    rest_cpu = cpu - sum(used for name, (_, used) in spent.items() if name not in NESTED)
    print(
        f"    {'the rest (evidence, links, held ones)':<38} {rest_wall * per:6.0f} ms  (CPU here {rest_cpu * per:4.0f} ms)"
    )
    recall = near_duplicate_recall(Entry.objects.filter(source_task__startswith=f"bench-{run}-").order_by("-id")[:500])
    return 0 if rate >= TARGET and not failed and recall >= RECALL_TARGET else 1


def exact_ranking(entry, limit: int) -> list[int]:
    """The near duplicates the exact measure finds among every active entry of the overlapping scopes (no
    index): trigram similarity on PostgreSQL, word Jaccard elsewhere, at the threshold, the `limit` best."""
    from django.db import connection
    from django.db.models import F, FloatField, Func, TextField, Value
    from django.db.models.functions import Concat

    from curation.models import Entry
    from curation.rules import access, config
    from curation.rules.similarity import similarity

    threshold = config.SIMILAR_THRESHOLD.value
    text = f"{entry.trigger} {entry.content}"
    rows = Entry.objects.filter(
        access.overlapping_scopes_q(entry.scope, bytewise=connection.vendor == "sqlite"), status="active"
    ).exclude(pk=entry.pk)
    if connection.vendor == "postgresql":
        measure = Func(
            Concat(F("trigger"), Value(" "), F("content"), output_field=TextField()),
            Value(text),
            function="similarity",
            output_field=FloatField(),
        )
        scored = rows.annotate(score=measure).filter(score__gte=threshold).values_list("pk", "score")
        scored = [(pk, round(score, 3)) for pk, score in scored]
    else:
        scored = [
            (pk, round(similarity(text, f"{t} {c}"), 3)) for pk, t, c in rows.values_list("pk", "trigger", "content")
        ]
        scored = [(pk, score) for pk, score in scored if score >= threshold]
    return [pk for pk, _ in sorted(scored, key=lambda pair: (-pair[1], -pair[0]))[:limit]]


def near_duplicate_recall(sample) -> float:
    """Of the near duplicates the exact ranking finds for the sample (up to 5 each, as a submission links),
    the share the band-key lookup finds too; printed with the entries each lookup scores."""
    from curation.selectors import similar_active_entries_many

    sample = list(sample)
    started = time.perf_counter()
    found = similar_active_entries_many(sample, limit=5)
    seconds = time.perf_counter() - started
    wanted = hit = 0
    for entry in sample:
        exact = exact_ranking(entry, 5)
        wanted += len(exact)
        hit += len(set(exact) & {pk for pk, _ in found[entry.pk]})
    recall = hit / wanted if wanted else 1.0
    print(
        f"  near duplicates of {len(sample)} new entries: the band-key lookup finds {hit} of the {wanted} the exact "
        f"ranking over every overlapping entry finds: recall {recall:.1%} (target {RECALL_TARGET:.0%}); "
        f"the lookup {seconds * 1000:.0f} ms for all {len(sample)}"
    )
    return recall


if __name__ == "__main__":
    sys.exit(main())
