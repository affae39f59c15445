"""Can outcomes tell a wrong lesson at all? The replay world's truth against the lift rule (make bench-harm-oracle).

    .venv/bin/python benchmarks/harm_oracle_bench.py [--steps 1500] [--seeds 3]

The replay (make bench-replay-rules) scores the recheck cards against "a lesson is wrong when its error is
over 1.0". This bench asks what that target needs. It replays the RegAgent world of each seed with strict
admission in plain Python (no database: the same world, agent, K = 6 nearest and admission rule as
`manage.py replay regagent --policy strict`) and, for every task, measures each served lesson's true effect
on that task: the same task with the same agent noise, answered once with the lesson and once with the next
nearest record in its place. A lesson's effect is the mean of that difference over the tasks it was served,
in points of success.

It prints, for the wrong lessons (error over 1.0) and the right ones served at least 5 times: how often they
were served, their true effect, and how many tasks a two-sided test at 95% with 80% power needs to tell that
effect from zero at the world's success rate. Then the cards the product's lift rule (curation.rules.lift.estimate
and lift.baseline, the product's own functions and defaults) sends in the same runs, scored against both
truths: "wrong" (the error) and "harmful" (a true effect below zero)."""

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.rules import lift  # noqa: E402  (pure functions: no Django setup needed
from curation.replay.agent import Neighbour, regagent  # noqa: E402
from curation.replay.policies import K, RECALL_MIN_RETRIEVALS  # noqa: E402
from curation.replay.world import SUCCESS_ERROR, World  # noqa: E402

PRIOR_TASKS, MIN_TASKS = 20.0, 10  # the product's defaults (lift.lift_settings)
Z_POWER = 1.96 + 0.84  # two-sided 95%, 80% power


def replay(seed: int, steps: int):
    """Strict admission over one seed: each lesson's error, its per-task true effects, and the lessons the
    lift rule sent for a recheck (the outcome that takes its lift below zero at 95%, with at least
    MIN_TASKS tasks). A lesson sent stays in retrieval until a person decides, as in the product; what the
    product also does to its confidence (it may fall under the retrieval floor) is not replayed here, so
    the two agree exactly until the first card and closely after (at the defaults, 1,500 steps, 3 seeds:
    the same success rate, the same 7 cards)."""
    world = World(seed, steps)
    agent = regagent(world)
    memory = [(r.x, r.y, r.error) for r in world.initial]
    effects: dict[int, list[int]] = {}
    tallies: dict[int, list[int]] = {}
    served = [0, 0]
    sent: set[int] = set()
    for task in world.tasks:
        ranked = sorted((math.dist(task.x, m[0]), i) for i, m in enumerate(memory))

        def answer(nearest) -> float:
            neighbours = [Neighbour(memory[i][0], memory[i][1], d) for d, i in nearest]
            return agent(task.x, neighbours, world.task_rng(task))

        top = ranked[:K]
        y_hat = answer(top)
        passed = abs(y_hat - task.y) <= SUCCESS_ERROR
        for j, (_, i) in enumerate(top):
            alone = abs(answer(top[:j] + ranked[j + 1 : K + 1]) - task.y) <= SUCCESS_ERROR
            effects.setdefault(i, []).append(int(passed) - int(alone))
        served[0] += 1
        served[1] += passed
        for _, i in top:
            tally = tallies.setdefault(i, [0, 0])
            tally[0] += 1
            tally[1] += passed
            without = lift.baseline(tuple(tally), (0, 0), tuple(served), min_tasks=MIN_TASKS)
            before = lift.estimate(
                tally[0] - 1, tally[1] - passed, *without, prior_tasks=PRIOR_TASKS, min_tasks=MIN_TASKS
            )
            after = lift.estimate(*tally, *without, prior_tasks=PRIOR_TASKS, min_tasks=MIN_TASKS)
            if after.verdict == lift.HARMS and before.verdict != lift.HARMS:  # as services.usage sends a card
                sent.add(i)
        if passed:  # strict admission: the policy's own evaluator passes at |error| <= 1.0
            memory.append((task.x, y_hat, abs(y_hat - task.y)))
    return memory, effects, sent, served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    lessons, rate = [], []
    for seed in range(args.seeds):
        memory, effects, sent, served = replay(seed, args.steps)
        rate.append(served[1] / served[0])
        for i, per_task in effects.items():
            lessons.append((seed, i, memory[i][2] > SUCCESS_ERROR, len(per_task), statistics.mean(per_task), i in sent))
    p = statistics.mean(rate)
    print(f"{args.seeds} seeds × {args.steps:,} steps, strict admission, K = {K}; success {100 * p:.1f}%")
    print(
        "| lessons served ≥ 5 times | count | median uses | median true effect | effect below zero | "
        "tasks needed at that effect (95%, 80% power) | served that often |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, wrong in (("wrong (error over 1.0)", True), ("right", False)):
        rows = [r for r in lessons if r[2] == wrong and r[3] >= RECALL_MIN_RETRIEVALS]
        if not rows:
            continue
        harmful = [r for r in rows if r[4] < 0]
        needed = statistics.median(Z_POWER**2 * 2 * p * (1 - p) / r[4] ** 2 for r in harmful) if harmful else 0
        often = sum(1 for r in harmful if r[3] >= Z_POWER**2 * 2 * p * (1 - p) / r[4] ** 2)
        print(
            f"| {label} | {len(rows):,} | {statistics.median(r[3] for r in rows):.0f} | "
            f"{100 * statistics.median(r[4] for r in rows):+.1f} points | {len(harmful):,} | {needed:,.0f} | {often:,} |"
        )
    sent = [r for r in lessons if r[5]]
    wrong_often = [r for r in lessons if r[2] and r[3] >= RECALL_MIN_RETRIEVALS]
    harmful_often = [r for r in lessons if r[4] < 0 and r[3] >= RECALL_MIN_RETRIEVALS]
    print(
        f"\nThe lift rule sent {len(sent)} lessons for a recheck: {sum(1 for r in sent if r[2])} wrong by their "
        f"error, {sum(1 for r in sent if r[4] < 0)} harmful by their true effect."
    )
    print(
        f"Recall of wrong lessons served ≥ 5 times: {sum(1 for r in wrong_often if r[5])} of {len(wrong_often)}; "
        f"of truly harmful ones: {sum(1 for r in harmful_often if r[5])} of {len(harmful_often)}."
    )
    for r in sent:
        print(
            f"  seed {r[0]} lesson {r[1]}: {'wrong' if r[2] else 'right'}, served {r[3]} times, "
            f"true effect {100 * r[4]:+.1f} points"
        )


if __name__ == "__main__":
    main()
