"""The learning dashboard at scale: does /learning/ answer in under 200 ms with 1,000,000 retrievals?

    .venv/bin/python benchmarks/learning_bench.py [--retrievals N] [--reps N]      (make bench-learning)

Uses a PostgreSQL database of its own (DATABASE_URL, default memoryadmin_learning_bench), made and filled
on the first run and kept for the next: a rerun only tops it up. Retrievals, their items and their
feedback are spread over the last 90 days, 200 scopes and 2,000 lessons, a quarter of the tasks in the
holdout; the outcome tallies are then built from them as the feedback path would have counted them.
Requests go through django.test.Client (middleware, queries and templates, no network).
"""

import argparse
import datetime
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_learning_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("DEBUG", "false")
os.environ["ALLOWED_HOSTS"] = os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1") + ",testserver"

TARGET_MS = 200.0
ENTRIES = 2000
HOLDOUT_SHARE = 0.25
ORGS = ["acme", "globex", "initech", "umbrella", "hooli"]
SERVICES = ["billing-api", "web", "search", "auth", "payments", "ingest", "reports", "mobile-gw"]
ENVS = ["container", "ci", "staging", "prod", "host"]
SCOPES = [f"{o}/{s}/{e}" for o in ORGS for s in SERVICES for e in ENVS]  # 200 scopes
SCOPE_WEIGHTS = [1 / (i + 1) ** 0.8 for i in range(len(SCOPES))]
KINDS = ["procedure", "failure_lesson", "success_pattern", "preference", "fact", "human_correction"]


def ensure_database(url: str) -> None:
    import dj_database_url
    import psycopg
    from psycopg import sql

    db = dj_database_url.parse(url)
    params = {k: v for k, v in {"host": db["HOST"], "port": db["PORT"], "user": db["USER"],
                                "password": db["PASSWORD"]}.items() if v}
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
            print(f"created database {db['NAME']}")


def seed_entries(rng: random.Random, now) -> dict[str, list[int]]:
    """ENTRIES active lessons over the scopes (some human corrections, made over the 90 days); each lesson's
    quality (its effect on a task's success) is drawn once. Answers scope -> entry ids."""
    from django.db import connection, transaction
    from psycopg.types.json import Jsonb

    from curation.models import Entry

    have = Entry.objects.filter(created_by_label="agent:learning-bench").count()
    if have < ENTRIES:
        columns = ("kind", "scope", "trigger", "content", "conditions", "boundary", "recheck_when", "signal",
                   "base_confidence", "confidence", "hit_count", "retrieval_count", "utility_sum", "utility_n",
                   "status", "queue_reason", "flags", "source_task", "created_by_label", "version", "created_at",
                   "updated_at", "archive_reason", "fingerprint", "last_verified_at")
        with transaction.atomic(), connection.cursor() as cursor:
            with cursor.copy(f"COPY curation_entry ({', '.join(columns)}) FROM STDIN") as copy:
                for i in range(have, ENTRIES):
                    scope = rng.choices(SCOPES, weights=SCOPE_WEIGHTS)[0]
                    made = now - datetime.timedelta(days=rng.uniform(0, 90))
                    kind = "human_correction" if i % 20 == 0 else rng.choice(KINDS[:5])
                    copy.write_row((kind, scope, f"Lesson {i} for {scope}", f"Do the thing number {i} first.",
                                    Jsonb(["bench"]), "", "", "external", 0.8, 0.8, 0, 0, 0.0, 0, "active", "",
                                    Jsonb([]), f"task-{i}", "agent:learning-bench", 1, made, made, "", "", made))
    by_scope: dict[str, list[int]] = {}
    for pk, scope in Entry.objects.filter(created_by_label="agent:learning-bench").values_list("id", "scope"):
        by_scope.setdefault(scope, []).append(pk)
    return by_scope


def seed_retrievals(target: int, rng: random.Random, now, by_scope) -> bool:
    """Top the retrievals up to `target`, each with its items and its feedback, by COPY."""
    from django.db import connection, transaction
    from psycopg.types.json import Jsonb

    from curation.models import Retrieval
    from curation.services.tokens import create_agent_token

    have = Retrieval.objects.count()
    missing = target - have
    print(f"retrievals: {have:,}" + (f"; inserting {missing:,}" if missing > 0 else ""))
    if missing <= 0:
        return False
    token = create_agent_token(name=f"learning-bench-{have}", scopes=ORGS)[0]
    quality = {pk: rng.gauss(0.08, 0.08) for ids in by_scope.values() for pk in ids}
    scopes = [s for s in SCOPES if s in by_scope]
    weights = [SCOPE_WEIGHTS[SCOPES.index(s)] for s in scopes]
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        with (cursor.copy("COPY curation_retrieval (id, token_id, scope, query, task_ref, entry_ids, memory_version, "
                          "arm, created_at) FROM STDIN") as retrievals):
            rows = []
            for i in range(missing):
                scope = rng.choices(scopes, weights=weights)[0]
                at = now - datetime.timedelta(seconds=rng.uniform(0, 90 * 86400))
                holdout = rng.random() < HOLDOUT_SHARE
                ids = [] if holdout else rng.sample(by_scope[scope], min(len(by_scope[scope]), rng.randint(1, 5)))
                chance = 0.55 + (sum(quality[pk] for pk in ids) / len(ids) if ids else 0.0)
                pk = uuid.UUID(int=rng.getrandbits(128), version=4)
                retrievals.write_row((pk, token.pk, scope, "bench query", f"bench-{have + i}", Jsonb(ids), 1,
                                      "holdout" if holdout else "memory", at))
                rows.append((pk, ids, at, "success" if rng.random() < chance else "failure"))
        with cursor.copy("COPY curation_retrievedentry (retrieval_id, entry_id, rank, created_at) FROM STDIN") as items:
            for pk, ids, at, _ in rows:
                for rank, entry_id in enumerate(ids):
                    items.write_row((pk, entry_id, rank, at))
        with cursor.copy("COPY curation_feedback (retrieval_id, outcome, used_entry_ids, created_at) FROM STDIN") as fb:
            for pk, ids, at, outcome in rows:
                fb.write_row((pk, outcome, Jsonb(ids), at + datetime.timedelta(minutes=5)))
    print(f"inserted in {time.perf_counter() - started:.1f} s")
    return True


