"""Reads used by views, the API and tasks. Each one runs a fixed number of queries, whatever the
size of the page or the table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Prefetch, Q
from django.utils import timezone

from curation import access
from curation.models import Entry, Event, Evidence, SimilarEntry, Status
from curation.similarity import similarity

CHAIN_LIMIT = 50
SIMILAR_POOL = 500


def visible_entries(user):
    """Every entry the user may see: all of them, or those under the user's scope prefixes."""
    return Entry.objects.filter(access.scope_q(access.user_scope_prefixes(user)))


def visible_entry(user, entry_id) -> Entry:
    """The entry, or Entry.DoesNotExist when it does not exist *or* lies outside the user's scopes."""
    return visible_entries(user).get(pk=entry_id)


def similar_active_entries(entry: Entry, *, limit: int = 5) -> list[tuple[Entry, float]]:
    """Active entries in overlapping scopes that say nearly the same thing (portable word measure).
    Reads a bounded pool: the most recent active entries of the entry's scope, its ancestors and below."""
    threshold = settings.CURATION["SIMILAR_THRESHOLD"]
    pool = (
        Entry.objects.filter(status=Status.ACTIVE)
        .filter(Q(scope__in=access.scope_ancestors(entry.scope)) | Q(scope__startswith=entry.scope + "/"))
        .exclude(pk=entry.pk)
        .order_by("-id")[:SIMILAR_POOL]
    )
    text = f"{entry.trigger} {entry.content}"
    scored = [(other, similarity(text, f"{other.trigger} {other.content}")) for other in pool]
    scored = [(other, round(score, 3)) for other, score in scored if score >= threshold]
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]


# --- the candidates queue ---------------------------------------------------------------------------


class BadCursor(ValueError):
    pass


@dataclass(frozen=True)
class QueueFilters:
    scope: str = ""
    kind: str = ""
    signal: str = ""
    reason: str = ""           # "new" or "recheck"
    min_confidence: float | None = None
    max_confidence: float | None = None
    q: str = ""
    deferred: bool = False     # show the deferred entries instead of the ready ones

    def as_q(self, now) -> Q:
        q = Q(queued_at__gt=now) if self.deferred else Q(queued_at__isnull=False, queued_at__lte=now)
        if self.scope:
            q &= Q(scope=self.scope) | Q(scope__startswith=self.scope.rstrip("/") + "/")
        if self.kind:
            q &= Q(kind=self.kind)
        if self.signal:
            q &= Q(signal=self.signal)
        if self.reason == "new":
            q &= Q(queue_reason__in=["new", "deferred"])
        elif self.reason == "recheck":
            q &= Q(queue_reason__startswith="recheck")
        if self.min_confidence is not None:
            q &= Q(confidence__gte=self.min_confidence)
        if self.max_confidence is not None:
            q &= Q(confidence__lte=self.max_confidence)
        if self.q:
            for word in self.q.split()[:8]:
                q &= Q(trigger__icontains=word) | Q(content__icontains=word) | Q(boundary__icontains=word)
        return q


@dataclass
class QueuePage:
    entries: list[Entry]
    next_cursor: str = ""
    count: int = 0
    count_is_capped: bool = False
    filters: QueueFilters = field(default_factory=QueueFilters)

    @property
    def count_label(self) -> str:
        return f"{self.count:,}+" if self.count_is_capped else f"{self.count:,}"


def encode_cursor(entry: Entry) -> str:
    """URL-safe as it is: UTC with a Z, no '+' to be read back as a space."""
    stamp = entry.queued_at.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp}~{entry.pk}"


def decode_cursor(cursor: str) -> tuple[datetime.datetime, int]:
    try:
        stamp, _, pk = cursor.rpartition("~")
        moment = datetime.datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            raise ValueError
        return moment, int(pk)
    except ValueError as exc:
        raise BadCursor("This page link is broken; start again from the first page.") from exc


def queue_base(user, filters: QueueFilters, now=None):
    now = now or timezone.now()
    return visible_entries(user).filter(filters.as_q(now))


def queue_count(user, filters: QueueFilters, now=None) -> tuple[int, bool]:
    """How many entries match, counted up to a cap: a bounded index scan, never a COUNT(*) of the table."""
    cap = settings.CURATION["QUEUE_COUNT_CAP"]
    n = queue_base(user, filters, now).order_by().values("pk")[: cap + 1].count()
    return min(n, cap), n > cap


def _card_prefetches() -> tuple[Prefetch, Prefetch]:
    """What a queue card shows besides the entry: its evidence and its still-active similar entries."""
    similar = SimilarEntry.objects.filter(similar__status=Status.ACTIVE).select_related("similar").order_by("-score")
    return (
        Prefetch("evidence", queryset=Evidence.objects.order_by("observed_at", "id")),
        Prefetch("similar_links", queryset=similar),
    )


