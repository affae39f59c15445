"""The RegAgent world of one seed: y = w·x with |w| = 2 in a random direction, x ~ N(0, I₆); an initial
memory of 100 records (x, y + noise), noise sd 0.3 except 10% corrupted records with sd 4.0; a stream of
tasks. Everything is drawn from the seed alone, so every policy of a seed sees the same world, the same
tasks and the same per-task noise (its own generator per task): policy differences are paired."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

DIMENSIONS = 6
W_NORM = 2.0
INITIAL_RECORDS = 100
CORRUPTED_SHARE = 0.10
NOISE_SD = 0.3
CORRUPTED_SD = 4.0
SUCCESS_ERROR = 1.0  # a task succeeds when |ŷ − y| <= 1


@dataclass(frozen=True)
class Record:
    x: tuple[float, ...]
    y: float  # the stored output (noisy)
    error: float  # |stored output − true output|, known to the replay only


@dataclass(frozen=True)
class Task:
    step: int
    x: tuple[float, ...]
    y: float
    seed: int  # of the task's own generator (the agent's noise)


def dot(a, b) -> float:
    return sum(p * q for p, q in zip(a, b))


class World:
    def __init__(self, seed: int, steps: int):
        self.seed = seed
        rng = random.Random(f"regagent-world-{seed}")
        direction = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
        norm = math.sqrt(sum(v * v for v in direction))
        self.w = tuple(W_NORM * v / norm for v in direction)
        corrupted = set(rng.sample(range(INITIAL_RECORDS), round(INITIAL_RECORDS * CORRUPTED_SHARE)))
        self.initial: list[Record] = []
        for i in range(INITIAL_RECORDS):
            x = tuple(rng.gauss(0, 1) for _ in range(DIMENSIONS))
            y = dot(self.w, x)
            noisy = y + rng.gauss(0, CORRUPTED_SD if i in corrupted else NOISE_SD)
            self.initial.append(Record(x, noisy, abs(noisy - y)))
        tasks_rng = random.Random(f"regagent-tasks-{seed}")
        self.tasks: list[Task] = []
        for step in range(steps):
            x = tuple(tasks_rng.gauss(0, 1) for _ in range(DIMENSIONS))
            self.tasks.append(Task(step, x, dot(self.w, x), tasks_rng.getrandbits(32)))

    def task_rng(self, task: Task) -> random.Random:
        """The task's own generator: the same draws for every policy of the seed."""
        return random.Random(task.seed)
