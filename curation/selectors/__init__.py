"""Reads used by views, the API and tasks. Each one runs a fixed number of queries, whatever the
size of the page or the table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef, Prefetch, Q
from django.utils import timezone

from curation import access
from curation.models import Entry, Event, Evidence, SimilarEntry, SkillSource, Status
from curation.similarity import jaccard, similarity, words

CHAIN_LIMIT = 50
SIMILAR_POOL = 500


def visible_entries(user):
    """Every entry the user may see: all of them, or those under the user's scope prefixes."""
    return Entry.objects.filter(access.scope_q(access.user_scope_prefixes(user)))


def visible_entry(user, entry_id) -> Entry:
    """The entry, or Entry.DoesNotExist when it does not exist *or* lies outside the user's scopes."""
    return visible_entries(user).get(pk=entry_id)


SIMILAR_POOL_POSTGRES = 20


def any_word_tsquery_sql(text_sql: str) -> str:
    """SQL for the English tsquery that matches any word of `text_sql` (plainto_tsquery ANDs them), NULL
    when no word is left after the stop words."""
    return f"CAST(NULLIF(replace(CAST(plainto_tsquery('english', {text_sql}) AS text), '&', '|'), '') AS tsquery)"


def overlapping_entries_sql(columns: str) -> str:
    """For each row of `c` (see outer_rows_sql): the active entries of its scope, its ancestors and the
    scopes below it that mention one of its lookup words. Two halves, each one index lookup: the
    (scope, word) keys of migration 0010 for the scope and its ancestors (only entries that mention a
    word are read), and the scope-prefix range below it (~>=~ / ~<~ compare bytes: the scopes that start
    with "<scope>/", served by the varchar_pattern_ops index). Apart, neither half re-evaluates the
    other's condition on every row, as an OR of the two would."""
    return f"""
        SELECT {columns} FROM curation_entry e
        WHERE e.status = 'active' AND e.id <> c.id
          AND curation_scoped_lexemes(e.scope, e.search_vector) && c.keys
        UNION ALL
        SELECT {columns} FROM curation_entry e
        WHERE e.status = 'active' AND e.id <> c.id AND e.scope ~>=~ c.below AND e.scope ~<~ c.below_end
          AND COALESCE(e.search_vector @@ c.lookup, false)
    """


def outer_rows_sql() -> str:
    """The `c` rows of overlapping_entries_sql, from the parallel arrays of outer_params: the entry's
    id and text, the index keys and the query of its lookup words (any may match; the fallback words
    when none is left after PostgreSQL drops its stop words), the query its partners are ranked by, and
    the bounds of the range below its scope."""
    return f"""
        WITH c AS MATERIALIZED (  -- computed once per row, not once per entry compared with it
            SELECT w.id, w.text, w.below, w.below_end,
                   curation_scoped_query(string_to_array(w.ancestors, '|'), w.words) AS keys,
                   {any_word_tsquery_sql("w.words")} AS lookup,
                   {any_word_tsquery_sql("COALESCE(w.rank, w.words)")} AS query
            FROM (
                -- the lookup words, or the fallback words when PostgreSQL keeps none of them (all stop
                -- words, such as "over" in "never over-provision the pool")
                SELECT u.*, CASE WHEN numnode(plainto_tsquery('english', u.lookup)) = 0 THEN u.fallback
                                 ELSE u.lookup END AS words
                FROM unnest(CAST(%(ids)s AS bigint[]), CAST(%(texts)s AS text[]), CAST(%(lookup)s AS text[]),
                            CAST(%(fallback)s AS text[]), CAST(%(rank)s AS text[]), CAST(%(ancestors)s AS text[]),
                            CAST(%(below)s AS text[]), CAST(%(below_end)s AS text[]))
                     AS u(id, text, lookup, fallback, rank, ancestors, below, below_end)
            ) AS w
        )
    """


def outer_params(entries, lookup_of, rank_of=None, fallback_of=None) -> dict:
    """Parameters of outer_rows_sql: `lookup_of(entry)` the words a partner must mention, `rank_of(entry)`
    the words partners are ranked by (the lookup words unless given), `fallback_of(entry)` the words
    looked up instead when PostgreSQL keeps none of the lookup words (the ranking words unless given)."""
    fallback_of = fallback_of or rank_of or lookup_of
    return {
        "ids": [e.pk for e in entries],
        "texts": [f"{e.trigger} {e.content}" for e in entries],
        "lookup": [lookup_of(e) for e in entries],
        "fallback": [fallback_of(e) for e in entries],
        "rank": [rank_of(e) if rank_of else None for e in entries],  # None: the words looked up
        "ancestors": ["|".join(access.scope_ancestors(e.scope)) for e in entries],
        "below": [e.scope + "/" for e in entries],
        "below_end": [e.scope + "0" for e in entries],  # "0" is the character after "/"
    }


def _situation_words(entry: Entry) -> str:
    """What a near duplicate must mention: a word of the trigger or the conditions (the situation)."""
    return " ".join([entry.trigger, *(c for c in entry.conditions or () if isinstance(c, str))])


