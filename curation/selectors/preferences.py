"""A reviewer's queue preferences (services/preferences.py writes them)."""

from __future__ import annotations

from curation.models import QueuePreference


def queue_preference(user, queue: str) -> QueuePreference:
    """The user's preference for a queue; an unsaved default (no filters, cards) when there is none."""
    return QueuePreference.objects.filter(user=user, queue=queue).first() or QueuePreference(user=user, queue=queue)