def rebuild_tallies() -> None:
    """What the feedback path counts as each outcome arrives (services.evaluation.tally_outcome), in bulk."""
    from django.db import connection, transaction

    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("TRUNCATE curation_outcometally, curation_lessontally")
        cursor.execute("""
            INSERT INTO curation_outcometally (day, scope, arm, tasks, successes)
            SELECT (f.created_at AT TIME ZONE 'UTC')::date, r.scope, r.arm, count(*),
                   count(*) FILTER (WHERE f.outcome = 'success')
            FROM curation_feedback f JOIN curation_retrieval r ON r.id = f.retrieval_id
            GROUP BY 1, 2, 3""")
        cursor.execute("""
            INSERT INTO curation_lessontally (day, entry_id, tasks, successes)
            SELECT (f.created_at AT TIME ZONE 'UTC')::date, i.entry_id, count(*),
                   count(*) FILTER (WHERE f.outcome = 'success')
            FROM curation_feedback f JOIN curation_retrievedentry i ON i.retrieval_id = f.retrieval_id
            GROUP BY 1, 2""")
        cursor.execute("SELECT (SELECT count(*) FROM curation_outcometally), (SELECT count(*) FROM curation_lessontally)")
        outcome_rows, lesson_rows = cursor.fetchone()
    with connection.cursor() as cursor:
        for table in ("curation_outcometally", "curation_lessontally", "curation_retrieval", "curation_entry"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    print(f"tallies: {outcome_rows:,} outcome rows, {lesson_rows:,} lesson rows, built in "
          f"{time.perf_counter() - started:.1f} s")


def user(name: str, role: str, scopes=()):
    from django.contrib.auth.models import Group, User

    from curation.models import ScopeGrant

    person, _ = User.objects.get_or_create(username=name)
    person.groups.add(Group.objects.get(name=role))
    for prefix in scopes:
        ScopeGrant.objects.get_or_create(user=person, prefix=prefix)
    return person


def timed(client, url: str, reps: int, **headers) -> list[float]:
    for _ in range(3):
        assert client.get(url, **headers).status_code == 200, url
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        response = client.get(url, **headers)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return samples


def summary(name: str, samples: list[float]) -> bool:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    ok = p95 < TARGET_MS
    print(f"  {name:<34} n={len(ordered):<4} p50 {p50:7.1f}  p95 {p95:7.1f}  max {ordered[-1]:7.1f} ms"
          f"   {'PASS' if ok else 'FAIL'} (p95 < {TARGET_MS:.0f} ms)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--retrievals", type=int, default=1_000_000, help="retrievals to have (default 1000000)")
    parser.add_argument("--reps", type=int, default=30, help="timed requests per case (default 30)")
    args = parser.parse_args()

    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from curation import clock
    from curation.services.tokens import create_agent_token

    call_command("migrate", verbosity=0)
    rng, now = random.Random(args.retrievals), clock.now()
    by_scope = seed_entries(rng, now)
    seed_retrievals(args.retrievals, rng, now, by_scope)
    rebuild_tallies()  # as of today: a rerun on a later day reads the same windows the feedback path would

    lead, scoped = user("bench-lead", "lead"), user("bench-scoped", "reviewer", ["acme/billing-api"])
    key = create_agent_token(name=f"learning-bench-reader-{uuid.uuid4().hex[:8]}", scopes=["acme"])[1]
    cases = [
        ("lead, every scope", lead, "/learning/", {}),
        ("lead, under acme, 90 days", lead, "/learning/?scope=acme&days=90", {}),
        ("reviewer scoped to acme/billing-api", scoped, "/learning/", {}),
        ("GET /api/v1/evaluation?scope=acme", None, "/api/v1/evaluation?scope=acme",
         {"HTTP_AUTHORIZATION": f"Bearer {key}"}),
    ]
    print(f"\n{args.reps} timed requests each:")
    ok = True
    for name, person, url, headers in cases:
        client = Client()
        if person:
            client.force_login(person)
        ok &= summary(name, timed(client, url, args.reps, **headers))
        with CaptureQueriesContext(connection) as captured:
            client.get(url, **headers)
        print(f"    {len(captured)} queries; the slowest: "
              f"{max(float(q['time']) for q in captured.captured_queries) * 1000:.1f} ms")
    page = Client()
    page.force_login(lead)
    text = page.get("/learning/").content.decode()
    verdict = text.split('id="verdict-30">', 1)[1].split("</li>", 1)[0]
    print(f"\n30-day verdict on the page: {' '.join(verdict.replace('<strong>', '').replace('</strong>', '').split())}")
    print(f"\n{'PASS' if ok else 'FAIL'}: /learning/ under {TARGET_MS:.0f} ms at p95 with {args.retrievals:,} retrievals")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
