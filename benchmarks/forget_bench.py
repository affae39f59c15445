"""A held submission answers in the time a fresh one does: no timing oracle for forgotten lessons.

    .venv/bin/python benchmarks/forget_bench.py [--db sqlite|postgres] [--rounds 300] [--existing 200]
                                                                                  (make bench-forget)

Through the real API view in process (django.test.Client, POST /api/v1/candidates with a token): a scope
holds `--existing` active lessons and one forgotten lesson; each round submits a variant of the forgotten
lesson (held) and a fresh lesson of the same shape (admitted to the queue), in alternating order, so both
meet the same machine. Prints, for each, the median and quartiles of the wall time and of this process's CPU
per submission, the difference of the medians against their spread, and the machine's load. The target is
a difference of medians inside the quartile range of the fresh ones: within the noise an agent sees.

SQLite runs in a temporary folder; PostgreSQL in a database of its own (BENCH_DATABASE_URL, default
memoryadmin_forget_bench), emptied at the start.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

WORDS = (
    "deploy migrate config cache worker queue ledger invoice webhook signing rotate restart drain lock "
    "retry timeout schema index backup restore release branch rebase merge fixture session cookie header "
    "proxy build lint format upgrade version rollback canary metrics alert trace"
).split()
FORGOTTEN = (
    "Rotating the billing webhook signing key",
    "Ask Marguerite Okonkwo to approve the rotation; she owns the webhook signing key FORGETME-4242.",
)


def configure(db: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.update(DEBUG="false", LOG_LEVEL="WARNING", MEMORYADMIN_API_RATE_LIMIT="1000000")
    os.environ["ALLOWED_HOSTS"] = "localhost,127.0.0.1,testserver"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["MEMORYADMIN_DATA_DIR"] = tempfile.mkdtemp(prefix="forget-bench-")
    if db == "sqlite":
        os.environ.pop("DATABASE_URL", None)
    else:
        import psycopg
        import dj_database_url

        url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryadmin_forget_bench")
        parsed = dj_database_url.parse(url)
        with psycopg.connect(
            dbname="postgres",
            host=parsed["HOST"] or "127.0.0.1",
            user=parsed["USER"] or "postgres",
            port=parsed["PORT"] or 5432,
            autocommit=True,
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{parsed["NAME"]}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{parsed["NAME"]}"')
        os.environ["DATABASE_URL"] = url


def lesson(rng: random.Random, n: int) -> tuple[str, str]:
    words = rng.sample(WORDS, 8)
    return (
        f"When {words[0]} the {words[1]} {n}",
        f"Always {words[2]} the {words[3]} before {words[4]}; {words[5]} {words[6]} {words[7]} owns it.",
    )


def quartiles(samples: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(samples, n=4)
    return q[0], statistics.median(samples), q[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--existing", type=int, default=200)
    args = parser.parse_args()
    configure(args.db)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    from curation.models import Entry
    from curation.services.forgets import approve_forget_request, file_forget_request
    from curation.services.tokens import create_agent_token
    from tests.factories import active, make_user

    scope, rng = "acme/billing-api", random.Random(7)
    lead = make_user("bench-lead", "lead")
    for i in range(args.existing):
        trigger, content = lesson(rng, i)
        active(lead, scope=scope, trigger=trigger, content=content)
    forgotten = active(lead, scope=scope, trigger=FORGOTTEN[0], content=FORGOTTEN[1])
    request = file_forget_request(entry_id=forgotten.pk, reason="the user asked", actor=lead)
    approve_forget_request(request.pk, actor=lead)
    _, key = create_agent_token(name="bench-agent", scopes=[scope])
    client, headers = Client(), {"HTTP_AUTHORIZATION": f"Bearer {key}"}

    def submit(trigger: str, content: str) -> tuple[float, float, dict]:
        body = {
            "scope": scope,
            "kind": "procedure",
            "trigger": trigger,
            "content": content,
            "signal": "independent",
            "evidence": [{"kind": "tool_output", "signal": "external", "excerpt": "seen in the run log"}],
        }
        started, cpu_started = time.perf_counter(), time.process_time()
        response = client.post("/api/v1/candidates", body, content_type="application/json", **headers)
        wall, cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu_started) * 1000
        assert response.status_code == 201, response.content
        return wall, cpu, response.json()

    for i in range(10):  # warm-up
        submit(*lesson(rng, 10_000 + i))
    held, fresh, statuses = {"wall": [], "cpu": []}, {"wall": [], "cpu": []}, set()
    for i in range(args.rounds):
        variant = (f"{FORGOTTEN[0]} ({i})", FORGOTTEN[1].replace("Ask", rng.choice(("Ask", "Please ask", "Get"))))
        pair = [("held", variant), ("fresh", lesson(rng, 20_000 + i))]
        if i % 2:
            pair.reverse()
        for name, (trigger, content) in pair:
            wall, cpu, body = submit(trigger, content)
            statuses.add((name, body["status"], body["created"]))
            target = held if name == "held" else fresh
            target["wall"].append(wall)
            target["cpu"].append(cpu)
    held_rows = Entry.objects.filter(held_by=request).count()
    print(
        f"forget oracle on {connection.vendor}: {args.rounds} held and {args.rounds} fresh submissions, "
        f"{args.existing} lessons in the scope; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    print(f"  answers: {sorted(statuses)}; rows held: {held_rows}")
    ok = held_rows == args.rounds and {s for _, s, _ in statuses} == {"pending"}
    for measure in ("wall", "cpu"):
        hq, fq = quartiles(held[measure]), quartiles(fresh[measure])
        difference = hq[1] - fq[1]
        inside = abs(difference) <= (fq[2] - fq[0])
        ok &= inside or measure == "wall"  # the wall time also carries the other processes on the machine
        print(
            f"  {measure:>4} ms   held p25 {hq[0]:6.2f} p50 {hq[1]:6.2f} p75 {hq[2]:6.2f}   "
            f"fresh p25 {fq[0]:6.2f} p50 {fq[1]:6.2f} p75 {fq[2]:6.2f}   "
            f"difference of medians {difference:+.2f} ({difference / fq[1]:+.1%}), "
            f"{'inside' if inside else 'OUTSIDE'} the fresh ones' quartile range"
        )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
