"""Reads for the conflicts queue: pairs of active entries whose advice contradicts, each read in a fixed
number of queries whatever the size of the page or of the table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Prefetch, Q, prefetch_related_objects

from curation.rules import access, clock
from curation.models import Conflict, Evidence, RetrievedEntry
from curation.rules.similarity import merged_content

from .confidence import confidence_at_most
from .entries import summarise_evidence
from .paging import Page, capped_count, read_page

PAGE_SIZE = 20
RECENT_OUTCOMES = 5


@dataclass(frozen=True)
class ConflictFilters:
    """Each filter on an entry matches when either entry of the pair matches it."""

    scope: str = ""
    kind: str = ""
    signal: str = ""
    detected_by: str = ""
    max_confidence: float | None = None  # either entry at most this confident
    older_than_days: int | None = None  # opened at least this many days ago

    def as_q(self, now=None) -> Q:
        q = Q()
        if self.scope:
            q &= access.under_scope(self.scope, "entry_a__scope") | access.under_scope(self.scope, "entry_b__scope")
        if self.kind:
            q &= Q(entry_a__kind=self.kind) | Q(entry_b__kind=self.kind)
        if self.signal:
            q &= Q(entry_a__signal=self.signal) | Q(entry_b__signal=self.signal)
        if self.detected_by:
            q &= Q(detected_by=self.detected_by)
        if self.max_confidence is not None:
            at = now or clock.now()
            q &= Q(confidence_at_most(self.max_confidence, at, "entry_a__")) | Q(
                confidence_at_most(self.max_confidence, at, "entry_b__")
            )
        if self.older_than_days:
            q &= Q(created_at__lte=(now or clock.now()) - datetime.timedelta(days=self.older_than_days))
        return q

    @property
    def active(self) -> bool:
        return bool(
            self.scope
            or self.kind
            or self.signal
            or self.detected_by
            or self.max_confidence is not None
            or self.older_than_days
        )


def visible_conflicts(user):
    """Conflicts whose two entries both lie in the user's scopes: one outside means the whole pair is."""
    prefixes = access.user_scope_prefixes(user)
    return Conflict.objects.filter(
        access.scope_q(prefixes, "entry_a__scope"), access.scope_q(prefixes, "entry_b__scope")
    )


def open_conflicts(user, filters: ConflictFilters):
    return visible_conflicts(user).filter(state=Conflict.State.OPEN).filter(filters.as_q())


def conflict_count(user, filters: ConflictFilters = ConflictFilters()) -> tuple[int, bool]:
    return capped_count(open_conflicts(user, filters))


def _with_sides(conflicts: list[Conflict]) -> list[Conflict]:
    """Both entries' evidence and their recent task outcomes, in two queries for the whole page."""
    entries = [c.entry_a for c in conflicts] + [c.entry_b for c in conflicts]
    uses = (
        RetrievedEntry.objects.filter(retrieval__feedback__isnull=False)
        .select_related("retrieval__feedback")
        .order_by("-created_at", "-id")
    )
    prefetch_related_objects(
        entries,
        Prefetch("evidence", queryset=Evidence.objects.order_by("observed_at", "id")),
        Prefetch("retrievals", queryset=uses[:RECENT_OUTCOMES], to_attr="recent_uses"),
    )
    for conflict in conflicts:
        conflict.merge_form = merge_defaults(conflict.entry_a, conflict.entry_b)
    summarise_evidence(entries)
    return conflicts


def conflict_queue(
    user, filters: ConflictFilters = ConflictFilters(), *, cursor: str = "", page_size: int = PAGE_SIZE
) -> Page:
    """One page of open conflicts, oldest first, keyset on (created_at, id): 4 queries (conflicts with
    both entries, their evidence, their recent outcomes, the capped count) whatever the page size."""
    qs = open_conflicts(user, filters)
    return read_page(
        qs.select_related("entry_a", "entry_b"),
        qs,
        stamp="created_at",
        cursor=cursor,
        page_size=page_size,
        filters=filters,
        prepare=_with_sides,
    )


def conflict_card(user, conflict_id) -> Conflict:
    """One conflict (in any state) with what its card shows; Conflict.DoesNotExist outside the user's scopes."""
    conflict = visible_conflicts(user).select_related("entry_a", "entry_b", "resolved_by").get(pk=conflict_id)
    return _with_sides([conflict])[0]


def _support(entry) -> tuple:
    """How well supported an entry is: its supporting evidence (prefetched), then its confidence."""
    return (sum(1 for e in entry.evidence.all() if e.polarity == "supports"), entry.confidence, -entry.pk)


def merge_defaults(a, b) -> dict:
    """What the merge form starts from: the broader scope (or the deepest common one); the better-supported
    entry's kind, trigger and text, with only the other's sentences that say something new; both entries'
    keywords and boundaries; and `sources`, what came from where."""
    best, other = (a, b) if _support(a) >= _support(b) else (b, a)
    content, (added,) = merged_content([best.content, other.content])
    if access.scope_covers(a.scope, b.scope):
        scope = a.scope
    elif access.scope_covers(b.scope, a.scope):
        scope = b.scope
    else:
        common = []
        for x, y in zip(a.scope.split("/"), b.scope.split("/")):
            if x != y:
                break
            common.append(x)
        scope = "/".join(common) or a.scope
    boundaries = list(dict.fromkeys(x for x in (best.boundary, other.boundary) if x))
    added_text = f"{len(added)} sentence(s) that say something new: “{' '.join(added)}”" if added else "nothing"
    return {
        "kind": best.kind,
        "scope": scope,
        "trigger": best.trigger,
        "content": content,
        "boundary": "\n".join(boundaries),
        "conditions": ", ".join(dict.fromkeys([*best.conditions, *other.conditions])),
        "sources": f"Kind, trigger and text from #{best.pk} (the better supported); added from #{other.pk}: "
        f"{added_text}. Keywords and boundaries from both.",
    }
