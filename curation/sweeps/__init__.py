"""Background curation: decay, archive, revive, periodic and history-based deletion, review-due rechecks,
the capacity budget, skill nomination, and the detecting sweeps of the review queues (conflicts,
consolidation proposals), which only open queue items and change no entry.

`engine` holds what every sweep shares (the batch loop, dry runs, the detecting runner), `runs` the run
record and the lock, `registry` the list of tasks; each sweep is a short module of its own."""

from .engine import SAMPLE_LIMIT, Sweep
from .registry import SWEEPS, TASK_DESCRIPTIONS, TASK_NAMES, task_thresholds
from .runs import run_sweep

__all__ = ["SAMPLE_LIMIT", "SWEEPS", "TASK_DESCRIPTIONS", "TASK_NAMES", "Sweep", "run_sweep", "task_thresholds"]
