"""The RegAgent replay at the paper's size, through the product (make bench-replay).

    .venv/bin/python benchmarks/replay_bench.py [--steps 4000] [--paper-seeds 5] [--seed-seeds 3]
                                                [--product-seeds 3] [--policies all] [--jobs 2]
                                                [--sweep-every 5] [--out DIR]

Runs `manage.py replay regagent` once per rule set: every policy row with the paper's rule set over
--paper-seeds seeds, with the product's defaults with the design notes' outcome rule (seed) over
--seed-seeds, and with the product's defaults (product) over --product-seeds, each (policy, seed) in a
throw-away SQLite database of its own, --jobs at once, the deletion sweeps every --sweep-every steps
(policies.BENCH_SWEEP_EVERY; the capacity sweep after every step). Prints each table, the paper's shape per
seed, the rule sets side by side (also in side_by_side.md next to the reports) with the precision and recall
of the recheck cards, the wall time and the median cost of one step. A small proof: --policies addall,strict
--paper-seeds 1 --seed-seeds 1 --product-seeds 1 --steps 300. `make bench-replay-rules` is the rule sets side
by side at 1,500 steps, 3 seeds, the five rows the claims need (the seed rule set on addall and strict).
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.replay.policies import BENCH_SWEEP_EVERY, RULE_SETS  # noqa: E402  (constants and pure functions:
from curation.replay.report import side_by_side  # noqa: E402  no Django setup needed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--paper-seeds", type=int, default=5)
    parser.add_argument("--seed-seeds", type=int, default=3, help="seeds of the design notes' outcome rule")
    parser.add_argument("--product-seeds", type=int, default=3)
    parser.add_argument("--policies", default="all")
    parser.add_argument("--seed-policies", help="the policies of the seed rule set (default: --policies)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sweep-every", type=int, default=BENCH_SWEEP_EVERY)
    parser.add_argument(
        "--out",
        default=str(ROOT / "data" / "replay"),
        help="the reports go to OUT/bench-<time>-<rules> (the dashboard links the newest)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    figures, reports = [], []
    # The product's defaults first: a run cut short still has the rule set the claims are about.
    for rules, seeds in (("product", args.product_seeds), ("paper", args.paper_seeds), ("seed", args.seed_seeds)):
        if seeds < 1:
            continue
        out = Path(args.out) / f"bench-{stamp}-{rules}"
        policies = args.seed_policies if rules == "seed" and args.seed_policies else args.policies
        command = [
            sys.executable,
            str(ROOT / "manage.py"),
            "replay",
            "regagent",
            "--policy",
            policies,
            "--seeds",
            str(seeds),
            "--steps",
            str(args.steps),
            "--rules",
            rules,
            "--jobs",
            str(args.jobs),
            "--sweep-every",
            str(args.sweep_every),
            "--out",
            str(out),
        ]
        print("$", " ".join(command[1:]), flush=True)
        subprocess.run(command, check=True, cwd=ROOT)
        reports.append(json.loads((out / "report.json").read_text()))
        meta = reports[-1]["meta"]
        figures.append(
            (
                rules,
                meta["wall_seconds"],
                meta["median_step_ms"],
                meta.get("median_step_cpu_ms"),
                meta.get("part_cpu_ms"),
            )
        )
    text = side_by_side(sorted(reports, key=lambda data: RULE_SETS.index(data["rules"])))
    (Path(args.out) / f"bench-{stamp}-side_by_side.md").write_text(text)
    print()
    print(f"The rule sets side by side ({args.steps} steps):")
    print()
    print(text)
    for rules, wall, step, cpu, parts in figures:
        print(f"{rules} rules: wall time {wall:.1f} s, median step {step} ms ({cpu} ms CPU; per part, mean: {parts})")
    print(f"total wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
