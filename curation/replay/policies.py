"""The paper's policies as memoryadmin configuration, nothing else: an admission policy for the run's scope,
the sweeps that run after each step, and the settings those sweeps read. The replay applies them through
the product (services.scope_policies.set_scope_policy, settings.CURATION, run_sweep); no policy is coded
here.

Evaluators: the paper's coarse evaluators C1/C2/C3 pass a task when |ŷ − y| <= 1.6/1.4/1.2, the strict one
when <= 1.0. An evaluator's evidence item carries score = 1 − min(|ŷ − y|, 4) / 4, so "passes at |e| <= t"
is the `auto` rule "score >= 1 − t / 4"."""

from __future__ import annotations

from dataclasses import dataclass, field

EVALUATOR = "regagent-abs-error"
SCORE_RANGE = 4.0
STEP_HOURS = 1.0  # one task is one simulated hour
WINDOW_STEPS = 500  # periodic deletion's window W
HISTORY_MIN_RETRIEVALS = 3
HISTORY_BELOW = 0.5
CAPACITY = 100
K = 6  # records retrieved per task
# A wrong lesson counts against the recheck cards' recall once it was retrieved this often.
RECALL_MIN_RETRIEVALS = 5

ADDITION = {"fixed": None, "addall": None, "c1": 1.6, "c2": 1.4, "c3": 1.2, "strict": 1.0}
DELETION = {
    "periodic": ("unused",),
    "history": ("low_utility",),
    "combined": ("unused", "low_utility"),
    "capacity": ("capacity",),
}
# Sweeps that run after every step whatever the cadence (--sweep-every): the capacity sweep is what holds
# the scope at its capacity, and run less often the scope would hold more than that between its runs.
EVERY_STEP_SWEEPS = ("capacity",)
# The cadence of the other sweeps in `make bench-replay`: every fifth step. Their rules read windows of
# hundreds of steps, and a comparison with every step, seed by seed, is in docs/benchmarks.md.
BENCH_SWEEP_EVERY = 5
ROWS = (
    "fixed",
    "addall",
    "c1",
    "c2",
    "c3",
    "strict",
    "c1+periodic",
    "c1+history",
    "c1+combined",
    "strict+periodic",
    "strict+history",
    "strict+combined",
    "c1+capacity",
    "strict+capacity",
)
# The paper's Table (RegAgent): success rate % and final memory size, after PAPER_STEPS tasks.
PAPER_STEPS = 4000
PAPER = {
    "fixed": (67.53, 100),
    "addall": (55.48, 4100),
    "c1": (63.18, 3511),
    "c2": (65.78, 3347),
    "c3": (67.35, 3139),
    "strict": (70.95, 2938),
    "c1+periodic": (60.88, 1012),
    "c1+history": (62.10, 3205),
    "c1+combined": (59.32, 951),
    "strict+periodic": (67.65, 949),
    "strict+history": (69.80, 2286),
    "strict+combined": (66.58, 890),
}

# What the paper does not have, neutralised: confidence moves on outcomes, decay, the retrieval floor, the
# recheck a failure asks for, and periodic deletion sparing a record a success verified within the window
# (the paper's rule reads only a record's age and its retrievals in the window).
PAPER_RULES = {
    "OUTCOME_RULE": "steps",
    "SUCCESS_STEP": 0.0,
    "FAILURE_STEP": 0.0,
    "DECAY_FACTOR": 1.0,
    "RETRIEVE_AT_LEAST": 0.0,
    "RECHECK_ON_FAILURE": False,
    "UNUSED_SPARES_VERIFIED": False,
}
# The rule sets: the paper's (above); the product's defaults, whose outcome rule judges a lesson against the
# baseline (lift.py); and the product with the design notes' outcome rule (seed 001: +0.05 / -0.2).
RULE_SETS = ("paper", "seed", "product")
OUTCOME_RULE_OF = {"seed": "steps", "product": "lift"}
# The product's defaults that act on memory over time, run as the beat schedule runs them: once a day.
PRODUCT_DAILY_SWEEPS = ("decay", "archive")
DAY_STEPS = round(24 / STEP_HOURS)


def score_of(error: float) -> float:
    return 1.0 - min(abs(error), SCORE_RANGE) / SCORE_RANGE


@dataclass(frozen=True)
class Configuration:
    policy: str
    admission: dict  # for set_scope_policy(ADMISSION, ...) (without the prefix)
    passes_at: float  # |error| at or under which the policy's own evaluator passes a task
    sweeps: tuple[str, ...]  # after every step
    settings: dict = field(default_factory=dict)  # settings.CURATION overrides
    daily_sweeps: tuple[str, ...] = ()  # after every DAY_STEPS steps

    def curation_settings(self, scope: str) -> dict:
        return {**self.settings, **({"SCOPE_CAPACITY": {scope: CAPACITY}} if "capacity" in self.sweeps else {})}


def configuration(policy: str, rules: str = "paper") -> Configuration:
    """The product configuration of one of the paper's rows (ROWS), under the paper's rule set, the product's
    defaults, or the product's with the design notes' outcome rule (RULE_SETS). ValueError for an unknown
    policy or rule set."""
    if policy not in ROWS:
        raise ValueError(f"Unknown policy {policy!r}; choose one of {', '.join(ROWS)}.")
    if rules not in RULE_SETS:
        raise ValueError(f"--rules is {', '.join(RULE_SETS)}.")
    addition, _, deletion = policy.partition("+")
    threshold = ADDITION[addition]
    if addition == "fixed":
        admission = {"name": "fixed", "mode": "none"}
    elif addition == "addall":
        admission = {"name": "addall", "mode": "all"}
    else:
        admission = {
            "name": addition,
            "mode": "auto",
            "evaluator": EVALUATOR,
            "threshold": round(score_of(threshold), 6),
        }
    sweeps = DELETION.get(deletion, ())
    settings = {
        "UNUSED_WINDOW_DAYS": WINDOW_STEPS * STEP_HOURS / 24,
        "UNUSED_MAX_RETRIEVALS": 1,
        "LOW_UTILITY_MIN_RETRIEVALS": HISTORY_MIN_RETRIEVALS,
        "LOW_UTILITY_BELOW": HISTORY_BELOW,
        "CAPACITY_SPARES_UNRETRIEVED": True,
    }
    if rules == "paper":
        settings.update(PAPER_RULES)
    else:
        settings["OUTCOME_RULE"] = OUTCOME_RULE_OF[rules]
    daily = PRODUCT_DAILY_SWEEPS if rules != "paper" else ()
    return Configuration(policy, admission, threshold if threshold is not None else 1.0, sweeps, settings, daily)
