"""Revive: archived entries that received supporting external or independent evidence since they were
archived come back. SQL finds the (few) candidates, the rule lifecycle.revival() decides each, and one
statement writes the batch. An entry that repeats a forgotten lesson (a near duplicate left unticked when
it was forgotten) stays archived: the write path would refuse it."""

from collections import defaultdict

from django.db import transaction
from django.db.models import Exists, OuterRef

from curation.rules import lifecycle
from curation.models import Entry, EventAction, Evidence, Signal, Status
from curation.selectors.forgets import all_tombstones, forgotten_among

from .engine import Sweep, keyset_batches, locked, rows_of, write_batch

NAME = "revive"
DESCRIPTION = "Bring back archived entries that received supporting external or independent evidence since."


def _decide(sweep: Sweep, entries: list[dict]) -> dict[int, lifecycle.Revival]:
    evidence = defaultdict(list)
    rows = Evidence.objects.filter(entry_id__in=[e["id"] for e in entries]).values_list(
        "entry_id", "signal", "polarity", "observed_at", "created_at"
    )
    for entry_id, *item in rows:
        evidence[entry_id].append(tuple(item))
    decisions = {}
    for e in entries:
        decision = lifecycle.revival(
            evidence[e["id"]], archived_at=e["archived_at"], now=sweep.as_of, rules=sweep.rules
        )
        if decision:
            decisions[e["id"]] = decision
    return _without_forgotten(decisions)


def _without_forgotten(decisions: dict[int, lifecycle.Revival]) -> dict[int, lifecycle.Revival]:
    """The revivals of entries no tombstone matches (their text read only when there are tombstones)."""
    tombstones = all_tombstones() if decisions else []
    if not tombstones:
        return decisions
    lessons = Entry.objects.filter(pk__in=list(decisions)).only("id", "scope", "trigger", "content")
    barred = forgotten_among(lessons, tombstones)
    return {pk: d for pk, d in decisions.items() if pk not in barred}


def _reason(decision: lifecycle.Revival) -> str:
    return f"revived by {decision.signal} evidence observed {decision.verified_at:%Y-%m-%d %H:%M}"


def _revive(sweep: Sweep, rows: list[dict]) -> int:
    decisions = _decide(sweep, rows)
    return write_batch(
        sweep,
        [row for row in rows if row["id"] in decisions],
        expected_status=Status.ARCHIVED,
        action=EventAction.REVIVE,
        reason_of=lambda row: _reason(decisions[row["id"]]),
        row_values={
            pk: {"base_confidence": d.base_confidence, "last_verified_at": d.verified_at} for pk, d in decisions.items()
        },
    )


def thresholds() -> str:
    return (
        "Brings back an archived entry when supporting evidence from an independent or external source arrived "
        "after it was archived (an agent's own say-so never does), unless its confidence would still be below "
        f"the archive threshold, {lifecycle.rules().archive_below:g}."
    )


def run(sweep: Sweep) -> None:
    fresh_support = Evidence.objects.filter(
        entry=OuterRef("pk"),
        polarity=Evidence.Polarity.SUPPORTS,
        signal__in=[Signal.INDEPENDENT, Signal.EXTERNAL],
        created_at__gt=OuterRef("archived_at"),
        created_at__lte=sweep.as_of,
    )

    def matching(batch):
        return Entry.objects.filter(batch, archived_at__isnull=False).filter(Exists(fresh_support))

    for batch, count in keyset_batches(Status.ARCHIVED, sweep.batch_size):
        if sweep.dry_run:
            for row in rows_of(matching(batch), sweep.samples_left):
                d = _decide(sweep, [row]).get(row["id"])
                if d:
                    sweep.sample(
                        f"#{row['id']} {_reason(d)}: base {d.base_confidence:.2f}, confidence {d.confidence:.3f}"
                    )
            changed = len(_decide(sweep, rows_of(matching(batch))))
        else:
            with transaction.atomic():
                changed = _revive(sweep, locked(matching(batch)))
        sweep.batch_done(count, changed)
