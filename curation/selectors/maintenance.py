"""Reads for the Maintenance page and the agent tokens page."""

from __future__ import annotations

from curation import access
from curation.models import AgentToken, TaskRun


def recent_runs(task_names, limit: int = 5) -> dict[str, list[TaskRun]]:
    """The latest runs of each task, newest first (one indexed query per task)."""
    return {task: list(TaskRun.objects.filter(task=task).order_by("-started_at", "-id")[:limit]) for task in task_names}


def agent_tokens(user) -> list[AgentToken]:
    """The agent tokens whose scopes all lie within the user's grants (every token for a user without
    grants), the live ones first, by name. Filtered here rather than in SQL: the scopes are a JSON list,
    and the tokens are a short list."""
    tokens = AgentToken.objects.order_by("revoked_at", "name")
    return [token for token in tokens if access.user_can_see_all(user, token.scopes)]