def similar_active_entries_many(entries, *, limit: int = 5) -> dict[int, list[tuple[int, float]]]:
    """similar_active_entries for many entries at once: on PostgreSQL one query (a LATERAL join over
    the entries; the index keys pick the few entries of the overlapping scopes that share words with
    each, trigram similarity is computed on the best-ranked of those only), planned once for a whole
    batch; elsewhere one lookup per entry."""
    entries = list(entries)
    if connection.vendor != "postgresql" or not entries:
        return {entry.pk: _similar_portable(entry, limit) for entry in entries}
    found: dict[int, list[tuple[int, float]]] = {entry.pk: [] for entry in entries}
    with connection.cursor() as cursor:
        cursor.execute(
            outer_rows_sql() + f"""
            SELECT c.id, s.id, s.score
            FROM c CROSS JOIN LATERAL (
                SELECT scored.id, scored.score
                FROM (
                    -- similarity() outside the ranked pool: computed for its few rows, not every match;
                    -- OFFSET 0 keeps it computed once per row (not again in the WHERE below)
                    SELECT pool.id, similarity(pool.trigger || ' ' || pool.content, c.text) AS score
                    FROM (
                        SELECT m.id, m.trigger, m.content
                        FROM ({overlapping_entries_sql("e.id, e.trigger, e.content, e.search_vector")}) AS m
                        ORDER BY ts_rank(m.search_vector, c.query) DESC, m.id DESC
                        LIMIT %(pool)s
                    ) AS pool
                    OFFSET 0
                ) AS scored
                WHERE scored.score >= %(threshold)s
                ORDER BY scored.score DESC, scored.id DESC
                LIMIT %(limit)s
            ) AS s
            """,
            {**outer_params(entries, _situation_words, lambda e: f"{e.trigger} {e.content}"),
             "pool": SIMILAR_POOL_POSTGRES,
             "threshold": settings.CURATION["SIMILAR_THRESHOLD"], "limit": limit},
        )
        for entry_id, other_id, score in cursor.fetchall():
            found[entry_id].append((other_id, round(float(score), 3)))
    return found


def similar_active_entries(entry: Entry, *, limit: int = 5) -> list[tuple[int, float]]:
    """(id, score) of active entries in overlapping scopes that say nearly the same thing: trigram
    similarity on PostgreSQL, the portable word measure elsewhere. Reads a bounded pool."""
    return similar_active_entries_many([entry], limit=limit)[entry.pk]


def _similar_portable(entry: Entry, limit: int) -> list[tuple[int, float]]:
    """Word Jaccard over the most recent active entries of the overlapping scopes."""
    threshold = settings.CURATION["SIMILAR_THRESHOLD"]
    text = f"{entry.trigger} {entry.content}"
    pool = (
        Entry.objects.filter(status=Status.ACTIVE)
        .filter(Q(scope__in=access.scope_ancestors(entry.scope)) | Q(scope__startswith=entry.scope + "/"))
        .exclude(pk=entry.pk)
        .order_by("-id")
        .values_list("id", "trigger", "content")[:SIMILAR_POOL]
    )
    scored = [(pk, round(similarity(text, f"{trigger} {content}"), 3)) for pk, trigger, content in pool]
    scored = [(pk, score) for pk, score in scored if score >= threshold]
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


def encode_keyset(moment: datetime.datetime, pk: int) -> str:
    """A keyset page cursor (time, id), URL-safe as it is: UTC with a Z, no '+' to be read back as a space."""
    stamp = moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp}~{pk}"


def encode_cursor(entry: Entry) -> str:
    return encode_keyset(entry.queued_at, entry.pk)


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


# --- retrieval for agents -----------------------------------------------------------------------------
# One selector, so that a later "published versions" feature can read a snapshot instead of live rows.

RETRIEVAL_POOL_FACTOR = 4
NEAR_DUPLICATE = 0.8
_QUERY_WORDS = 12


@dataclass(frozen=True)
class Ranked:
    entry: Entry
    score: float


def retrievable_scopes(scope: str, token_scopes) -> list[str]:
    """The asked scope and its ancestors, cut to what the token's prefixes cover."""
    return [s for s in access.scope_ancestors(scope) if any(access.scope_covers(p, s) for p in token_scopes)]


# What an answer and its context block show of an entry: the ranking query fetches these and no more.
RETRIEVED_FIELDS = ("id", "kind", "scope", "trigger", "content", "conditions", "boundary", "confidence", "signal",
                    "last_verified_at", "fingerprint")


# An approved skill replaces its source entries: agents read the skill (GET /api/v1/skills), and the entries
# come back when the skill is retired. Skills are few, so this anti-join costs a probe of a tiny table.
_NOT_WITHHELD_SQL = """NOT EXISTS (
    SELECT 1 FROM curation_skillsource ss JOIN curation_skillproposal sp ON sp.id = ss.proposal_id
    WHERE ss.entry_id = {entry_id} AND ss.live AND sp.status = 'approved')"""


