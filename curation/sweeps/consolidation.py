"""Consolidation: proposals to merge near-duplicate active entries of a scope, and to let a newer entry
supersede an outdated one. Only a reviewer's accepted proposal changes an entry. The scan lives here;
inserting a proposal (its row, its members and its Event) is the service's (services/consolidation.py)."""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, transaction

from curation.rules import clock, config
from curation.rules.contradiction import contradiction, parse_lesson
from curation.models import Entry, Status
from curation.selectors.forgets import all_tombstones, forgotten_among

# The scan fills MergeClusters; write_proposals inserts what it found as proposals, with their Events.
from curation.services.consolidation import MergeClusters, write_proposals
from curation.rules.similarity import words

from .engine import Sweep, detecting_sweep

NAME = "consolidation"
DESCRIPTION = (
    "Propose merging clusters of near-duplicate active entries of a scope, and superseding "
    "entries made outdated by a newer one; only an accepted proposal changes an entry."
)


def thresholds() -> str:
    return (
        f"Proposes a merge when two active entries of a scope share at least {merge_threshold():g} of "
        "their words (trigger and content); proposes that a newer entry supersede an older one when their triggers "
        f"share at least {supersede_trigger_threshold():g} of their words, their advice differs and "
        "the newer one is at least as confident."
    )


def run(sweep: Sweep) -> None:
    detecting_sweep(sweep, sweep_consolidation, lambda p: f"{p.kind} in {p.scope}: {p.reason}")


POOL = 500  # the scope's active entries a batch's entries are compared with, newest first
_FIELDS = (
    "id",
    "kind",
    "scope",
    "trigger",
    "content",
    "boundary",
    "conditions",
    "status",
    "version",
    "signal",
    "base_confidence",
    "last_verified_at",
    "decay_stopped_at",
    "created_at",
    "supersedes_id",
)


def merge_threshold() -> float:
    return config.CONSOLIDATE_MERGE_AT.value


def supersede_trigger_threshold() -> float:
    return config.CONSOLIDATE_SUPERSEDE_TRIGGER_AT.value


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@contextlib.contextmanager
def _consistent_snapshot():
    """Every read of the sweep sees the same moment: on PostgreSQL a REPEATABLE READ transaction (reads
    take no locks), when the caller has not already opened one."""
    with transaction.atomic():
        if connection.vendor == "postgresql" and connection.in_atomic_block and not connection.savepoint_ids:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


class _PrefixIndex:
    """Candidate pairs for a Jaccard threshold t without comparing every pair (prefix filtering, as in
    set-similarity joins): order each set's words rarest first; two sets with Jaccard >= t share a word
    among the first |S| - ceil(t*|S|) + 1 words of each. Common words ("first", "when") sit at the end,
    so they never make candidates on their own."""

    def __init__(self, sets: dict[int, frozenset], threshold: float, indexed_ids):
        self.sets, self.threshold = sets, threshold
        self.df: dict[str, int] = defaultdict(int)
        for ws in sets.values():
            for w in ws:
                self.df[w] += 1
        self.index: dict[str, list[int]] = defaultdict(list)
        for pk in indexed_ids:
            for w in self.prefix(pk):
                self.index[w].append(pk)

    def prefix(self, pk: int) -> list[str]:
        ordered = sorted(self.sets[pk], key=lambda w: (self.df[w], w))
        return ordered[: len(ordered) - math.ceil(self.threshold * len(ordered)) + 1] if ordered else []

    def candidates(self, pk: int) -> set[int]:
        return {other for w in self.prefix(pk) for other in self.index.get(w, ()) if other != pk}


@dataclass(frozen=True)
class ConsolidationSweep:
    examined: int
    proposed: list
    resume_after: int | None = None  # the last entry id done when the walk stopped early; None: complete

    @property
    def found(self) -> list:  # what the detecting sweep reports, as for conflicts
        return self.proposed


