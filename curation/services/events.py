from django.utils import timezone

from curation.middleware import current_request_id
from curation.models import Entry, Event


def actor_label_for(actor) -> str:
    return actor.get_username() if actor is not None else "system"


def record_event(
    entry: Entry, *, actor, action: str, reason: str = "", before=None, after=None, actor_label: str = "", at=None
) -> Event:
    """Write the one Event of a decision; call it inside the decision's transaction."""
    event = build_event(entry, actor=actor, action=action, reason=reason, before=before, after=after,
                        actor_label=actor_label, at=at)
    event.save(force_insert=True)
    return event


def build_event(
    entry: Entry, *, actor, action: str, reason: str = "", before=None, after=None, actor_label: str = "", at=None
) -> Event:
    """The unsaved Event, for writers that insert many at once (bulk_create)."""
    return Event(
        entry=entry,
        entry_label=entry.label,
        actor=actor,
        actor_label=actor_label or actor_label_for(actor),
        action=action,
        reason=reason,
        before=before,
        after=after,
        request_id=current_request_id.get(),
        entry_version=entry.version,
        created_at=at or timezone.now(),
    )
