"""The RegAgent replay at the paper's size, through the product (make bench-replay).

    .venv/bin/python benchmarks/replay_bench.py [--steps 4000] [--paper-seeds 5] [--product-seeds 3]
                                                [--policies all] [--jobs 2] [--sweep-every 5] [--out DIR]

Runs `manage.py replay regagent` twice: every policy row with the paper's rule set over --paper-seeds seeds,
then with the product's rule set over --product-seeds seeds, each (policy, seed) in a throw-away SQLite
database of its own, --jobs at once, the deletion sweeps every --sweep-every steps (policies.BENCH_SWEEP_EVERY;
the capacity sweep after every step). Prints both tables, the paper's shape per seed, the wall time and the
median cost of one step (submit, retrieve, feedback, sweeps). A small proof: --policies addall,strict
--paper-seeds 1 --product-seeds 1 --steps 300.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.replay.policies import BENCH_SWEEP_EVERY  # noqa: E402  (a constant: no Django setup needed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--paper-seeds", type=int, default=5)
    parser.add_argument("--product-seeds", type=int, default=3)
    parser.add_argument("--policies", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sweep-every", type=int, default=BENCH_SWEEP_EVERY)
    parser.add_argument("--out", default=str(ROOT / "data" / "replay"), help="the reports go to OUT/bench-<time>-<rules> "
                        "(the dashboard links the newest)")
    args = parser.parse_args()
    started = time.perf_counter()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    figures = []
    for rules, seeds in (("paper", args.paper_seeds), ("product", args.product_seeds)):
        if seeds < 1:
            continue
        out = Path(args.out) / f"bench-{stamp}-{rules}"
        command = [sys.executable, str(ROOT / "manage.py"), "replay", "regagent", "--policy", args.policies,
                   "--seeds", str(seeds), "--steps", str(args.steps), "--rules", rules, "--jobs", str(args.jobs),
                   "--sweep-every", str(args.sweep_every), "--out", str(out)]
        print("$", " ".join(command[1:]), flush=True)
        subprocess.run(command, check=True, cwd=ROOT)
        meta = json.loads((out / "report.json").read_text())["meta"]
        figures.append((rules, meta["wall_seconds"], meta["median_step_ms"], meta.get("median_step_cpu_ms"),
                        meta.get("part_cpu_ms")))
    print()
    for rules, wall, step, cpu, parts in figures:
        print(f"{rules} rules: wall time {wall:.1f} s, median step {step} ms ({cpu} ms CPU; per part, mean: {parts})")
    print(f"total wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
