"""Reads for the Maintenance page."""

from __future__ import annotations

from curation.models import TaskRun


def recent_runs(task_names, limit: int = 5) -> dict[str, list[TaskRun]]:
    """The latest runs of each task, newest first (one indexed query per task)."""
    return {task: list(TaskRun.objects.filter(task=task).order_by("-started_at", "-id")[:limit]) for task in task_names}
