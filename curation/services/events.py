"""The Event of a decision, about its subject: an entry, a conflict, a consolidation proposal, a skill
proposal or an agent token (Event has one nullable link per kind; the database refuses an Event with
none). `also` names a second subject the same Event is about, e.g. the conflict an entry's resolution
decided, so the conflict's own history finds it.

`entry_label` holds the subject's `label` whatever its kind: a copy that stays readable when the row it
points at changes. A change of an entry's state or content does not call these directly: it goes through
entry_writes, which checks and bumps the version and writes the Event with what changed in the entry's one
snapshot (rules/event_deltas.py)."""

from __future__ import annotations

from django.db import models

from curation.rules import clock
from curation.infra.middleware import current_request_id
from curation.models import EVENT_SUBJECT_FIELDS, Entry, Event, EventAction

from .rows import insert_rows, new_instance

# Which Event link each kind of subject fills.
SUBJECT_LINKS: dict[type[models.Model], str] = {
    Event._meta.get_field(link).related_model: link for link in EVENT_SUBJECT_FIELDS
}


def actor_label_for(actor) -> str:
    return actor.get_username() if actor is not None else "system"


def subject_link(subject: models.Model) -> str:
    """The Event column that points at `subject`."""
    for model, link in SUBJECT_LINKS.items():
        if isinstance(subject, model):
            return link
    raise TypeError(f"An Event cannot be about a {type(subject).__name__}.")


def record_event(
    subject,
    *,
    actor,
    action: EventAction,
    reason: str = "",
    before=None,
    after=None,
    actor_label: str = "",
    at=None,
    also=(),
    request_id: str | None = None,
) -> Event:
    """Write the one Event of a decision about `subject`; call it inside the decision's transaction."""
    event = build_event(
        subject,
        actor=actor,
        action=action,
        reason=reason,
        before=before,
        after=after,
        actor_label=actor_label,
        at=at,
        also=also,
        request_id=request_id,
    )
    event.save(force_insert=True)
    return event


def record_events(events) -> list[Event]:
    """Write many Events built with build_event in one insert (a sweep's batch, a bulk decision): the rows
    bulk_create writes, as one JSON document on PostgreSQL (rows.insert_rows)."""
    events = list(events)
    insert_rows(events)
    return events


def build_event(
    subject,
    *,
    actor,
    action: EventAction,
    reason: str = "",
    before=None,
    after=None,
    actor_label: str = "",
    at=None,
    also=(),
    request_id: str | None = None,
) -> Event:
    """The unsaved Event, for writers that insert many at once (bulk_create). `request_id` defaults to
    the current request's; a sweep passes its run's."""
    event = new_instance(
        Event,
        entry_label=subject.label,
        actor=actor,
        actor_label=actor_label or actor_label_for(actor),
        action=action,
        reason=reason,
        before=before,
        after=after,
        request_id=current_request_id.get() if request_id is None else request_id,
        # The version of the entry it is about (as subject or as second subject): the entry's history
        # reads in version order.
        entry_version=next((about.version for about in (subject, *also) if isinstance(about, Entry)), None),
        created_at=at or clock.now(),
    )
    for about in (subject, *also):
        setattr(event, subject_link(about), about)
    return event


def rewrite_purged_text(event: Event, *, before, after, reason: str, entry_label: str) -> None:
    """The one rewrite of a written Event: a forget's purge replacing forgotten text (services/forgets.py).
    On PostgreSQL the append-only trigger refuses this; there the purge is the function curation_forget_purge."""
    Event.objects.filter(pk=event.pk).update(before=before, after=after, reason=reason, entry_label=entry_label)
