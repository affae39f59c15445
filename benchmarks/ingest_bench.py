"""Ingest: candidates per second through the batch submission service, with every check.

    .venv/bin/python benchmarks/ingest_bench.py [--db sqlite|postgres] [--corpus varied|template]
                                                 [--existing 20000] [--total 10000] [--batch 500] [--profile 25]
                                                 [--clients 2]
                                                 (make bench-ingest: both corpora on both databases)

Calls `services.submissions.submit_batch` in process (what POST /api/v1/candidates/batch calls after the
token check) on batches of 500 candidates: redaction, exact duplicates (1 in 10 repeats an existing
lesson), near duplicates (1 in 10 is a planted paraphrase of an existing lesson), conflicts, the admission
policy (it approves the candidates of a fifth of the scopes) and the inserts with their Events. The database
holds `--existing` active entries first, in the same 200 scopes, so near-duplicate and conflict lookups
find partners. Beside the rate it prints where a batch's time goes, check by check: wall time and this
process's CPU (the rest of the wall time is the database's work), the load average, and the same number of
bare rows inserted by one statement (the database's floor, in the same run), and the CPU a candidate costs:
this process's and, on PostgreSQL, its database backend's (read from /proc: the database runs on this
machine), with the rate two cores could take at that cost. `--profile N` prints the N most expensive
functions of one batch (cProfile) and its slowest statements. `--clients N` then submits as many candidates
again from N processes at once (as N web workers would: a deployment runs about one per core), and prints
that rate and their CPU a candidate; the rate that counts is then the higher of the two.

The corpus (benchmarks/ingest_corpus.py). `varied`, the default, is lessons as many agents on many systems
write them: ten domains with their own tools, objects, actions, symptoms and fixes, said in several
phrasings, drawn with a fixed seed, so two lessons share few words unless they are about the same thing. A
near-duplicate lookup then reads what an index should: the few entries that share a band key, most of them
the lesson's own paraphrases. `template` is the corpus this bench used first: one sentence template with
four words from one list of 48, every pair ~0.3 alike in words, so each lookup ranks a hundred genuine
candidates. It is kept, and `make bench-ingest` prints its figures too, so that a rate on `varied` can be
set beside the one the same code gets on texts made to be alike: the difference between them is the
corpus's, not the code's.

Recall is printed two ways: against today's exact ranking (the measure over every overlapping entry, no
index: trigrams on PostgreSQL, word Jaccard on SQLite) for the newest 500 new entries and the planted
ones, and against the planted truth: of the paraphrases planted, the share ingest linked (the SimilarEntry
rows it wrote) to the lesson they paraphrase. The exit status is 0 when the rate reaches 2,000/s, nothing
was refused and both recalls reach 95 %.

SQLite runs in a temporary folder; PostgreSQL uses BENCH_DATABASE_URL (default memoryadmin_ingest_bench),
emptied at the start.
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

from ingest_corpus import CORPORA  # noqa: E402

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


def database_cpu() -> float | None:
    """The CPU seconds this connection's PostgreSQL backend has used (its /proc entry: the database runs on this
    machine), or None where that cannot be read (SQLite runs in this process: its CPU is the process's)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    connection.ensure_connection()
    try:
        with open(f"/proc/{connection.connection.info.backend_pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime and stime, in ticks


def database_cpu_since(started: float | None) -> float | None:
    """The CPU seconds the backend used since database_cpu() read `started` (None: it could not be read)."""
    return None if started is None else database_cpu() - started


def cpu_a_candidate(done: int, process: float, database: float | None) -> str:
    """The CPU a candidate costs, the process's and its database backend's, and what two cores could take at
    that cost: the throughput a machine's cores allow, whatever else runs on it."""
    if database is None:
        return f"CPU a candidate {process / done * 1000:.2f} ms"
    total = (process + database) / done
    return (
        f"CPU a candidate {total * 1000:.2f} ms (this process {process / done * 1000:.2f}, PostgreSQL "
        f"{database / done * 1000:.2f}): two cores' ceiling {2 / total:,.0f}/s"
    )


def fill(existing: int, scopes: int, lesson) -> None:
    """Active entries written by the service as an admission policy approving every scope has it write them (so
    the rows, band keys included, are what ingest makes of an approved lesson): the bench measures the next
    batches, not this."""
    from django.conf import settings
    from django.db import connection

    from curation.models import AgentToken, Entry
    from curation.services.submissions import submit_batch

    token = AgentToken.objects.get(name="bench")
    rng = random.Random(3)
    started = time.perf_counter()
    orgs = {scope_name(j).split("/")[0] for j in range(scopes)}
    settings.CURATION_ADMISSION = {org: {"name": "bench-fill", "mode": "all"} for org in orgs}
    for low in range(0, existing, 500):
        items = [
            lesson(rng, "seed", i, scope_name(rng.randrange(scopes))) for i in range(low, min(existing, low + 500))
        ]
        refused = [r for r in submit_batch(items=items, token=token) if not r["ok"]]
        if refused:  # a corpus the service refuses measures nothing
            raise SystemExit(f"the corpus's lessons are refused: {refused[0]}")
    settings.CURATION_ADMISSION = {}
    if waiting := Entry.objects.exclude(status="active").count():
        raise SystemExit(f"{waiting} of the existing lessons were not approved at ingest: no partners to find")
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
    parser.add_argument(
        "--clients",
        type=int,
        default=0,
        help="then as many processes submitting at once, as the web server's workers do",
    )
    parser.add_argument(
        "--corpus", choices=sorted(CORPORA), default="varied", help="the lessons' texts (ingest_corpus)"
    )
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
            cursor.execute(
                "TRUNCATE curation_entry, curation_entryband, curation_agenttoken, curation_event RESTART IDENTITY CASCADE"
            )
    create_agent_token(name="bench", scopes=sorted({scope_name(j).split("/")[0] for j in range(args.scopes)}))
    token = AgentToken.objects.get(name="bench")
    lesson, paraphrase = CORPORA[args.corpus]
    print(
        f"ingest on {connection.vendor}, corpus {args.corpus}: {args.total:,} candidates in batches of {args.batch}; "
        f"load average {os.getloadavg()[0]:.2f} (2 cores, shared)",
        flush=True,
    )
    fill(args.existing, args.scopes, lesson)

    run = format(int(time.time()), "x")  # hex: a long digit run would be redacted as a phone number
    known_lessons = list(Entry.objects.filter(status="active").values("id", "scope", "trigger", "content")[:1000])
    planted: dict[str, int] = {}  # a paraphrase's source task -> the entry it must be linked to
    batches = make_batches(random.Random(11), run, args, lesson, paraphrase, known_lessons, planted)

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
    database_started = database_cpu()
    started, cpu_started = time.perf_counter(), time.process_time()
    done, failed = submit_all(batches, token)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    database = database_cpu_since(database_started)
    rate = done / seconds if seconds else 0
    print(
        f"submit_batch on {connection.vendor}: {done:,} candidates in {seconds:.1f} s = {rate:.0f}/s "
        f"(target {TARGET:,}), {failed} refused; {cpu_a_candidate(done, cpu, database)}"
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
    raw_insert_floor(args.batch, seconds * per / 1000)
    if args.clients:
        more = make_batches(random.Random(13), f"{run}c", args, lesson, paraphrase, known_lessons, {})
        rate = max(rate, concurrent_rate(more, args.clients, token.pk))
    new = Entry.objects.filter(source_task__startswith=f"bench-{run}-")
    sample = list(new.order_by("-id")[:500]) + list(new.filter(source_task__in=list(planted)).order_by("-id")[:500])
    recall, planted_recall = near_duplicate_recall(list({e.pk: e for e in sample}.values()), planted)
    good = rate >= TARGET and not failed and recall >= RECALL_TARGET and planted_recall >= RECALL_TARGET
    return 0 if good else 1


def make_batches(rng, run: str, args, lesson, paraphrase, known_lessons: list, planted: dict) -> list[list[dict]]:
    """`args.total` candidates in batches of `args.batch`: fresh lessons, with 1 in 10 an exact repeat of a known
    lesson (evidence for it, no new entry) and 1 in 10 a paraphrase of one (a near duplicate to find: noted
    in `planted`)."""
    repeats = [{k: v for k, v in known.items() if k != "id"} for known in known_lessons]
    batches = []
    for b in range(args.total // args.batch):
        items = []
        for i in range(args.batch):
            n = b * args.batch + i
            fresh = lesson(rng, run, n, scope_name(rng.randrange(args.scopes)))
            if i % 10 == 9 and repeats:
                items.append({**fresh, **rng.choice(repeats)})
            elif i % 10 == 4 and repeats:
                known = rng.choice(known_lessons)
                planted[fresh["source_task"]] = known["id"]
                items.append({**fresh, **paraphrase(rng, known)})
            else:
                items.append(fresh)
        batches.append(items)
    return batches


def concurrent_rate(batches: list[list[dict]], clients: int, token_id: int) -> float:
    """The batches submitted by `clients` processes at once (each its own connection, as gunicorn's workers),
    the rate over the wall time from the common start to the last batch, and the CPU the submitting processes
    used: what this machine ingests when more than one request arrives."""
    import multiprocessing

    from django.db import connection

    connection.close()  # each child opens its own
    context = multiprocessing.get_context("fork")
    start, results = context.Event(), context.Queue()
    children = [
        context.Process(target=_submit_share, args=(batches[k::clients], token_id, start, results))
        for k in range(clients)
    ]
    for child in children:
        child.start()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    start.set()
    reports = [results.get() for _ in children]
    seconds = time.perf_counter() - started
    for child in children:
        child.join()
    done = sum(ok for ok, *_ in reports)
    refused = sum(bad for _, bad, *_ in reports)
    cpu = sum(used for *_, used, _ in reports)
    database = None if None in (spent for *_, spent in reports) else sum(spent for *_, spent in reports)
    print(
        f"  {clients} clients at once: {done:,} candidates in {seconds:.1f} s = {done / seconds:.0f}/s "
        f"(target {TARGET:,}), {refused} refused; {cpu_a_candidate(done, cpu, database)}; "
        f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    return done / seconds


def submit_all(batches, token) -> tuple[int, int]:
    """Each batch through submit_batch in turn: (the candidates taken, those refused)."""
    from curation.services.submissions import submit_batch

    ok = refused = 0
    for items in batches:
        answers = submit_batch(items=items, token=token)
        ok += sum(a["ok"] for a in answers)
        refused += sum(not a["ok"] for a in answers)
    return ok, refused


def _submit_share(batches, token_id, start, results) -> None:
    from curation.models import AgentToken

    token = AgentToken.objects.get(pk=token_id)
    database_started = database_cpu()
    start.wait()
    cpu_started = time.process_time()
    done = submit_all(batches, token)
    database = database_cpu_since(database_started)
    results.put((*done, time.process_time() - cpu_started, database))


def raw_insert_floor(batch: int, batch_seconds: float) -> None:
    """The database's floor for the same rows, measured in the same run: `batch` rows of an entry's size
    (scope, trigger, content) inserted by one bare statement into a temporary table; the batch's time as a
    multiple of it."""
    from django.db import connection, transaction

    rows = [
        (scope_name(n % 200), f"trigger {n} of the floor", f"content {n} of the raw insert floor") for n in range(batch)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE ingest_floor (scope varchar(255), trigger text, content text)")
        started = time.perf_counter()
        cursor.executemany("INSERT INTO ingest_floor (scope, trigger, content) VALUES (%s, %s, %s)", rows)
        floor = time.perf_counter() - started
        cursor.execute("DROP TABLE ingest_floor")
    print(
        f"  the raw floor: {batch} bare rows in one executemany {floor * 1000:.1f} ms; a batch costs "
        f"{batch_seconds / floor:.0f}x that"
    )


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


def near_duplicate_recall(sample: list, planted: dict[str, int]) -> tuple[float, float]:
    """Recall of the near duplicates, two ways. Against today's exact ranking: of the near duplicates the
    exact measure finds for the sample over every overlapping entry (up to 5 each, as a submission links),
    the share the band-key lookup finds too. Against the planted truth: of the paraphrases the bench planted,
    the share whose original ingest linked them to (the SimilarEntry rows it wrote), beside the share the
    exact ranking would have linked (the measure's own recall, the most an index under it can reach)."""
    from curation.models import SimilarEntry
    from curation.selectors import similar_active_entries_many

    started = time.perf_counter()
    found = similar_active_entries_many(sample, limit=5)
    seconds = time.perf_counter() - started
    wanted = hit = exact_planted = sampled_planted = 0
    for entry in sample:
        exact = exact_ranking(entry, 5)
        wanted += len(exact)
        hit += len(set(exact) & {pk for pk, _ in found[entry.pk]})
        if entry.source_task in planted:
            sampled_planted += 1
            exact_planted += planted[entry.source_task] in exact
    recall = hit / wanted if wanted else 1.0
    print(
        f"  near duplicates of {len(sample)} new entries: the band-key lookup finds {hit} of the {wanted} the exact "
        f"ranking over every overlapping entry finds: recall {recall:.1%} (target {RECALL_TARGET:.0%}); "
        f"the lookup {seconds * 1000:.0f} ms for all {len(sample)}"
    )
    ids = dict(entry_ids_by_task(list(planted)))
    links: dict[int, set[int]] = {}
    for candidate, similar in SimilarEntry.objects.filter(candidate_id__in=list(ids.values())).values_list(
        "candidate_id", "similar_id"
    ):
        links.setdefault(candidate, set()).add(similar)
    linked = sum(planted[task] in links.get(pk, ()) for task, pk in ids.items())
    planted_recall = linked / len(ids) if ids else 1.0
    print(
        f"  planted paraphrases: ingest linked {linked} of {len(ids)} to their original: recall {planted_recall:.1%} "
        f"(target {RECALL_TARGET:.0%}); the exact ranking would link {exact_planted} of the {sampled_planted} sampled"
    )
    return recall, planted_recall


def entry_ids_by_task(tasks: list[str]):
    """(source task, entry id) of the entries the bench's planted paraphrases became."""
    from curation.models import Entry

    return Entry.objects.filter(source_task__in=tasks).values_list("source_task", "id")


if __name__ == "__main__":
    sys.exit(main())
