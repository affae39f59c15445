"""Every background sweep, by task name, in the order `run_lifecycle all` runs them. A new sweep is a
module with NAME, DESCRIPTION, thresholds() (its thresholds in words, for the Maintenance page) and
run(sweep), listed here; Celery tasks, the beat schedule's names, the
Maintenance page and `run_lifecycle` all read this list."""

from types import ModuleType

from . import (
    archive, auto_publish, capacity, conflicts, consolidation, decay, low_utility, review_due, revive, skill_nomination,
    unused, vacuum_purged,
)

SWEEP_MODULES: tuple[ModuleType, ...] = (
    decay, archive, revive, unused, low_utility, review_due, capacity, conflicts, consolidation, skill_nomination,
    auto_publish, vacuum_purged,
)

SWEEPS: dict[str, ModuleType] = {module.NAME: module for module in SWEEP_MODULES}
TASK_NAMES: tuple[str, ...] = tuple(SWEEPS)
TASK_DESCRIPTIONS: dict[str, str] = {name: module.DESCRIPTION for name, module in SWEEPS.items()}


def task_thresholds(name: str) -> str:
    """What the sweep's thresholds are, in words, with today's settings (each module's `thresholds()`)."""
    return SWEEPS[name].thresholds()
