"""One run of the replay: one policy, one seed, in one scope, every step through memoryadmin's own path.

Per step (one task, one simulated hour, inside clock.running_at): retrieve the K = 6 nearest records by L2
through the product's vector retrieval (selectors.retrieve_memory, recorded with services.record_retrieval);
the agent answers; the outcome is reported (services.record_feedback, utility 1 when the task passed the
policy's own evaluator); the agent's answer is submitted with its evaluator's evidence
(services.submit_candidate, where the scope's admission policy decides); then the policy's sweeps run
(sweeps.run_sweep as of the step; the deletion sweeps every `sweep_every` steps, the capacity sweep
always). The replay knows the truth (each record's error); the product never sees it."""

from __future__ import annotations

import datetime
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from django.contrib.auth.models import Group, User

from curation.rules import clock, lifecycle
from curation.rules.config import overriding
from curation.models import Entry, ScopeGrant, Status
from curation.rules.access import EVERY_SCOPE
from curation.rules.scope_policies import ADMISSION
from curation.selectors import retrieve_memory
from curation.services.scope_policies import set_scope_policy
from curation.services.submissions import submit_batch, submit_candidate
from curation.services.tokens import create_agent_token
from curation.services.usage import record_feedback, record_retrieval
from curation.sweeps.runs import run_sweep

from . import stats
from .agent import Neighbour
from .policies import (
    DAY_STEPS,
    EVALUATOR,
    EVERY_STEP_SWEEPS,
    RECALL_MIN_RETRIEVALS,
    STEP_HOURS,
    K,
    Configuration,
    score_of,
)
from .world import SUCCESS_ERROR, World

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
LEAD = "replay-lead"


@dataclass
class RunResult:
    policy: str
    rules: str
    seed: int
    steps: int
    successes: list[bool] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    inherited: list[tuple[float, float]] = field(default_factory=list)  # (mean error retrieved, task error)
    step_seconds: list[float] = field(default_factory=list)
    step_cpu: list[float] = field(default_factory=list)  # process CPU seconds of each step
    part_cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per part of the step, summed
    memory_size: int = 0
    scope: str = ""
    # The truth the product never sees, against what it did: each lesson's error, how often it was
    # retrieved, and the lessons an outcome sent to a person for a recheck.
    lesson_errors: dict[int, float] = field(default_factory=dict)
    retrieved: Counter = field(default_factory=Counter)
    sent_for_recheck: set[int] = field(default_factory=set)

    def recheck_figures(self) -> dict:
        """The recheck cards against the truth: a lesson is wrong when copying it would fail the task
        (its error is over SUCCESS_ERROR); precision over every lesson sent, recall over the wrong lessons
        retrieved at least RECALL_MIN_RETRIEVALS times."""
        wrong = {pk for pk, error in self.lesson_errors.items() if error > SUCCESS_ERROR}
        often = {pk for pk in wrong if self.retrieved[pk] >= RECALL_MIN_RETRIEVALS}
        return {
            "sent": len(self.sent_for_recheck),
            "sent_wrong": len(self.sent_for_recheck & wrong),
            "wrong_retrieved": sum(1 for pk in wrong if self.retrieved[pk]),
            "wrong_retrieved_often": len(often),
            "wrong_retrieved_often_sent": len(often & self.sent_for_recheck),
        }

    @property
    def success_rate(self) -> float:
        return 100.0 * sum(self.successes) / len(self.successes) if self.successes else 0.0

    def as_json(self) -> dict:
        return {
            "policy": self.policy,
            "rules": self.rules,
            "seed": self.seed,
            "steps": self.steps,
            "scope": self.scope,
            "success_rate": round(self.success_rate, 3),
            "memory_size": self.memory_size,
            "inheritance_slope": stats.ols_slope(*zip(*self.inherited)) if len(self.inherited) > 1 else None,
            "median_step_ms": round(1000 * statistics.median(self.step_seconds), 3) if self.step_seconds else None,
            "median_step_cpu_ms": round(1000 * statistics.median(self.step_cpu), 3) if self.step_cpu else None,
            "part_cpu_ms": {
                part: round(1000 * seconds / len(self.step_cpu), 3) for part, seconds in self.part_cpu.items()
            }
            if self.step_cpu
            else {},
            "running_success": [round(v, 4) for v in stats.running_rate(self.successes)],
            "recheck": self.recheck_figures(),
        }


def _lead() -> User:
    user, created = User.objects.get_or_create(username=LEAD)
    if created:
        user.groups.add(Group.objects.get(name="lead"))
        ScopeGrant.objects.create(user=user, prefix=EVERY_SCOPE)
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions


