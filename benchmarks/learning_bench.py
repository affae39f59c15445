"""The learning dashboard at scale: does /learning/ answer in under 200 ms with 1,000,000 retrievals?

    .venv/bin/python benchmarks/learning_bench.py [--retrievals N] [--reps N]      (make bench-learning)

Uses a PostgreSQL database of its own (BENCH_DATABASE_URL or DATABASE_URL, default memoryadmin_learning_bench), made and filled
on the first run and kept for the next: a rerun only tops it up. Retrievals, their items and their
feedback are spread over the last 90 days, 200 scopes and 2,000 lessons, a quarter of the tasks in the
holdout; the outcome tallies are then built from them as the feedback path would have counted them.
Requests go through django.test.Client (middleware, queries and templates, no network).
"""

import argparse
import datetime
import random
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import configure, summary, timed  # noqa: E402

TARGET_MS = 200.0
ENTRIES = 2000
HOLDOUT_SHARE = 0.25
ORGS = ["acme", "globex", "initech", "umbrella", "hooli"]
SERVICES = ["billing-api", "web", "search", "auth", "payments", "ingest", "reports", "mobile-gw"]
ENVS = ["container", "ci", "staging", "prod", "host"]
SCOPES = [f"{o}/{s}/{e}" for o in ORGS for s in SERVICES for e in ENVS]  # 200 scopes
SCOPE_WEIGHTS = [1 / (i + 1) ** 0.8 for i in range(len(SCOPES))]
KINDS = ["procedure", "failure_lesson", "success_pattern", "preference", "fact", "human_correction"]


def seed_entries(rng: random.Random, now) -> dict[str, list[int]]:
    """ENTRIES active lessons over the scopes (some human corrections, made over the 90 days); each lesson's
    quality (its effect on a task's success) is drawn once. Answers scope -> entry ids."""
    from django.db import connection, transaction
    from psycopg.types.json import Jsonb

    from curation.models import Entry
    from curation.services.entry_writes import rewrite_decay_keys

    have = Entry.objects.filter(created_by_label="agent:learning-bench").count()
    if have < ENTRIES:
        columns = (
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
            "queue_reason",
            "flags",
            "source_task",
            "created_by_label",
            "version",
            "created_at",
            "updated_at",
            "archive_reason",
            "fingerprint",
            "last_verified_at",
        )
        with transaction.atomic(), connection.cursor() as cursor:
            with cursor.copy(f"COPY curation_entry ({', '.join(columns)}) FROM STDIN") as copy:
                for i in range(have, ENTRIES):
                    scope = rng.choices(SCOPES, weights=SCOPE_WEIGHTS)[0]
                    made = now - datetime.timedelta(days=rng.uniform(0, 90))
                    kind = "human_correction" if i % 20 == 0 else rng.choice(KINDS[:5])
                    copy.write_row(
                        (
                            kind,
                            scope,
                            f"Lesson {i} for {scope}",
                            f"Do the thing number {i} first.",
                            Jsonb(["bench"]),
                            "",
                            "",
                            "external",
                            0.8,
                            0,
                            0,
                            0.0,
                            0,
                            "active",
                            "",
                            Jsonb([]),
                            f"task-{i}",
                            "agent:learning-bench",
                            1,
                            made,
                            made,
                            "",
                            "",
                            made,
                        )
                    )
        rewrite_decay_keys(Entry.objects.filter(decay_rate__lt=0))  # COPY bypassed the write path's decay index
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
        with cursor.copy(
            "COPY curation_retrieval (id, token_id, scope, query, task_ref, entry_ids, memory_version, "
            "arm, created_at) FROM STDIN"
        ) as retrievals:
            rows = []
            for i in range(missing):
                scope = rng.choices(scopes, weights=weights)[0]
                at = now - datetime.timedelta(seconds=rng.uniform(0, 90 * 86400))
                holdout = rng.random() < HOLDOUT_SHARE
                ids = [] if holdout else rng.sample(by_scope[scope], min(len(by_scope[scope]), rng.randint(1, 5)))
                chance = 0.55 + (sum(quality[pk] for pk in ids) / len(ids) if ids else 0.0)
                pk = uuid.UUID(int=rng.getrandbits(128), version=4)
                retrievals.write_row(
                    (
                        pk,
                        token.pk,
                        scope,
                        "bench query",
                        f"bench-{have + i}",
                        Jsonb(ids),
                        1,
                        "holdout" if holdout else "memory",
                        at,
                    )
                )
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
        cursor.execute(
            "SELECT (SELECT count(*) FROM curation_outcometally), (SELECT count(*) FROM curation_lessontally)"
        )
        outcome_rows, lesson_rows = cursor.fetchone()
    with connection.cursor() as cursor:
        for table in ("curation_outcometally", "curation_lessontally", "curation_retrieval", "curation_entry"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    print(
        f"tallies: {outcome_rows:,} outcome rows, {lesson_rows:,} lesson rows, built in "
        f"{time.perf_counter() - started:.1f} s"
    )


def user(name: str, role: str, scopes=None):
    from django.contrib.auth.models import Group, User

    from curation.models import ScopeGrant
    from curation.rules.access import EVERY_SCOPE

    scopes = [EVERY_SCOPE] if scopes is None else scopes

    person, _ = User.objects.get_or_create(username=name)
    person.groups.add(Group.objects.get(name=role))
    for prefix in scopes:
        ScopeGrant.objects.get_or_create(user=person, prefix=prefix)
    return person


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--retrievals", type=int, default=1_000_000, help="retrievals to have (default 1000000)")
    parser.add_argument("--reps", type=int, default=30, help="timed requests per case (default 30)")
    args = parser.parse_args()

    configure("memoryadmin_learning_bench")
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from curation.rules import clock
    from curation.services.tokens import create_agent_token

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
        (
            "GET /api/v1/evaluation?scope=acme",
            None,
            "/api/v1/evaluation?scope=acme",
            {"HTTP_AUTHORIZATION": f"Bearer {key}"},
        ),
    ]
    print(f"\n{args.reps} timed requests each:")
    ok = True
    for name, person, url, headers in cases:
        client = Client()
        if person:
            client.force_login(person)
        ok &= summary(name, timed(client, url, args.reps, **headers), TARGET_MS, width=34)
        with CaptureQueriesContext(connection) as captured:
            client.get(url, **headers)
        print(
            f"    {len(captured)} queries; the slowest: "
            f"{max(float(q['time']) for q in captured.captured_queries) * 1000:.1f} ms"
        )
    page = Client()
    page.force_login(lead)
    text = page.get("/learning/").content.decode()
    verdict = text.split('id="verdict-30">', 1)[1].split("</li>", 1)[0]
    print(f"\n30-day verdict on the page: {' '.join(verdict.replace('<strong>', '').replace('</strong>', '').split())}")
    print(
        f"\n{'PASS' if ok else 'FAIL'}: /learning/ under {TARGET_MS:.0f} ms at p95 with {args.retrievals:,} retrievals"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
