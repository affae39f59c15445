"""The harm oracle (benchmarks/harm_oracle_bench.py) replays the product's world in plain Python: it must be
the same world, the same strict admission and the same recheck cards as the replay through the product,
or its figures say nothing about the product's cards."""

import importlib.util
from pathlib import Path

import pytest
from django.conf import settings
from django.test.utils import override_settings

from curation.replay import policies
from curation.replay.agent import regagent
from curation.replay.run import replay_one

STEPS = 60


def _oracle():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "harm_oracle_bench.py"
    spec = importlib.util.spec_from_file_location("harm_oracle_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.django_db
def test_the_oracle_replays_what_the_product_does_and_knows_each_lessons_true_effect():
    oracle = _oracle()
    # The product's strict row; a small prior and minimum so the first card comes within a short run.
    config = policies.configuration("strict", rules="product")
    with override_settings(CURATION={**settings.CURATION, "LIFT_PRIOR_TASKS": 2, "LIFT_MIN_TASKS": 3}):
        product = replay_one(config, seed=0, steps=STEPS, rules="product", agent_factory=regagent)
    oracle.PRIOR_TASKS, oracle.MIN_TASKS = 2.0, 3
    memory, effects, sent, served = oracle.replay(0, STEPS)

    assert served == [STEPS, sum(product.successes)]
    assert len(memory) == product.memory_size  # strict admission kept the same records
    # The same lessons were sent for a recheck (told apart by their error: the ids differ, as the product
    # numbers every submission, admitted or not).
    assert sent and {round(memory[i][2], 9) for i in sent} == {
        round(product.lesson_errors[pk], 9) for pk in product.sent_for_recheck
    }
    # Every served lesson's effect is a per-task difference of outcomes: -1, 0 or +1.
    assert sum(len(v) for v in effects.values()) == STEPS * policies.K
    assert {d for v in effects.values() for d in v} <= {-1, 0, 1}