def sweep_consolidation(
    *,
    at=None,
    batch_size: int | None = None,
    pool_limit: int | None = None,
    changed_since=None,
    heartbeat: Callable[[], None] = lambda: None,
    after: int = 0,
    progress: Callable[[int], bool] | None = None,
) -> ConsolidationSweep:
    """Walk the active entries in keyset batches of id; per batch and scope, read that scope's active
    entries (the scope index, at most pool_limit) and compare each batch entry only with the candidates
    a prefix index finds for the two thresholds (text for merges, trigger for supersedes), never every
    pair of the table. Idempotent: a proposal
    for the same kind and entries is never made twice, and entries in an open proposal are left alone.

    With `changed_since`, only the entries changed since then are walked (each still against its whole
    scope): a pair of two unchanged entries was compared by an earlier run. `heartbeat` (the run's lease) is called
    once before the walk: the walk is one snapshot transaction, so a heartbeat written inside it would be
    seen only when it ends.

    An entry is compared with at most DETECTION_PARTNERS_PER_ENTRY of the candidates the prefix index
    finds, the newest first: a scope of thousands of near-identical entries then costs that many
    comparisons per entry, not one per pair. What it may miss: an older near duplicate or outdated entry
    beyond that many is not paired with this entry (a merge cluster still grows through the pairs it
    has, and CLUSTER_MAX caps a proposal anyway).

    The walk starts above `after` (a pass resumed) and, when given, calls `progress(last id)` after each
    batch, inside the snapshot transaction that also writes the proposals: True stops the walk there
    (`resume_after`), the proposals found so far are written, and the cursor commits with them."""
    now = at or clock.now()
    per_entry = config.DETECTION_PARTNERS_PER_ENTRY.value
    batch_size = batch_size or config.SWEEP_BATCH_SIZE.value
    pool_limit = pool_limit or POOL
    merge_at, trigger_at = merge_threshold(), supersede_trigger_threshold()
    clusters = MergeClusters()
    outdated: dict[tuple[int, int], str] = {}  # (older, newer) -> reason
    seen: dict[int, Entry] = {}  # only the entries found in a pair
    examined = 0
    heartbeat()
    with _consistent_snapshot():
        tombstones = all_tombstones()
        walked = Entry.objects.filter(status=Status.ACTIVE)
        changed_ids = None  # every entry is walked: each pair is compared from its lower id
        if changed_since is not None:
            walked = walked.filter(updated_at__gte=changed_since)
            changed_ids = set(walked.values_list("id", flat=True))
        resume_after = None
        while True:
            batch = list(walked.filter(pk__gt=after).only(*_FIELDS).order_by("id")[:batch_size])
            if not batch:
                break
            after = batch[-1].pk
            examined += len(batch)
            lessons: dict = {}  # per batch, and only for compared pairs: memory stays bounded

            def lesson(entry, lessons=lessons):
                if entry.pk not in lessons:
                    lessons[entry.pk] = parse_lesson(entry.trigger, entry.content)
                return lessons[entry.pk]

            by_scope: dict[str, list[Entry]] = defaultdict(list)
            for e in batch:
                by_scope[e.scope].append(e)
            for scope, group in by_scope.items():
                pool = list(
                    Entry.objects.filter(status=Status.ACTIVE, scope=scope).only(*_FIELDS).order_by("-id")[:pool_limit]
                )
                # A lesson that repeats a forgotten one is never proposed again (its tombstone).
                barred = forgotten_among(pool + group, tombstones)
                if barred:
                    pool = [p for p in pool if p.pk not in barred]
                    group = [e for e in group if e.pk not in barred]
                everyone = {p.pk: p for p in pool + group}
                text = {pk: words(f"{p.trigger} {p.content}") for pk, p in everyone.items()}
                trig_words = {pk: words(p.trigger) for pk, p in everyone.items()}
                by_text = _PrefixIndex(text, merge_at, [p.pk for p in pool])
                by_trigger = _PrefixIndex(trig_words, trigger_at, [p.pk for p in pool])
                for e in group:
                    ids = by_text.candidates(e.pk) | by_trigger.candidates(e.pk)
                    # each pair once: from its lower id when both are walked, else from the walked one
                    eligible = sorted(
                        (pk for pk in ids if pk > e.pk or (changed_ids is not None and pk not in changed_ids)),
                        reverse=True,
                    )[:per_entry]
                    for p in (everyone[pk] for pk in eligible):
                        if contradiction(lesson(e), lesson(p)):
                            continue  # opposite advice is a conflict, not a duplicate
                        score = _jaccard(text[e.pk], text[p.pk])
                        if score >= merge_at:
                            clusters.union(e.pk, p.pk, score)
                            seen.setdefault(e.pk, e)
                            seen.setdefault(p.pk, p)
                            continue
                        trig = _jaccard(words(e.trigger), words(p.trigger))
                        older, newer = (e, p) if (e.created_at, e.pk) < (p.created_at, p.pk) else (p, e)
                        if trig >= trigger_at and newer.confidence >= older.confidence:
                            seen.setdefault(e.pk, e)
                            seen.setdefault(p.pk, p)
                            outdated[(older.pk, newer.pk)] = (
                                f"#{newer.pk} is newer ({newer.created_at:%Y-%m-%d}, confidence {newer.confidence:.2f}) and "
                                f"covers the same trigger ({trig:.2f} alike) as #{older.pk} "
                                f"({older.created_at:%Y-%m-%d}, confidence {older.confidence:.2f}) with different advice"
                            )
            if len(batch) == batch_size and progress and progress(after):
                resume_after = after
                break
        proposed = write_proposals(clusters, outdated, seen, now)
    return ConsolidationSweep(examined=examined, proposed=proposed, resume_after=resume_after)
