"""Reads for the conflicts queue: pairs of active entries whose advice contradicts, each read in a fixed
number of queries whatever the size of the page or of the table.

The conflicts one entry raised (a candidate contradicting ten near-identical lessons opens ten) are one
card: the queue lists the first of them, carrying the others as its `group`, and leaves the others out."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, Subquery, Window, prefetch_related_objects
from django.db.models.functions import RowNumber

from curation.rules import access, clock
from curation.models import Conflict, Entry, Evidence, RetrievedEntry
from curation.rules.similarity import merged_content

from .confidence import confidence_at_most
from .entries import summarise_evidence
from .paging import Page, capped_count, read_page
from .trust import trust_between

PAGE_SIZE = 20
RECENT_OUTCOMES = 5
GROUP_LIMIT = 50  # conflicts on one card; an entry that raised more gets its next card once these are decided


@dataclass(frozen=True)
class ConflictFilters:
    """Each filter on an entry matches when either entry of the pair matches it."""

    scope: str = ""
    kind: str = ""
    signal: str = ""
    detected_by: str = ""
    max_confidence: float | None = None  # either entry at most this confident
    older_than_days: int | None = None  # opened at least this many days ago
    # Provenance trust bounds by level name: either entry's trust within them.
    min_trust: str = ""
    max_trust: str = ""

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
        if self.min_trust or self.max_trust:
            q &= trust_between(self.min_trust, self.max_trust, "entry_a__") | trust_between(
                self.min_trust, self.max_trust, "entry_b__"
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
            or self.min_trust
            or self.max_trust
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


@dataclass(frozen=True)
class ConflictGroup:
    """The open conflicts one entry raised, shown as one card: the card's conflict first."""

    shared: Entry  # the entry that raised them, one side of each
    conflicts: list[Conflict]
    total: int  # how many it raised under the queue's filters (more than `conflicts` beyond GROUP_LIMIT)

    @property
    def others(self) -> list[tuple[Conflict, Entry]]:
        """Each conflict with the entry it sets against the shared one."""
        return [(c, c.entry_b if c.entry_a_id == self.shared.pk else c.entry_a) for c in self.conflicts]

    @property
    def members(self) -> list[str]:
        """What the card's forms post: each conflict with the versions its entries were read at."""
        return [f"{c.pk}:{c.entry_a.version}:{c.entry_b.version}" for c in self.conflicts]


def _raised_together(user, filters: ConflictFilters):
    """Open conflicts (under the filters) raised by the same entry as the outer query's conflict."""
    return open_conflicts(user, filters).filter(raised_by=OuterRef("raised_by"))


def _first_of_their_groups(user, filters: ConflictFilters):
    """The open conflicts that start a card: none raised by the same entry comes before them in the queue's
    order; each with how many its entry raised (`group_size`; NULL for a conflict with no raiser)."""
    earlier = _raised_together(user, filters).filter(
        Q(created_at__lt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), pk__lt=OuterRef("pk"))
    )
    size = _raised_together(user, filters).order_by().values("raised_by").annotate(n=Count("pk")).values("n")
    return open_conflicts(user, filters).filter(~Exists(earlier)).annotate(group_size=Subquery(size))


def _group_members(user, filters: ConflictFilters, raised_by: list[int], *, besides: list[int]) -> list[Conflict]:
    """The other open conflicts of these entries' cards, at most GROUP_LIMIT to a card with its first."""
    ranked = (
        open_conflicts(user, filters)
        .filter(raised_by__in=raised_by)
        .exclude(pk__in=besides)
        .annotate(nth=Window(RowNumber(), partition_by=[F("raised_by")], order_by=[F("created_at"), F("pk")]))
    )
    return list(ranked.filter(nth__lt=GROUP_LIMIT).select_related("entry_a", "entry_b").order_by("created_at", "pk"))


def _with_groups(user, filters: ConflictFilters, firsts: list[Conflict]) -> list[Conflict]:
    """Each card's `group` (None for a lone conflict) and both sides of every conflict shown: one query more
    than a page of lone conflicts when any card has a group, whatever their number."""
    grouped = {c.raised_by_id: c for c in firsts if (getattr(c, "group_size", None) or 1) > 1}
    members = _group_members(user, filters, list(grouped), besides=[c.pk for c in firsts]) if grouped else []
    by_raiser: dict[int, list[Conflict]] = {pk: [] for pk in grouped}
    for member in members:
        by_raiser[member.raised_by_id].append(member)
    for conflict in firsts:
        rest = by_raiser.get(conflict.raised_by_id) if grouped.get(conflict.raised_by_id) is conflict else None
        conflict.group = None
        if rest:
            shared = conflict.entry_a if conflict.entry_a_id == conflict.raised_by_id else conflict.entry_b
            conflict.group = ConflictGroup(shared, [conflict, *rest], max(conflict.group_size, len(rest) + 1))
    _with_sides([*firsts, *members])
    return firsts


def conflict_queue(
    user, filters: ConflictFilters = ConflictFilters(), *, cursor: str = "", page_size: int = PAGE_SIZE
) -> Page:
    """One page of cards, oldest first, keyset on (created_at, id) of each card's first conflict: 4 queries
    (the cards' conflicts with both entries, their evidence, their recent outcomes, the capped count of
    conflicts) whatever the page size, and one more for the rest of the cards' groups."""
    firsts = _first_of_their_groups(user, filters)
    return read_page(
        firsts.select_related("entry_a", "entry_b"),
        open_conflicts(user, filters),
        stamp="created_at",
        cursor=cursor,
        page_size=page_size,
        filters=filters,
        prepare=lambda page: _with_groups(user, filters, page),
    )


def conflict_card(user, conflict_id) -> Conflict:
    """One conflict (in any state) with what its card shows; Conflict.DoesNotExist outside the user's scopes."""
    conflict = visible_conflicts(user).select_related("entry_a", "entry_b", "resolved_by").get(pk=conflict_id)
    conflict.group = None
    return _with_sides([conflict])[0]


def conflict_group_card(user, conflict_id, filters: ConflictFilters = ConflictFilters()) -> Conflict:
    """The card of a conflict and the other open conflicts its entry raised (under the filters), as the
    queue shows it; a lone conflict's card when there are none left."""
    conflict = visible_conflicts(user).select_related("entry_a", "entry_b", "resolved_by").get(pk=conflict_id)
    conflict.group_size = (
        open_conflicts(user, filters).filter(raised_by=conflict.raised_by_id).count() if conflict.raised_by_id else 1
    )
    if conflict.state != Conflict.State.OPEN:
        conflict.group_size += 1  # itself, besides the open ones
    return _with_groups(user, filters, [conflict])[0]


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
