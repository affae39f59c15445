"""Conflict detection: a conflict for each pair of active entries that overlap and give opposite advice.
Ingest compares a candidate with a few partners only; this reads every entry changed since the last run
against its whole partner pool. The scan lives here; opening a Conflict (its row and its Events) is the
service's, shared with ingest (services/conflicts.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass


from curation.rules import clock, config, contradiction
from curation.rules.contradiction import parse_lesson
from curation.models import Conflict, Entry, Status
from curation.selectors.partners import DETECTION_FIELDS, partner_pool

# The detection's steps shared with ingest: a pair's key, whether two entries contradict, comparing a few
# entries with their partners and opening what that finds, and opening the conflicts found (the inserts).
from curation.services.conflicts import PARTNER_POOL, contradicts, detect_and_open, open_conflicts, pair_key

from .engine import Sweep, detecting_sweep

NAME = "conflicts"
DESCRIPTION = (
    "Open a conflict for each pair of active entries that overlap and give opposite advice "
    "(ingest compares a candidate with a few partners only; this reads them all)."
)


def thresholds() -> str:
    return (
        f"Opens a conflict when two active entries' triggers share at least {contradiction.TRIGGER_MIN_SHARED} "
        f"words and overlap by at least {contradiction.TRIGGER_JACCARD:g} of their words (or at least "
        f"{contradiction.TRIGGER_CONTAINMENT:g} of one trigger's words are in the other), and one says to do what the other says "
        "not to do."
    )


def run(sweep: Sweep) -> None:
    detecting_sweep(sweep, sweep_conflicts, lambda c: f"#{c.entry_a_id} and #{c.entry_b_id}: {c.reason}")


# The incremental sweep looks up this many changed entries' partners per query (at most PARTNER_POOL each).
CHANGED_PER_QUERY = 100


def partners_per_entry() -> int:
    """How many partners a sweep compares one entry with, most relevant first (those that mention its
    action words most, then the newest). It keeps a scope of thousands of near-identical entries from
    costing a comparison of every pair; what it may miss: a contradiction with a partner ranked below
    that many is found only if the partner's own comparisons reach the entry."""
    return config.DETECTION_PARTNERS_PER_ENTRY.value


@dataclass(frozen=True)
class SweepResult:
    examined: int
    compared: int
    opened: list
    resume_after: int | None = None  # the last entry id done when the walk stopped early; None: complete

    @property
    def found(self) -> list:  # what the detecting sweep reports, as for consolidation
        return self.opened


def sweep_conflicts(
    *,
    at=None,
    batch_size: int | None = None,
    pool_limit: int | None = None,
    changed_since=None,
    heartbeat: Callable[[], None] = lambda: None,
    after: int = 0,
    progress: Callable[[int], bool] | None = None,
) -> SweepResult:
    """Walk the active entries in keyset batches of id. Per batch, per scope, read the partners in that
    scope and its ancestors that mention one of the group's action words (index lookups, at most
    pool_limit each; descendants are covered when the batch holding them looks up), then compare only
    pairs that share an action word with opposite polarity. Idempotent: a known pair is never raised
    again, so a second run opens nothing.

    With `changed_since`, only the entries changed (activated, edited, revived, used) since then are
    walked: a pair of two unchanged entries was compared by an earlier run. Each is compared with the
    partners above, at and below its scope, as at ingest but with the sweep's pool. Either way an entry is
    compared with at most partners_per_entry() partners. `heartbeat` is called after each batch (the
    sweep's run renews its lease).

    The walk starts above `after` (a pass resumed) and, when given, calls `progress(last id)` after each
    batch, whose conflicts are written by then; True stops the walk there (`resume_after`)."""
    now = at or clock.now()
    batch_size = batch_size or config.SWEEP_BATCH_SIZE.value
    per_entry = partners_per_entry()
    if changed_since is not None:
        return _sweep_changed(
            changed_since,
            now=now,
            batch_size=batch_size,
            pool=min(pool_limit or PARTNER_POOL, per_entry),
            heartbeat=heartbeat,
            after=after,
            progress=progress,
        )
    examined = compared = 0
    opened: list[Conflict] = []
    while True:
        batch = list(
            Entry.objects.filter(status=Status.ACTIVE, pk__gt=after).only(*DETECTION_FIELDS).order_by("id")[:batch_size]
        )
        if not batch:
            break
        after = batch[-1].pk
        examined += len(batch)
        lessons = {e.pk: parse_lesson(e.trigger, e.content) for e in batch}
        by_scope: dict[str, list[Entry]] = defaultdict(list)
        for e in batch:
            if lessons[e.pk].directives:
                by_scope[e.scope].append(e)
        found: dict[tuple[int, int], str] = {}
        raised_by: dict[tuple[int, int], int] = {}
        entries: dict[int, Entry] = {}
        for scope, group in by_scope.items():
            stems = set().union(*(lessons[e.pk].search_words for e in group))
            partners = partner_pool(scope, stems, limit=pool_limit or PARTNER_POOL, descendants=False)
            # An in-memory index of the partners by (action word, polarity): only opposite pairs meet.
            index: dict[tuple[str, bool], list[Entry]] = defaultdict(list)
            for p in partners:
                if p.pk not in lessons:
                    lessons[p.pk] = parse_lesson(p.trigger, p.content)
                for key in lessons[p.pk].action_keys:
                    index[key].append(p)
            for e in group:
                seen = set()
                for verb, positive in lessons[e.pk].action_keys:
                    for p in index.get((verb, not positive), ()):
                        pair = pair_key(e, p)
                        if p.pk == e.pk or pair in found or p.pk in seen or len(seen) >= per_entry:
                            continue
                        seen.add(p.pk)
                        compared += 1
                        reason = contradicts(e, lessons[e.pk], p, lessons[p.pk])
                        if reason:
                            found[pair] = reason
                            raised_by[pair] = e.pk
                            entries[e.pk], entries[p.pk] = e, p
        opened += open_conflicts(found, entries, detected_by="sweep", at=now, raised_by=raised_by)
        heartbeat()
        if len(batch) == batch_size and progress and progress(after):
            return SweepResult(examined=examined, compared=compared, opened=opened, resume_after=after)
    return SweepResult(examined=examined, compared=compared, opened=opened)


def _sweep_changed(
    changed_since,
    *,
    now,
    batch_size: int,
    pool: int,
    heartbeat: Callable[[], None],
    after: int,
    progress: Callable[[int], bool] | None,
) -> SweepResult:
    examined = compared = 0
    opened: list[Conflict] = []
    changed = Entry.objects.filter(status=Status.ACTIVE, updated_at__gte=changed_since)
    while batch := list(changed.filter(pk__gt=after).only(*DETECTION_FIELDS).order_by("id")[:batch_size]):
        after = batch[-1].pk
        examined += len(batch)
        # Each entry brings up to `pool` partners: a few entries per query keep the rows in memory bounded.
        for start in range(0, len(batch), CHANGED_PER_QUERY):
            found, n = detect_and_open(batch[start : start + CHANGED_PER_QUERY], detected_by="sweep", at=now, pool=pool)
            opened += found
            compared += n
        heartbeat()
        if len(batch) == batch_size and progress and progress(after):
            return SweepResult(examined=examined, compared=compared, opened=opened, resume_after=after)
    return SweepResult(examined=examined, compared=compared, opened=opened)
