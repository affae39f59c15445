"""A reviewer's queue preferences: the filters and the view (cards or compact list) they left a queue with."""

from __future__ import annotations

from curation.models import QueuePreference


def remember_queue(user, queue: str, **changes) -> None:
    """Keep `changes` (filters=..., compact=...) for the user's queue; writes only what differs."""
    preference, created = QueuePreference.objects.get_or_create(user=user, queue=queue, defaults=changes)
    if not created and any(getattr(preference, field) != value for field, value in changes.items()):
        for field, value in changes.items():
            setattr(preference, field, value)
        preference.save(update_fields=[*changes, "updated_at"])
