"""The stand-in RegAgent. `regagent(world)` makes the agent `agent(x, neighbours, rng) -> ŷ` (a replaceable
callable: `--agent module:factory` names another factory of the same shape). Each neighbour has its input
`x`, its stored output `y` and its `distance` to the task's input.

similarity sᵢ = exp(−dᵢ² / 2.5²); copy estimate m = Σ aᵢ (yᵢ + 0.25·ŵ·(x − xᵢ)) with aᵢ ∝ sᵢ; follow weight
λ = mean(sᵢ)^0.5; own inference o = w·x + 0.9·(|x|/√6)·ε₁; ŷ = λ·m + (1 − λ)·o + 0.8·ε₂. ŵ = w: the slope
correction uses the true direction, as a capable model would infer it locally."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .world import DIMENSIONS, dot

SIMILARITY_SCALE = 2.5
SLOPE_CORRECTION = 0.25
OWN_NOISE = 0.9
OUTPUT_NOISE = 0.8


@dataclass(frozen=True)
class Neighbour:
    x: tuple[float, ...]
    y: float
    distance: float


def regagent(world):
    w = world.w

    def agent(x, neighbours, rng) -> float:
        eps1, eps2 = rng.gauss(0, 1), rng.gauss(0, 1)  # drawn first: the same whatever memory holds
        own = dot(w, x) + OWN_NOISE * (math.sqrt(dot(x, x)) / math.sqrt(DIMENSIONS)) * eps1
        if not neighbours:
            return own + OUTPUT_NOISE * eps2
        similarities = [math.exp(-(n.distance**2) / SIMILARITY_SCALE**2) for n in neighbours]
        total = sum(similarities)
        follow = (total / len(similarities)) ** 0.5
        if total == 0:
            return own + OUTPUT_NOISE * eps2
        copy = sum(
            s / total * (n.y + SLOPE_CORRECTION * dot(w, [a - b for a, b in zip(x, n.x)]))
            for s, n in zip(similarities, neighbours)
        )
        return follow * copy + (1 - follow) * own + OUTPUT_NOISE * eps2

    return agent
