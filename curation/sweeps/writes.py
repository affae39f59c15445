"""How a sweep changes the state of a batch: one statement for the batch, one Event per entry."""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from curation.models import Entry, Event

from .engine import ROW_FIELDS, Sweep


class ConcurrentChange(Exception):
    """A batch's rows changed between reading and writing them; the batch is rolled back."""


def lifecycle_fields(entry: Entry) -> dict:
    """What a background change can touch, as an Event's before/after (the text does not change)."""
    return {
        "status": entry.status,
        "base_confidence": round(entry.base_confidence, 4),
        "confidence": round(entry.confidence, 4),
        "last_verified_at": entry.last_verified_at.isoformat() if entry.last_verified_at else None,
        "queue_reason": entry.queue_reason,
        "queued_at": entry.queued_at.isoformat() if entry.queued_at else None,
        "archive_reason": entry.archive_reason,
        "version": entry.version,
    }


def write_events(sweep: Sweep, changes: list[tuple[Entry, str, str, dict, dict]]) -> None:
    """One Event per changed entry: (entry, action, reason, before, after). Inside the batch's transaction."""
    Event.objects.bulk_create(
        Event(
            entry_id=entry.pk,
            entry_label=entry.label,
            actor=None,
            actor_label=sweep.actor_label,
            action=action,
            reason=reason,
            before=before,
            after=after,
            request_id=sweep.request_id,
            entry_version=after["version"],
            created_at=sweep.as_of,
        )
        for entry, action, reason, before, after in changes
    )


def set_state(sweep: Sweep, rows: list[Entry], *, expected_status: str, action: str, reason_of, **updates) -> int:
    """Apply the same update to every locked row in one statement, bump versions, write one Event each."""
    if not rows:
        return 0
    ids = [e.pk for e in rows]
    # updated_at is when the row was written (the wall clock, not the sweep's as-of moment): the
    # detecting sweeps read what changed since their last run by it, also after a replay of the past.
    written = Entry.objects.filter(pk__in=ids, status=expected_status).update(
        **updates, version=F("version") + 1, updated_at=timezone.now()
    )
    if written != len(ids):
        raise ConcurrentChange(f"{sweep.task}: {len(ids) - written} of {len(ids)} rows changed under the sweep")
    fresh = {e.pk: e for e in Entry.objects.filter(pk__in=ids).only(*ROW_FIELDS)}
    write_events(sweep, [
        (e, action, reason_of(e), lifecycle_fields(e), lifecycle_fields(fresh[e.pk])) for e in rows
    ])
    return written
