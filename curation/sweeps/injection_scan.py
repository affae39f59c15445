"""Injection scan: the entries whose text an older injection detector read (rules/injection.DETECTOR_VERSION)
are read again. One with a finding not yet on its card is quarantined: flagged, withheld from agents (who read
"withheld for review, #id") and, when active, put in the candidates queue for a lead, who approves it (the
quarantine lifted) or retires it. The others are stamped, so the next run reads nothing of them."""

from django.db import transaction

from curation.models import Entry, EventAction, QueueReason, Status
from curation.rules import injection
from curation.services.entry_writes import stamp_scanned, write_entry

from .engine import Sweep

NAME = "injection_scan"
DESCRIPTION = "Read again, with the newest injection detector, the entries an older one read; withhold what it flags."

# Pending candidates (a reviewer could approve what the older detector missed), active entries (agents read
# them) and archived ones (a revival or a reactivation makes them active again).
STATUSES = (Status.ACTIVE, Status.PENDING, Status.ARCHIVED)
_TEXT = injection.SCANNED_FIELDS


def thresholds() -> str:
    return (
        f"Reads the active, pending and archived entries stamped by a detector older than version "
        f"{injection.DETECTOR_VERSION}; an active one it flags is withheld from agents and queued for a lead."
    )


def _stale_batches(status: str, size: int):
    """Ids of entries in `status` an older detector read, in keyset batches on the (scanned_with, id) index."""
    last = 0
    while True:
        ids = list(
            Entry.objects.filter(status=status, scanned_with__lt=injection.DETECTOR_VERSION, id__gt=last)
            .order_by("id")
            .values_list("id", flat=True)[:size]
        )
        if not ids:
            return
        yield ids
        last = ids[-1]


def _new_flags(entry: Entry) -> list[dict]:
    found = injection.scan_fields({c: getattr(entry, c) for c in _TEXT})
    return [f.as_flag() for f in found if f.as_flag() not in entry.flags]


def _quarantine(sweep: Sweep, entry: Entry, new: list[dict]) -> None:
    changes = {"flags": [*entry.flags, *new], "scanned_with": injection.DETECTOR_VERSION}
    if entry.status == Status.ACTIVE:  # a lead decides it: the queue's lead-only reason
        changes.update(queue_reason=QueueReason.INJECTION_FOUND, queued_at=entry.queued_at or sweep.as_of)
    write_entry(
        entry,
        changes,
        action=EventAction.QUARANTINE,
        actor_label=sweep.actor_label,
        reason="possible injection: " + ", ".join(flag["detail"] for flag in new),
        at=sweep.as_of,
    )


def run(sweep: Sweep) -> None:
    for status in STATUSES:
        for ids in _stale_batches(status, sweep.batch_size):
            with transaction.atomic():
                rows = Entry.objects.filter(pk__in=ids, status=status).order_by("id")
                rows = list(rows if sweep.dry_run else rows.select_for_update())
                flagged = [(entry, new) for entry in rows if (new := _new_flags(entry))]
                if sweep.dry_run:
                    for entry, new in flagged[: sweep.samples_left]:
                        sweep.sample(f"#{entry.pk} withheld: {', '.join(flag['detail'] for flag in new)}")
                else:
                    for entry, new in flagged:
                        _quarantine(sweep, entry, new)
                    stamp_scanned([entry.pk for entry in rows if entry.pk not in {e.pk for e, _ in flagged}])
            sweep.batch_done(len(rows), len(flagged))
