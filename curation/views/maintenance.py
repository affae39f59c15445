"""The Maintenance page: what the background curation tasks did, for leads and auditors; a lead can
start any task now (it is queued for a worker, as of the moment the button was pressed)."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from kombu.exceptions import OperationalError as BrokerOperationalError

from curation.rules import clock, config
from curation.rules.permissions import RUN_TASKS, can_view_maintenance, require
from curation.selectors.maintenance import recent_runs
from curation.sweeps import TASK_DESCRIPTIONS, TASK_NAMES, task_thresholds
from curation.tasks import TASKS


def _schedules() -> dict[str, str]:
    by_task = {}
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        name = entry["task"].rsplit(".", 1)[-1]
        schedule = entry["schedule"]
        fields = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
        if all(hasattr(schedule, f"_orig_{f}") for f in fields):
            by_task[name] = "cron " + " ".join(str(getattr(schedule, f"_orig_{f}")) for f in fields) + " UTC"
        else:
            by_task[name] = str(schedule)
    return by_task


def _seconds(run) -> float | None:
    return (run.finished_at - run.started_at).total_seconds() if run.finished_at else None


@require_GET
@require(can_view_maintenance, "The Maintenance page is for leads and auditors.")
def page(request):
    runs = recent_runs(TASK_NAMES)
    schedules = _schedules()
    tasks = [
        {
            "name": name,
            "description": TASK_DESCRIPTIONS[name],
            "thresholds": task_thresholds(name),
            "schedule": schedules.get(name, "not scheduled"),
            "runs": [(run, _seconds(run)) for run in runs[name]],
        }
        for name in TASK_NAMES
    ]
    return render(
        request,
        "curation/maintenance.html",
        {
            "tasks": tasks,
            "capacity": sorted(config.SCOPE_CAPACITY.value.items()),
        },
    )


@require_POST
@require(RUN_TASKS, "Only leads start background tasks.")
def run_now(request, task):
    if task not in TASK_NAMES:
        raise Http404(f"There is no background task called {task!r}.")
    as_of = clock.now()
    try:
        TASKS[task].apply_async(  # a lead is waiting for it: the interactive queue, not behind the nightly sweeps
            kwargs={"as_of": as_of.isoformat(), "triggered_by": f"lead:{request.user.get_username()}"},
            queue=settings.TASK_QUEUE_INTERACTIVE,
        )
    except BrokerOperationalError:
        messages.error(request, f"Could not reach the task queue: {task} was not started. Try again in a minute.")
        return redirect("curation:maintenance")
    messages.success(
        request, f"Queued {task} as of {as_of:%Y-%m-%d %H:%M:%S} UTC; its run appears below when a worker picks it up."
    )
    return redirect("curation:maintenance")