def candidate_queue(user, filters: QueueFilters, *, cursor: str = "", page_size: int | None = None, now=None) -> QueuePage:
    """One page of the queue, oldest first, keyset-paginated on (queued_at, id): 4 queries
    (entries, their evidence, their similar entries, the capped count) whatever the page size."""
    page_size = page_size or settings.CURATION["QUEUE_PAGE_SIZE"]
    now = now or timezone.now()
    qs = queue_base(user, filters, now)
    if cursor:
        moment, pk = decode_cursor(cursor)
        # The `>=` bound lets the index range-scan from the cursor; the OR only sorts out ties.
        qs = qs.filter(Q(queued_at__gte=moment), Q(queued_at__gt=moment) | Q(pk__gt=pk))
    rows = list(qs.order_by("queued_at", "id").prefetch_related(*_card_prefetches())[: page_size + 1])
    next_cursor = encode_cursor(rows[page_size - 1]) if len(rows) > page_size else ""
    count, capped = queue_count(user, filters, now)
    return QueuePage(rows[:page_size], next_cursor, count, capped, filters)


def queue_card(user, entry_id) -> Entry:
    """One card of the queue, with what the card shows."""
    return visible_entries(user).prefetch_related(*_card_prefetches()).get(pk=entry_id)


# --- the entry page ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineItem:
    at: datetime.datetime
    kind: str            # "event" or "evidence"
    item: Event | Evidence
    changes: tuple = ()  # (field, before, after) for the fields an event changed


def event_changes(event: Event) -> tuple:
    before, after = event.before or {}, event.after or {}
    if not before:
        return ()
    return tuple(
        (key, before.get(key), value) for key, value in after.items() if key != "version" and before.get(key) != value
    )


def entry_timeline(entry: Entry) -> list[TimelineItem]:
    """Every Event and Evidence of the entry in the order they were recorded (2 queries)."""
    items = [
        TimelineItem(e.created_at, "event", e, event_changes(e))
        for e in Event.objects.filter(entry=entry).order_by("created_at", "id")
    ]
    items += [TimelineItem(e.created_at, "evidence", e) for e in Evidence.objects.filter(entry=entry).order_by("created_at", "id")]
    # Evidence first at equal times: it arrived with (and caused) the event beside it.
    items.sort(key=lambda t: (t.at, 0 if t.kind == "evidence" else 1, t.item.pk))
    return items


def supersedes_chain(user, entry: Entry) -> tuple[list[Entry], list[Entry]]:
    """(older entries this one replaces, newest last; newer entries that replace it), within the user's
    scopes. Walks at most CHAIN_LIMIT steps each way."""
    visible = visible_entries(user)
    older: list[Entry] = []
    current = entry
    while current.supersedes_id and len(older) < CHAIN_LIMIT:
        current = visible.filter(pk=current.supersedes_id).first()
        if current is None:
            break
        older.insert(0, current)
    newer: list[Entry] = []
    frontier = [entry.pk]
    while frontier and len(newer) < CHAIN_LIMIT:
        step = list(visible.filter(supersedes_id__in=frontier).order_by("id")[: CHAIN_LIMIT])
        newer += step
        frontier = [e.pk for e in step]
    return older, newer


def entry_history(user, entry: Entry) -> dict:
    """The entry page as data: what the JSON export returns."""
    older, newer = supersedes_chain(user, entry)

    def stamp(value):
        return value.isoformat() if value else None

    return {
        "entry": {
            "id": entry.pk,
            **entry.snapshot(),
            "last_verified_at": stamp(entry.last_verified_at),
            "hit_count": entry.hit_count,
            "retrieval_count": entry.retrieval_count,
            "utility_sum": entry.utility_sum,
            "utility_n": entry.utility_n,
            "last_retrieved_at": stamp(entry.last_retrieved_at),
            "source_task": entry.source_task,
            "created_by": entry.created_by_label,
            "created_at": stamp(entry.created_at),
            "updated_at": stamp(entry.updated_at),
            "supersedes": entry.supersedes_id,
        },
        "supersedes_chain": {"older": [e.pk for e in older], "newer": [e.pk for e in newer]},
        "timeline": [
            {
                "type": "event",
                "at": stamp(t.at),
                "actor": t.item.actor_label,
                "action": t.item.action,
                "reason": t.item.reason,
                "before": t.item.before,
                "after": t.item.after,
                "request_id": t.item.request_id,
            }
            if t.kind == "event"
            else {
                "type": "evidence",
                "at": stamp(t.at),
                "recorded_by": t.item.recorded_by_label,
                "kind": t.item.kind,
                "signal": t.item.signal,
                "polarity": t.item.polarity,
                "excerpt": t.item.excerpt,
                "task_ref": t.item.task_ref,
                "observed_at": stamp(t.item.observed_at),
            }
            for t in entry_timeline(entry)
        ],
    }
