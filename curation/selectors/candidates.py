"""Reads for the candidates queue: a page of waiting entries, their count and one card, each in a fixed
number of queries whatever the size of the page or of the table."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, Q

from curation.rules import access, clock, config
from curation.models import CONFIDENCE_FIELDS, Entry, Event, Evidence, QueueReason, SimilarEntry, Status
from curation.rules.permissions import SETTLE

from .confidence import confidence_at_least, confidence_at_most
from .entries import visible_entries
from .paging import Page, capped_count, encode_keyset, read_page
from .trust import trust_between, trust_why


@dataclass(frozen=True)
class QueueFilters:
    scope: str = ""
    kind: str = ""
    signal: str = ""
    reason: str = ""  # "new", "recheck" or "lead" (reviewers disagree: a lead decides)
    min_confidence: float | None = None
    max_confidence: float | None = None
    q: str = ""
    deferred: bool = False  # show the deferred entries instead of the ready ones
    # Provenance trust bounds, by level name ("agent", "person"): "what rests on one agent's word" is at most agent.
    min_trust: str = ""
    max_trust: str = ""

    def as_q(self, now) -> Q:
        q = Q(queued_at__gt=now) if self.deferred else Q(queued_at__isnull=False, queued_at__lte=now)
        if self.scope:
            q &= access.under_scope(self.scope)
        if self.kind:
            q &= Q(kind=self.kind)
        if self.signal:
            q &= Q(signal=self.signal)
        if self.reason == "new":
            q &= Q(queue_reason__in=["new", "deferred"])
        elif self.reason == "recheck":
            q &= Q(queue_reason__startswith="recheck")
        elif self.reason == "lead":
            q &= Q(queue_reason__in=QueueReason.for_leads())
        if self.min_confidence is not None:
            q &= Q(confidence_at_least(self.min_confidence, now))
        if self.max_confidence is not None:
            q &= Q(confidence_at_most(self.max_confidence, now))
        q &= trust_between(self.min_trust, self.max_trust)
        if self.q:
            for word in self.q.split()[:8]:
                q &= Q(trigger__icontains=word) | Q(content__icontains=word) | Q(boundary__icontains=word)
        return q

    @property
    def active(self) -> bool:
        return self != QueueFilters(deferred=self.deferred)


def encode_cursor(entry: Entry) -> str:
    return encode_keyset(entry.queued_at, entry.pk)


def queue_base(user, filters: QueueFilters, now=None):
    """The entries the user's queue shows under `filters`. A candidate two reviewers disagreed on, or an
    active entry withheld as a possible injection, is a lead's: it leaves the reviewers' queue (and its count)
    and stays in the leads'."""
    now = now or clock.now()
    qs = visible_entries(user).filter(filters.as_q(now))
    return qs if user.has_perm(SETTLE) else qs.exclude(queue_reason__in=QueueReason.for_leads())


def queue_count(user, filters: QueueFilters, now=None) -> tuple[int, bool]:
    """How many entries match, counted up to a cap."""
    return capped_count(queue_base(user, filters, now))


def waiting_on_others(user, filters: QueueFilters, now=None) -> int:
    """Of those, the candidates the user gave a first approval: only another reviewer can act on them (one
    query, on the queue's rows only)."""
    return (
        queue_base(user, filters, now)
        .filter(first_approval_by=user, status=Status.PENDING)
        .exclude(queue_reason=QueueReason.NEEDS_LEAD)
        .count()
    )


# What an entry holds that no card shows: the agent's embedding (a list of floats, kilobytes of JSON a row)
# is read by retrieval, never by a reviewer.
UNSHOWN = ("embedding",)


