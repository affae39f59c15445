"""Reads for the Maintenance page and the agent tokens page."""

from __future__ import annotations

from curation.models import AgentToken, TaskRun


def recent_runs(task_names, limit: int = 5) -> dict[str, list[TaskRun]]:
    """The latest runs of each task, newest first (one indexed query per task)."""
    return {task: list(TaskRun.objects.filter(task=task).order_by("-started_at", "-id")[:limit]) for task in task_names}


def agent_tokens() -> list[AgentToken]:
    """Every agent token, the live ones first, by name."""
    return list(AgentToken.objects.order_by("revoked_at", "name"))
