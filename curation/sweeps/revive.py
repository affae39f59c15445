"""Revive: archived entries that received supporting external or independent evidence since they were
archived come back. SQL finds the (few) candidates, the rule lifecycle.revival() decides each, and one
statement writes the batch."""

from collections import defaultdict

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from curation import lifecycle
from curation.models import Entry, Evidence, Signal, Status

from .engine import ROW_FIELDS, Sweep, keyset_batches, locked
from .expressions import decayed_confidence
from .writes import lifecycle_fields, write_events

NAME = "revive"
DESCRIPTION = "Bring back archived entries that received supporting external or independent evidence since."


def _decide(sweep: Sweep, entries) -> dict[int, lifecycle.Revival]:
    evidence = defaultdict(list)
    rows = Evidence.objects.filter(entry_id__in=[e.pk for e in entries]).values_list(
        "entry_id", "signal", "polarity", "observed_at", "created_at")
    for entry_id, *item in rows:
        evidence[entry_id].append(tuple(item))
    decisions = {}
    for e in entries:
        decision = lifecycle.revival(evidence[e.pk], archived_at=e.archived_at, now=sweep.as_of, r=sweep.rules)
        if decision:
            decisions[e.pk] = decision
    return decisions


def _reason(decision: lifecycle.Revival) -> str:
    return f"revived by {decision.signal} evidence observed {decision.verified_at:%Y-%m-%d %H:%M}"


def _revive(sweep: Sweep, rows: list[Entry]) -> int:
    decisions = _decide(sweep, rows)
    changed_rows = [e for e in rows if e.pk in decisions]
    before = {e.pk: lifecycle_fields(e) for e in changed_rows}
    for e in changed_rows:
        d = decisions[e.pk]
        e.status, e.base_confidence, e.confidence = Status.ACTIVE, d.base_confidence, d.confidence
        e.last_verified_at, e.archived_at, e.archive_reason = d.verified_at, None, ""
        e.version += 1
        e.updated_at = timezone.now()  # when it was written, as in set_state
    Entry.objects.bulk_update(
        changed_rows, ["status", "base_confidence", "last_verified_at", "archived_at", "archive_reason",
                       "version", "updated_at"])
    # The effective value from the same SQL as decay, so a decay run right after changes nothing.
    ids = [e.pk for e in changed_rows]
    Entry.objects.filter(pk__in=ids).update(confidence=decayed_confidence(sweep.as_of, sweep.rules))
    fresh = {e.pk: e for e in Entry.objects.filter(pk__in=ids).only(*ROW_FIELDS)}
    write_events(sweep, [
        (e, "revive", _reason(decisions[e.pk]), before[e.pk], lifecycle_fields(fresh[e.pk])) for e in changed_rows
    ])
    return len(changed_rows)


def run(sweep: Sweep) -> None:
    fresh_support = Evidence.objects.filter(
        entry=OuterRef("pk"), polarity=Evidence.Polarity.SUPPORTS,
        signal__in=[Signal.INDEPENDENT, Signal.EXTERNAL],
        created_at__gt=OuterRef("archived_at"), created_at__lte=sweep.as_of,
    )

    def matching(batch):
        return Entry.objects.filter(batch, archived_at__isnull=False).filter(Exists(fresh_support))

    for batch, count in keyset_batches(Status.ARCHIVED, sweep.batch_size):
        if sweep.dry_run:
            for e in matching(batch).order_by("id")[:sweep.samples_left]:
                d = _decide(sweep, [e]).get(e.pk)
                if d:
                    sweep.sample(f"#{e.pk} {_reason(d)}: base {d.base_confidence:.2f}, confidence {d.confidence:.3f}")
            changed = len(_decide(sweep, list(matching(batch).only(*ROW_FIELDS))))
        else:
            with transaction.atomic():
                changed = _revive(sweep, locked(matching(batch)))
        sweep.batch_done(count, changed)