def _card_prefetches(user) -> tuple[Prefetch, Prefetch]:
    """What a queue card shows besides the entry: its evidence (`card_evidence`) and its still-active similar
    entries within the user's scopes (`card_similar`; one in an ancestor or sibling scope the user does not
    review is neither shown nor offered as a merge target). Lists, not the related managers: a manager
    prefetched through a queryset costs a queryset clone per entry, a tenth of a page's Python time."""
    similar = (
        SimilarEntry.objects.filter(similar__status=Status.ACTIVE)
        .filter(access.scope_q(access.user_scope_prefixes(user), "similar__scope"))
        .select_related("similar")
        .defer(*(f"similar__{f}" for f in UNSHOWN))
        .order_by("-score")
    )
    return (
        Prefetch("evidence", queryset=Evidence.objects.order_by("observed_at", "id"), to_attr="card_evidence"),
        Prefetch("similar_links", queryset=similar, to_attr="card_similar"),
    )


def candidate_queue(user, filters: QueueFilters, *, cursor: str = "", page_size: int | None = None, now=None) -> Page:
    """One page of the queue, oldest first, keyset-paginated on (queued_at, id): 4 queries
    (entries, their evidence, their similar entries, the capped count) whatever the page size."""
    qs = queue_base(user, filters, now or clock.now())
    cards = qs.select_related("first_approval_by").defer(*UNSHOWN).prefetch_related(*_card_prefetches(user))
    return read_page(
        cards,
        qs,
        stamp="queued_at",
        cursor=cursor,
        page_size=page_size or config.QUEUE_PAGE_SIZE.value,
        filters=filters,
        prepare=with_card_notes,
    )


def with_card_notes(cards: list) -> list:
    """What a page of cards shows beyond its rows: why each is back (with_queued_why) and why it has its
    provenance trust level (`trust_why`, from the evidence the card already holds: no query)."""
    for card in cards:
        card.trust_why = trust_why(card, card.card_evidence)
    return with_queued_why(cards)


def with_queued_why(cards: list) -> list:
    """Each card sent back for a recheck, with `queued_why`: the reason of the Event that queued it (an
    outcome's figures, a sweep's threshold, a person's words), which the badge only names. One query, for
    the page's rechecks only: the Event written in the same moment as the queueing (its `at`)."""
    rechecks = {c.pk: c for c in cards if c.queued_at and c.queue_reason.startswith("recheck")}
    for card in cards:
        card.queued_why = ""
    if rechecks:
        events = (
            Event.objects.filter(entry_id__in=list(rechecks), created_at__in={c.queued_at for c in rechecks.values()})
            .order_by("created_at", "id")
            .values_list("entry_id", "created_at", "reason")
        )
        for entry_id, at, reason in events:
            if at == rechecks[entry_id].queued_at and reason:
                rechecks[entry_id].queued_why = reason
    return cards


# What a line of the compact list shows (and its keyset): not the content, nor the search columns.
LINE_FIELDS = (
    "id",
    "scope",
    "kind",
    "signal",
    *CONFIDENCE_FIELDS,
    "trigger",
    "version",
    "queued_at",
    "queue_reason",
    "first_approval_by__username",
)


def candidate_lines(user, filters: QueueFilters, *, cursor: str = "", page_size: int | None = None, now=None) -> Page:
    """One page of the queue as the compact list shows it (one line a lesson): the entries and the capped
    count, 2 queries; a line's evidence and similar entries load when it is expanded (queue_card)."""
    qs = queue_base(user, filters, now or clock.now())
    return read_page(
        qs.select_related("first_approval_by").only(*LINE_FIELDS),
        qs,
        stamp="queued_at",
        cursor=cursor,
        page_size=page_size or config.QUEUE_PAGE_SIZE.value,
        filters=filters,
    )


def queue_card(user, entry_id) -> Entry:
    """One card of the queue, with what the card shows."""
    card = (
        visible_entries(user)
        .select_related("first_approval_by")
        .defer(*UNSHOWN)
        .prefetch_related(*_card_prefetches(user))
        .get(pk=entry_id)
    )
    return with_card_notes([card])[0]