def _moment(step: float) -> datetime.datetime:
    return START + datetime.timedelta(hours=step * STEP_HOURS)


def _candidate(scope: str, trigger: str, x, y: float, error: float | None) -> dict:
    evidence = (
        []
        if error is None
        else [
            {
                "kind": "test_result",
                "signal": "independent",
                "excerpt": f"absolute error {error:.4f}",
                "evaluator": EVALUATOR,
                "score": round(score_of(error), 6),
            }
        ]
    )
    return {
        "scope": scope,
        "kind": "success_pattern",
        "signal": "self",
        "trigger": trigger,
        "content": f"output: {y!r}",
        "embedding": list(x),
        "evidence": evidence,
    }


def _stored_output(entry: Entry) -> float:
    return float(entry.content.rsplit("output: ", 1)[1])


def replay_one(
    config: Configuration, *, seed: int, steps: int, rules: str, agent_factory, sweep_every: int = 1
) -> RunResult:
    """Run `config` for `steps` tasks of seed `seed` in a scope of its own, in the current database."""
    world = World(seed, steps)
    scope = f"replay/{config.policy.replace('+', '-')}/{rules}/s{seed}-{uuid.uuid4().hex[:8]}"
    result = RunResult(config.policy, rules, seed, steps, scope=scope)
    with overriding(**config.curation_settings(scope)):
        lead = _lead()
        token, _ = create_agent_token(name=f"regagent-{scope.replace('/', '-')}"[:100], scopes=[scope])
        errors: dict[int, float] = {}
        with clock.running_at(_moment(-1)) as now:
            # The initial memory is admitted by a policy too, then the run's policy takes over the scope.
            set_scope_policy(
                ADMISSION, data={"prefix": scope, "name": "initial-memory", "mode": "all"}, actor=lead, at=now
            )
            answers = submit_batch(
                items=[
                    _candidate(scope, f"RegAgent initial record {i}", r.x, r.y, None)
                    for i, r in enumerate(world.initial)
                ],
                token=token,
                at=now,
            )
            for answer, record in zip(answers, world.initial):
                errors[answer["id"]] = record.error
            set_scope_policy(ADMISSION, data={"prefix": scope, **config.admission}, actor=lead, at=now)
        agent = agent_factory(world)
        floor = lifecycle.rules().retrieve_at_least
        for task in world.tasks:
            with clock.running_at(_moment(task.step)) as now:
                started, cpu = time.perf_counter(), time.process_time()
                ticks = [cpu]

                def tick(part: str) -> None:
                    ticks.append(time.process_time())
                    result.part_cpu[part] = result.part_cpu.get(part, 0.0) + ticks[-1] - ticks[-2]

                ranked = retrieve_memory(scopes=[scope], k=K, min_confidence=floor, embedding=list(task.x), metric="l2")
                tick("retrieve")
                retrieval = record_retrieval(
                    token=token, scope=scope, query="", task_ref=f"task-{task.step}", entries=[r.entry for r in ranked]
                )
                tick("record_retrieval")
                neighbours = [Neighbour(tuple(r.entry.embedding), _stored_output(r.entry), r.distance) for r in ranked]
                y_hat = agent(task.x, neighbours, world.task_rng(task))
                error = abs(y_hat - task.y)
                passed = error <= config.passes_at
                tick("agent")
                feedback = record_feedback(
                    token=token, retrieval_id=retrieval.pk, outcome="success" if passed else "failure"
                )
                result.sent_for_recheck.update(c["id"] for c in feedback.changes if c["queued_for_recheck"])
                tick("feedback")
                submission = submit_candidate(
                    data=_candidate(scope, f"RegAgent task {task.step}", task.x, y_hat, error), token=token
                )
                errors[submission.entry.pk] = error
                tick("submit")
                due = list(config.daily_sweeps) if (task.step + 1) % DAY_STEPS == 0 else []
                due += [
                    name for name in config.sweeps if name in EVERY_STEP_SWEEPS or (task.step + 1) % sweep_every == 0
                ]
                for name in due:
                    run_sweep(name, as_of=now, triggered_by="replay")
                tick("sweeps")
                result.step_seconds.append(time.perf_counter() - started)
                result.step_cpu.append(ticks[-1] - cpu)
            result.successes.append(error <= SUCCESS_ERROR)
            result.errors.append(error)
            result.retrieved.update(r.entry.pk for r in ranked)
            if ranked:
                result.inherited.append((stats.mean(errors[r.entry.pk] for r in ranked), error))
        result.memory_size = Entry.objects.filter(scope=scope, status=Status.ACTIVE).count()
        result.lesson_errors = errors
    return result
