"""Every background sweep, by task name, in the order `run_lifecycle all` runs them, each with its place on
the beat schedule. A new sweep is a module with NAME, DESCRIPTION, thresholds() (its thresholds in words,
for the Maintenance page) and run(sweep), listed here with its schedule; Celery tasks, the beat schedule,
the Maintenance page and `run_lifecycle` all read this list."""

from dataclasses import dataclass
from types import ModuleType

from celery.schedules import crontab

from . import (
    archive,
    auto_publish,
    capacity,
    conflicts,
    consolidation,
    decay,
    injection_scan,
    low_utility,
    partitions,
    review_due,
    revive,
    skill_nomination,
    unused,
    vacuum_purged,
)


@dataclass(frozen=True)
class Registered:
    module: ModuleType
    schedule: crontab  # in UTC (CELERY_TIMEZONE)
    # A run that waited longer than this is stale: the next scheduled one will do the same work.
    expires_seconds: int = 3600


# Decay runs before archive (archive recomputes the decayed value itself, so the order only affects what the
# Maintenance page shows in between); capacity runs often so an approval that goes over a scope's budget is
# settled within minutes. The queues' detection: conflicts hourly (ingest compares a candidate with a few
# partners only), consolidation nightly after the archiving sweeps.
REGISTERED: tuple[Registered, ...] = (
    Registered(decay, crontab(minute=0, hour=2)),
    Registered(archive, crontab(minute=20, hour=2)),
    Registered(revive, crontab(minute=40)),
    Registered(unused, crontab(minute=0, hour=3)),
    Registered(low_utility, crontab(minute=20, hour=3)),
    Registered(review_due, crontab(minute=0, hour=6)),
    Registered(capacity, crontab(minute="*/15"), expires_seconds=15 * 60),
    Registered(conflicts, crontab(minute=10)),
    Registered(consolidation, crontab(minute=40, hour=3)),
    Registered(skill_nomination, crontab(minute=0, hour=4)),
    # A new detector version reaches every entry within the hour; a run with nothing stamped by an older one
    # is one indexed read per status.
    Registered(injection_scan, crontab(minute=25)),
    Registered(auto_publish, crontab(minute=50)),
    # Queued when a forget is approved; the schedule catches a purge whose message was lost (a run with no new
    # purge is one indexed read).
    Registered(vacuum_purged, crontab(minute="*/30")),
    # Daily, months ahead: a missed run or two still leaves every month its partition before it starts.
    Registered(partitions, crontab(minute=30, hour=1)),
)

SWEEP_MODULES: tuple[ModuleType, ...] = tuple(entry.module for entry in REGISTERED)
SWEEPS: dict[str, ModuleType] = {module.NAME: module for module in SWEEP_MODULES}
TASK_NAMES: tuple[str, ...] = tuple(SWEEPS)
TASK_DESCRIPTIONS: dict[str, str] = {name: module.DESCRIPTION for name, module in SWEEPS.items()}


def task_thresholds(name: str) -> str:
    """What the sweep's thresholds are, in words, with today's settings (each module's `thresholds()`)."""
    return SWEEPS[name].thresholds()


def beat_schedule() -> dict[str, dict]:
    """Celery beat's entries (CELERY_BEAT_SCHEDULE), one per sweep: task curation.rules.lifecycle.<name>."""
    return {
        f"lifecycle-{entry.module.NAME}": {
            "task": f"curation.rules.lifecycle.{entry.module.NAME}",
            "schedule": entry.schedule,
            "kwargs": {"triggered_by": "beat"},
            "options": {"expires": entry.expires_seconds},
        }
        for entry in REGISTERED
    }
