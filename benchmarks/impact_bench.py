"""What a candidate's impact and a memory test cost, on PostgreSQL.

    .venv/bin/python benchmarks/impact_bench.py [--entries 50000] [--scopes 50] [--reps 30]   (make bench-impact)

A memory of --entries active entries in --scopes scopes, released as the published version; in each scope 20
recent retrievals (three-word queries) and 10 memory tests. Measured in process, on the bench's own database
(BENCH_DATABASE_URL, default memoryadmin_impact_bench, filled on the first run and reused):

1. the impact fragment of a pending candidate (services.impact.candidate_impact: 20 rankings with the
   candidate added, and the scope's tests before and after): p50 and p99, and its queries;
2. one memory test run on the published version (selectors.memory_tests.run_test), as a publish runs each
   test it touches: p50 and p99.
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import configure, percentile  # noqa: E402

WORDS = (
    "deploy rollback migration cache webhook signing key rotate vault token queue worker retry timeout "
    "schema index replica backup restore container config branch merge rebase release invoice billing "
    "payment refund ledger audit secret certificate proxy header cookie session login throttle limit "
    "export import batch cursor lock lease heartbeat schedule cron alert pager metric trace log"
).split()


def fill(entries: int, scopes: int, rng) -> None:
    from django.contrib.auth.models import User
    from django.db import connection

    from curation.models import Entry, MemoryTest, MemoryVersion, PublishedVersion, Retrieval
    from curation.selectors import releases
    from curation.services.tokens import create_agent_token

    if Entry.objects.exists():
        return
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO curation_entry (kind, scope, trigger, content, conditions, boundary, recheck_when, signal,
                base_confidence, last_verified_at, decay_key, decay_rate, hit_count, retrieval_count, utility_sum,
                utility_n, status, queue_reason, flags, quarantined, scanned_with, fingerprint, archive_reason,
                source_task, created_by_label, version, created_at, updated_at)
            SELECT 'procedure', 'acme/s' || (i %% %(scopes)s), 'When ' || w1 || ' ' || w2 || ' ' || w3,
                   'Do ' || w2 || ' before ' || w4 || ' ' || i, '[]', 'not on ' || w1, '', 'independent',
                   0.8, now(), 0, -1, 0, 0, 0, 0, 'active', '', '[]', false, 0, md5(i::text), '', '', 'bench', 1,
                   now(), now()
            FROM (SELECT i, (%(words)s::text[])[1 + (i * 7) %% %(n)s] w1, (%(words)s::text[])[1 + (i * 13) %% %(n)s] w2,
                         (%(words)s::text[])[1 + (i * 29) %% %(n)s] w3, (%(words)s::text[])[1 + (i * 31) %% %(n)s] w4
                  FROM generate_series(1, %(entries)s) i) g
            """,
            {"scopes": scopes, "words": list(WORDS), "n": len(WORDS), "entries": entries},
        )
        number = releases.head_number() + 1
        columns = "kind, scope, trigger, content, conditions, boundary, signal, base_confidence, last_verified_at, fingerprint"
        cursor.execute(
            f"INSERT INTO curation_releasedentry (entry_id, valid_from, entry_version, {columns}) "
            f"SELECT id, %s, version, {columns} FROM curation_entry WHERE status = 'active'",
            [number],
        )
        cursor.execute("ANALYZE")
    version = MemoryVersion.objects.create(number=number, summary="bench", published_by_label="bench")
    PublishedVersion.objects.update_or_create(pk=1, defaults={"version": version})
    lead = User.objects.create_user("bench-lead")
    token, _ = create_agent_token(name="bench-agent", scopes=["acme"], actor=None)
    import uuid

    Retrieval.objects.bulk_create(
        Retrieval(
            id=uuid.uuid4(),
            token=token,
            scope=f"acme/s{s}",
            query=" ".join(rng.sample(WORDS, 3)),
            entry_ids=[],
            memory_version=number,
        )
        for s in range(scopes)
        for _ in range(20)
    )
    MemoryTest.objects.bulk_create(
        MemoryTest(
            scope=f"acme/s{s}",
            name=f"bench {s}.{t}",
            query=" ".join(rng.sample(WORDS, 3)),
            expectations=[{"kind": "under_tokens", "tokens": 400}, {"kind": "no_scope", "scope": "acme/other"}],
            created_by_label=lead.username,
        )
        for s in range(scopes)
        for t in range(10)
    )
    print(f"filled {entries:,} entries in {scopes} scopes in {time.perf_counter() - started:.0f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--scopes", type=int, default=50)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    configure("memoryadmin_impact_bench", LOG_LEVEL="WARNING")
    rng = random.Random(7)
    fill(args.entries, args.scopes, rng)

    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from curation import services
    from curation.models import MemoryTest, ScopeGrant
    from curation.rules.access import EVERY_SCOPE
    from curation.selectors import memory_tests, releases
    from curation.services.impact import candidate_impact

    reviewer = User.objects.filter(username="bench-reviewer").first()
    if reviewer is None:
        reviewer = User.objects.create_user("bench-reviewer")
        reviewer.groups.add(Group.objects.get(name="reviewer"))
        ScopeGrant.objects.create(user=reviewer, prefix=EVERY_SCOPE)
    candidate = services.create_candidate(
        data={
            "kind": "procedure",
            "scope": "acme/s1",
            "trigger": "When rotate webhook signing key " + str(rng.random()),
            "content": "Rotate the vault token before the webhook worker restarts.",
            "boundary": "not on staging",
            "conditions": [],
            "signal": "independent",
            "confidence": 0.8,
        },
        actor_label="bench",
    )
    impacts = []
    with CaptureQueriesContext(connection) as queries:
        candidate_impact(candidate.pk, user=reviewer)
    for _ in range(args.reps):
        started = time.perf_counter()
        impact = candidate_impact(candidate.pk, user=reviewer)
        impacts.append((time.perf_counter() - started) * 1000)
    number = releases.published_number()
    tests = list(MemoryTest.objects.filter(scope="acme/s1"))
    runs = []
    for _ in range(args.reps):
        for test in tests:
            started = time.perf_counter()
            memory_tests.run_test(test, number)
            runs.append((time.perf_counter() - started) * 1000)
    impacts.sort()
    runs.sort()
    print(
        f"impact of a candidate ({impact.replayed} retrievals replayed, {impact.tests_run} tests run twice, "
        f"{len(queries)} queries): p50 {statistics.median(impacts):.1f} ms, p99 {percentile(impacts, 0.99):.1f} ms"
    )
    print(f"one memory test run: p50 {statistics.median(runs):.2f} ms, p99 {percentile(runs, 0.99):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
