"""Replay the ACL 2026 memory-management experiment (RegAgent) through memoryadmin's own services, retrieval
and sweeps, in a throw-away database, and write its report.

    python manage.py replay regagent --policy strict --seeds 5 --steps 4000
    python manage.py replay regagent --policy all --rules product --seeds 3 --out /tmp/replay --jobs 2
    python manage.py replay regagent --policy addall,strict --database-url postgres://postgres@127.0.0.1/replay

Each (policy, seed) runs in a database of its own, made from one migrated template: a copy of a SQLite file
(the default, under --out) or, with --database-url, a PostgreSQL database created from the named one as its
template and dropped afterwards. `--here` runs in the configured database instead (tests)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from curation.rules import clock
from curation.replay import policies as replay_policies
from curation.replay.report import report_files
from curation.replay.run import replay_one

MANAGE = Path(settings.BASE_DIR) / "manage.py"


def load_agent(spec: str):
    """`module:factory`: factory(world) -> agent(x, neighbours, rng) -> ŷ."""
    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name or "regagent")
    except (ImportError, AttributeError) as exc:
        raise CommandError(f"--agent {spec!r}: {exc}") from None
    if not callable(factory):
        raise CommandError(f"--agent {spec!r} is not callable.")
    return factory


def parse_policies(value: str) -> list[str]:
    names = list(replay_policies.ROWS) if value == "all" else [p.strip() for p in value.split(",") if p.strip()]
    unknown = [p for p in names if p not in replay_policies.ROWS]
    if unknown or not names:
        raise CommandError(
            f"Unknown policy {', '.join(unknown) or value!r}; choose from {', '.join(replay_policies.ROWS)} or all."
        )
    return names


class Command(BaseCommand):
    help = "Replay the RegAgent memory-management experiment through the product and write its report."

    def add_arguments(self, parser):
        parser.add_argument("experiment", choices=["regagent"])
        parser.add_argument(
            "--policy", default="all", help=f"one of {', '.join(replay_policies.ROWS)}, a comma list, or all (default)"
        )
        parser.add_argument("--seeds", type=int, default=5, help="seeds 0 … N−1 (default 5)")
        parser.add_argument("--seed-list", help="exactly these seeds, e.g. 3,4")
        parser.add_argument("--steps", type=int, default=4000)
        parser.add_argument(
            "--rules",
            choices=list(replay_policies.RULE_SETS),
            default="paper",
            help="paper: the paper's rules; product: the product's defaults; seed: the product's "
            "with the design notes' outcome rule (+0.05 / -0.2)",
        )
        parser.add_argument("--agent", default="curation.replay.agent:regagent", help="module:factory")
        parser.add_argument("--out", help="the report's folder (default: REPLAY_REPORT_DIR/<time>)")
        parser.add_argument(
            "--database-url", help="a PostgreSQL database to use as the template (default: SQLite files under --out)"
        )
        parser.add_argument("--jobs", type=int, default=1, help="runs at once, each its own process and database")
        parser.add_argument(
            "--sweep-every",
            type=int,
            default=1,
            help="run the deletion sweeps every N steps "
            "(default 1; the capacity sweep runs after every step whatever N is)",
        )
        parser.add_argument("--here", action="store_true", help="run in the configured database (tests)")
        parser.add_argument("--run-json", help=argparse.SUPPRESS)  # a child run's answer to its parent

    def handle(
        self,
        *args,
        policy,
        seeds,
        seed_list,
        steps,
        rules,
        agent,
        out,
        database_url,
        jobs,
        sweep_every,
        here,
        run_json,
        **options,
    ):
        names = parse_policies(policy)
        seed_numbers = [int(s) for s in seed_list.split(",")] if seed_list else list(range(seeds))
        if steps < 1 or not seed_numbers or sweep_every < 1 or jobs < 1:
            raise CommandError("--steps, --seeds, --sweep-every and --jobs are at least 1.")
        factory = load_agent(agent)
        for name in names:
            replay_policies.configuration(name, rules)
        started = time.perf_counter()
        if here:
            runs = [
                replay_one(
                    replay_policies.configuration(name, rules),
                    seed=seed,
                    steps=steps,
                    rules=rules,
                    agent_factory=factory,
                    sweep_every=sweep_every,
                ).as_json()
                for name in names
                for seed in seed_numbers
            ]
            if run_json:
                Path(run_json).write_text(json.dumps(runs))
                return
        folder = Path(out) if out else Path(settings.REPLAY_REPORT_DIR) / clock.wall().strftime("%Y%m%d-%H%M%S")
        folder.mkdir(parents=True, exist_ok=True)
        if not here:
            runs = self._in_throwaway_databases(
                folder,
                names,
                seed_numbers,
                steps=steps,
                rules=rules,
                agent=agent,
                database_url=database_url,
                jobs=jobs,
                sweep_every=sweep_every,
            )
        wall = time.perf_counter() - started
        step_ms = sorted(r["median_step_ms"] for r in runs if r["median_step_ms"] is not None)
        cpu_ms = sorted(r["median_step_cpu_ms"] for r in runs if r.get("median_step_cpu_ms") is not None)
        parts = sorted({part for r in runs for part in r.get("part_cpu_ms", {})})
        meta = {
            "policies": names,
            "seeds": seed_numbers,
            "steps": steps,
            "rules": rules,
            "agent": agent,
            "wall_seconds": round(wall, 1),
            "median_step_ms": step_ms[len(step_ms) // 2] if step_ms else None,
            "median_step_cpu_ms": cpu_ms[len(cpu_ms) // 2] if cpu_ms else None,
            # CPU per step of each part (retrieve, record_retrieval, agent, feedback, submit, sweeps), mean over runs
            "part_cpu_ms": {
                part: round(sum(r["part_cpu_ms"].get(part, 0.0) for r in runs) / len(runs), 3) for part in parts
            },
            "sweep_every": sweep_every,
            "database": "postgresql" if database_url else "sqlite",
            "written_at": clock.wall().isoformat(),
        }
        for name, text in report_files(runs, rules=rules, steps=steps, meta=meta).items():
            (folder / name).write_text(text)
        self.stdout.write((folder / "report.md").read_text())
        self.stdout.write(
            f"wall time {wall:.1f} s; median step {meta['median_step_ms']} ms "
            f"({meta['median_step_cpu_ms']} ms CPU: {meta['part_cpu_ms']}); report in {folder}"
        )

    def _in_throwaway_databases(
        self, folder: Path, names, seeds, *, steps, rules, agent, database_url, jobs, sweep_every
    ) -> list[dict]:
        work = folder / "databases"
        work.mkdir(exist_ok=True)
        template = database_url or f"sqlite:///{(work / 'template.sqlite3').resolve()}"
        if database_url:
            _create_database(database_url)
        _manage(["migrate", "-v", "0"], template)
        counter = iter(range(10**6))

        def one(name_seed):
            name, seed = name_seed
            index = next(counter)
            url = _copy_database(template, work, index)
            result = work / f"run-{index}.json"
            try:
                _manage(
                    [
                        "replay",
                        "regagent",
                        "--here",
                        "--policy",
                        name,
                        "--seed-list",
                        str(seed),
                        "--steps",
                        str(steps),
                        "--rules",
                        rules,
                        "--agent",
                        agent,
                        "--sweep-every",
                        str(sweep_every),
                        "--run-json",
                        str(result),
                    ],
                    url,
                )
                run = json.loads(result.read_text())[0]
            finally:
                _drop_database(url, work, index)
            self.stdout.write(
                f"{name} seed {seed}: {run['success_rate']:.2f}% success, memory {run['memory_size']}, "
                f"median step {run['median_step_ms']} ms ({run.get('median_step_cpu_ms')} ms CPU)",
                ending="\n",
            )
            self.stdout.flush()
            return run

        # Seed by seed: every policy of a seed finishes before the next seed starts, so a run cut short
        # still has whole seeds to compare (the claims are paired per seed).
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            runs = list(pool.map(one, [(n, s) for s in seeds for n in names]))
        shutil.rmtree(work, ignore_errors=True)
        return runs


def _manage(arguments: list[str], database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "MEMORYADMIN_THROWAWAY_DATABASE": "1"}
    done = subprocess.run([sys.executable, str(MANAGE), *arguments], env=env, capture_output=True, text=True)
    if done.returncode:
        raise CommandError(f"manage.py {' '.join(arguments[:2])} failed:\n{done.stderr[-3000:]}")


def _server_and_name(url: str) -> tuple[str, str]:
    base, _, name = url.split("?")[0].rpartition("/")
    return base, name


def _create_database(url: str) -> None:
    """The template database, made when it does not exist yet (migrate fills it)."""
    import psycopg  # noqa: PLC0415  (PostgreSQL only)

    base, name = _server_and_name(url)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def _copy_database(template: str, work: Path, index: int) -> str:
    if template.startswith("sqlite:"):
        target = (work / f"run-{index}.sqlite3").resolve()
        shutil.copyfile(template.split("sqlite:///", 1)[1], target)
        return f"sqlite:///{target}"
    import psycopg  # noqa: PLC0415  (PostgreSQL only)

    base, name = _server_and_name(template)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}_run{index}" TEMPLATE "{name}"')
    return f"{base}/{name}_run{index}"


def _drop_database(url: str, work: Path, index: int) -> None:
    if url.startswith("sqlite:"):
        for suffix in ("", "-wal", "-shm"):
            Path(url.split("sqlite:///", 1)[1] + suffix).unlink(missing_ok=True)
        return
    import psycopg  # noqa: PLC0415

    base, name = _server_and_name(url)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