def withheld_by_skill():
    """For Exists(): the approved skill an entry is a source of (a source taken out of the draft is not)."""
    return SkillSource.objects.filter(entry=OuterRef("pk"), live=True, proposal__status="approved")


def _ranked_postgres(scopes, q, min_confidence, pool) -> list[Ranked]:
    """One query that ranks and fetches. With a query: one lookup of the (scope, word) keys of migration
    0010, so only the asked scopes' entries that mention a query word are read. Without: each scope is
    its own index range (a LATERAL join over the scopes), highest confidence first."""
    columns = ", ".join(f"e.{name}" for name in RETRIEVED_FIELDS)
    if q:
        # Any query word may match (OR), more matching words rank higher; trigram word similarity to the
        # trigger then refines the order of the best of them.
        sql = f"""
            WITH query AS (
                SELECT {any_word_tsquery_sql("%(q)s")} AS tsq
            ), matched AS (
                SELECT e.id, ts_rank(e.search_vector, query.tsq) AS rank
                FROM query, curation_entry e
                WHERE e.status = 'active'
                  AND curation_scoped_lexemes(e.scope, e.search_vector)
                      && curation_scoped_query(CAST(%(scopes)s AS text[]), %(q)s)
                  AND e.confidence >= %(min)s
                  AND {_NOT_WITHHELD_SQL.format(entry_id="e.id")}
                ORDER BY ts_rank(e.search_vector, query.tsq) * e.confidence DESC, e.id DESC
                LIMIT %(wide)s
            )
            SELECT {columns}, (matched.rank + word_similarity(%(q)s, e.trigger)) * e.confidence AS score
            FROM matched JOIN curation_entry e ON e.id = matched.id
            ORDER BY score DESC, e.id DESC
            LIMIT %(pool)s
        """
    else:
        sql = f"""
            SELECT {columns}, e.confidence AS score
            FROM unnest(CAST(%(scopes)s AS text[])) AS s(scope)
            CROSS JOIN LATERAL (
                SELECT * FROM curation_entry
                WHERE status = 'active' AND scope = s.scope AND confidence >= %(min)s
                  AND {_NOT_WITHHELD_SQL.format(entry_id="curation_entry.id")}
                ORDER BY confidence DESC, id DESC
                LIMIT %(pool)s
            ) AS e
            ORDER BY e.confidence DESC, e.id DESC
            LIMIT %(pool)s
        """
    params = {"q": q, "scopes": list(scopes), "min": min_confidence, "pool": pool, "wide": pool * 2}
    return [Ranked(entry, float(entry.score)) for entry in Entry.objects.raw(sql, params)]


def _ranked_portable(scopes, q, min_confidence, pool) -> list[Ranked]:
    """SQLite: filter by any query word in the database, score by word overlap × confidence here."""
    rows = Entry.objects.filter(status=Status.ACTIVE, scope__in=scopes, confidence__gte=min_confidence).exclude(
        Exists(withheld_by_skill()))
    query_words = sorted(words(q))[:_QUERY_WORDS]
    if not query_words:
        return [Ranked(e, e.confidence) for e in rows.order_by("-confidence", "-id")[:pool]]
    match = Q(pk__in=[])
    for word in query_words:
        match |= Q(trigger__icontains=word) | Q(content__icontains=word)
    ranked = []
    for entry in rows.filter(match).order_by("-confidence", "-id")[:SIMILAR_POOL]:
        trigger, content = words(entry.trigger), words(entry.content) | words(" ".join(entry.conditions))
        relevance = sum(2 if w in trigger else 1 if w in content else 0 for w in query_words) / len(query_words)
        if relevance:
            ranked.append(Ranked(entry, relevance * entry.confidence))
    ranked.sort(key=lambda r: (-r.score, -r.entry.pk))
    return ranked[:pool]


def retrieve_memory(*, scopes, q: str = "", k: int, min_confidence: float) -> list[Ranked]:
    """Active entries of the given scopes, ranked by relevance × confidence, near-duplicates dropped,
    at most k; not the sources of an approved skill. One query on PostgreSQL whatever the table size
    (the (scope, word) index bounds the scan)."""
    if not scopes:
        return []
    q = (q or "").strip()[:500]
    pool = k * RETRIEVAL_POOL_FACTOR
    ranked = (_ranked_postgres if connection.vendor == "postgresql" else _ranked_portable)(
        scopes, q, min_confidence, pool)
    chosen: list[tuple[Ranked, frozenset]] = []
    for candidate in ranked:
        text = words(f"{candidate.entry.trigger} {candidate.entry.content}")
        if any(c.entry.fingerprint == candidate.entry.fingerprint or jaccard(text, seen) >= NEAR_DUPLICATE
               for c, seen in chosen):
            continue
        chosen.append((candidate, text))
        if len(chosen) == k:
            break
    return [c for c, _ in chosen]
