"""Run a background curation task once, synchronously, as of a given moment: for operators, replays and tests.

python manage.py run_lifecycle decay
python manage.py run_lifecycle all --at 2026-12-01T02:00:00Z
python manage.py run_lifecycle archive --dry-run
"""

import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from curation.models import TaskRun
from curation import sweeps
from curation.rules import clock


def parse_moment(value: str) -> datetime.datetime:
    """An ISO 8601 time; without a zone it is UTC (the console's time zone)."""
    try:
        moment = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise CommandError(f"--at {value!r} is not an ISO 8601 time, e.g. 2026-12-01T02:00:00Z") from None
    return timezone.make_aware(moment, datetime.timezone.utc) if timezone.is_naive(moment) else moment


class Command(BaseCommand):
    help = "Run one background curation task (or all of them, in order) once, now or as of --at."

    def add_arguments(self, parser):
        parser.add_argument("task", choices=[*sweeps.TASK_NAMES, "all"], help="the task to run, or all")
        parser.add_argument("--at", dest="at", help="run as of this ISO 8601 time (default: now)")
        parser.add_argument("--dry-run", action="store_true", help="print what would change and change nothing")
        parser.add_argument("--batch-size", type=int, help="rows per batch (default: the SWEEP_BATCH_SIZE setting)")
        parser.add_argument(
            "--full",
            action="store_true",
            help="conflicts and consolidation: read every active entry, not only those changed "
            "since the last successful run",
        )

    def handle(self, *args, task, at=None, dry_run=False, batch_size=None, full=False, **options):
        as_of = parse_moment(at) if at else clock.now()
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        tasks = sweeps.TASK_NAMES if task == "all" else (task,)
        failed = []
        for name in tasks:
            try:
                run, sweep = sweeps.run_sweep(
                    name, as_of=as_of, dry_run=dry_run, triggered_by="command", batch_size=batch_size, full=full
                )
            except Exception as exc:  # recorded on the TaskRun; go on with the next task, fail at the end
                self.stderr.write(f"{name}: failed: {type(exc).__name__}: {exc}")
                failed.append(name)
                continue
            self._report(name, run, sweep)
        if failed:
            raise CommandError(f"failed: {', '.join(failed)} (see the Maintenance page for the run records)")

    def _report(self, name, run, sweep):
        stamp = f"as of {run.as_of:%Y-%m-%d %H:%M:%S} UTC"
        if run.state == TaskRun.State.SKIPPED:
            self.stdout.write(f"{name}: skipped: another {name} run holds the lock (run #{run.pk})")
            return
        if run.dry_run:
            self.stdout.write(
                f"{name} (dry run, {stamp}): would change {sweep.changed} of {sweep.examined} rows examined"
            )
            for line in sweep.samples:
                self.stdout.write(f"  {line}")
            if sweep.changed > len(sweep.samples):
                self.stdout.write(f"  ... and {sweep.changed - len(sweep.samples)} more")
            return
        self.stdout.write(f"{name} ({stamp}): examined {sweep.examined}, changed {sweep.changed} (run #{run.pk})")
