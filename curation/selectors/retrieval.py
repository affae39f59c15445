"""Retrieval for agents: one selector, so that a later "published versions" feature can read a snapshot
instead of live rows."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import Exists, OuterRef, Q, TextField
from django.db.models.functions import Cast

from curation.rules import access, lifecycle, vectors
from curation.rules import clock
from curation.models import CONFIDENCE_FIELDS, Entry, SkillSource, Status
from curation.rules.similarity import jaccard, words

from .confidence import with_current_confidence
from .sql import plain_rows, ranked_by_confidence_sql, ranked_by_words_sql

RETRIEVAL_POOL_FACTOR = 4
WORD_MATCH_POOL = 500  # the entries mentioning a query word that the portable ranking scores, the most confident
NEAR_DUPLICATE = 0.8
_QUERY_WORDS = 12


@dataclass(frozen=True)
class Ranked:
    entry: Entry
    score: float
    distance: float | None = None  # to the query's embedding, when the query had one
    # In quarantine, as read by the very statement that ranked it on the primary (releases.as_served trusts
    # nothing older): None when that statement did not read it (a cached ranking, a replica's, another path).
    withheld: bool | None = None


def retrievable_scopes(scope: str, token_scopes) -> list[str]:
    """The asked scope and its ancestors, cut to what the token's prefixes cover."""
    return [s for s in access.scope_ancestors(scope) if access.covered_by_any(token_scopes, s)]


# What an answer and its context block show of an entry: the ranking query fetches these and no more.
RETRIEVED_FIELDS = (
    "id",
    "kind",
    "scope",
    "trigger",
    "content",
    "conditions",
    "boundary",
    "signal",
    "fingerprint",
    "embedding",
    *CONFIDENCE_FIELDS,
)


def withheld_by_skill():
    """For Exists(): the approved skill an entry is a source of (a source taken out of the draft is not)."""
    return SkillSource.objects.filter(entry=OuterRef("pk"), live=True, proposal__status="approved")


def _ranked_postgres(scopes, q, min_confidence, pool) -> list[Ranked]:
    """One query that ranks and fetches: by the query's words when there is a query, else by confidence."""
    columns = ", ".join(f"e.{name}" for name in RETRIEVED_FIELDS)
    sql = ranked_by_words_sql(columns) if q else ranked_by_confidence_sql(columns)
    return [
        Ranked(entry, float(entry.score))
        for entry in Entry.objects.raw(sql, ranking_params(scopes, q, min_confidence, pool))
    ]


def ranking_params(scopes, q, min_confidence, pool) -> dict:
    """The parameters of the ranking SQL (sql.ranked_by_words_sql): it ranks twice the pool by words, then
    keeps the pool's best by words and trigram similarity."""
    return {"q": q, "scopes": list(scopes), "min": min_confidence, "pool": pool, "wide": pool * 2, "now": clock.now()}


def _ranked_portable(scopes, q, min_confidence, pool) -> list[Ranked]:
    """SQLite: filter by any query word in the database, score by word overlap × confidence here."""
    return rank_by_words(_confident_rows(scopes, min_confidence), q, pool)


def _confident_rows(scopes, min_confidence):
    """The active entries of `scopes` at `min_confidence` or more now, not withheld by an approved skill."""
    return (
        with_current_confidence(Entry.objects.filter(status=Status.ACTIVE, scope__in=scopes))
        .filter(current_confidence__gte=min_confidence)
        .exclude(Exists(withheld_by_skill()))
    )


def rank_by_words(rows, q: str, pool: int, as_entry=lambda row: row) -> list[Ranked]:
    """`rows` (a queryset of entries, or of released entries that `as_entry` turns into entries, with their
    `current_confidence`: confidence.with_current_confidence) ranked by the query's words × confidence: the
    words filter in the database, the score here."""
    query_words = sorted(words(q))[:_QUERY_WORDS]
    if not query_words:
        return [Ranked(e, e.confidence) for e in map(as_entry, rows.order_by("-current_confidence", "-id")[:pool])]
    match = Q(pk__in=[])
    for word in query_words:
        match |= Q(trigger__icontains=word) | Q(content__icontains=word)
    ranked = []
    for entry in map(as_entry, rows.filter(match).order_by("-current_confidence", "-id")[:WORD_MATCH_POOL]):
        trigger, content = words(entry.trigger), words(entry.content) | words(" ".join(entry.conditions))
        relevance = sum(2 if w in trigger else 1 if w in content else 0 for w in query_words) / len(query_words)
        if relevance:
            ranked.append(Ranked(entry, relevance * entry.confidence))
    ranked.sort(key=lambda r: (-r.score, -r.entry.pk))
    return ranked[:pool]


def retrieve_memory(
    *, scopes, q: str = "", k: int, min_confidence: float, embedding=None, metric: str = "l2"
) -> list[Ranked]:
    """Active entries of the given scopes, ranked by relevance × confidence, near-duplicates dropped,
    at most k; not the sources of an approved skill. One query on PostgreSQL whatever the table size
    (the (scope, word) index bounds the scan). With an embedding, nearest first (or, with words too, the
    fusion of both rankings × confidence: rank_by_vector). The live rows: the draft a lead previews; agents
    read a published version instead (releases.retrieve_released)."""
    if not scopes:
        return []
    q = (q or "").strip()[:500]
    pool = k * RETRIEVAL_POOL_FACTOR

    def by_words(size):
        return (_ranked_postgres if connection.vendor == "postgresql" else _ranked_portable)(
            scopes, q, min_confidence, size
        )

    if embedding is not None:
        rows = _vector_candidates(scopes, min_confidence)
        # The chosen ids were read from these very rows a moment ago: fetch them by primary key, with the
        # fields an answer shows (as the ranking SQL fetches them).
        ranked = rank_by_vector(
            rows,
            embedding,
            metric,
            q=q,
            pool=pool,
            by_words=by_words,
            by_ids=lambda ids: Entry.objects.filter(pk__in=ids).only(*RETRIEVED_FIELDS),
        )
    else:
        ranked = by_words(pool)
    return without_near_duplicates(ranked, k)


def rank_by_vector(
    rows,
    embedding,
    metric: str,
    *,
    q: str,
    pool: int,
    by_words,
    id_field: str = "pk",
    as_entry=lambda row: row,
    by_ids=None,
) -> list[Ranked]:
    """`rows` (entries, or released rows that `as_entry` turns into entries) ranked by exact distance to
    `embedding`: every row that has an embedding is compared (vectors.nearest), nearest first, scored
    1 / (1 + distance). With words too, reciprocal-rank fusion of the keyword ranking (`by_words(size)`)
    and the vector ranking, × confidence. Two queries: the vectors, then the chosen rows (`by_ids(ids)`, by
    default `rows` narrowed to them; a primary-key lookup is cheaper where the rows were just filtered)."""
    by_ids = by_ids or (lambda ids: rows.filter(**{f"{id_field}__in": ids}))
    nearest = vectors.nearest(embedding, _embeddings(rows, id_field), metric, pool * 2 if q else pool)
    distances = dict(nearest)
    if not q:
        loaded = {e.pk: e for e in map(as_entry, by_ids(list(distances)))}
        return [Ranked(loaded[pk], 1.0 / (1.0 + d), d) for pk, d in nearest if pk in loaded]
    keyword = by_words(pool * 2)
    loaded = {r.entry.pk: r.entry for r in keyword}
    missing = [pk for pk in distances if pk not in loaded]
    if missing:
        loaded.update({e.pk: e for e in map(as_entry, by_ids(missing))})
    scores = vectors.fused([r.entry.pk for r in keyword], [pk for pk, _ in nearest])
    for pk, entry in loaded.items():
        if pk not in distances and entry.embedding is not None and len(entry.embedding) == len(embedding):
            distances[pk] = vectors.distance(embedding, entry.embedding, metric)
    ranked = [Ranked(entry, scores.get(pk, 0.0) * entry.confidence, distances.get(pk)) for pk, entry in loaded.items()]
    ranked.sort(key=lambda r: (-r.score, -r.entry.pk))
    return ranked[:pool]


def _vector_candidates(scopes, min_confidence):
    """What _confident_rows finds, for comparing every row with a query embedding: the withheld entries as
    one uncorrelated subquery (a correlated one per row cost as much as reading the vectors), and no
    confidence filter when it cannot leave a row out (an active entry's confidence is clamped at the floor
    or above; computing it per row cost more than comparing the vectors)."""
    withheld = SkillSource.objects.filter(live=True, proposal__status="approved").values("entry_id")
    rows = Entry.objects.filter(status=Status.ACTIVE, scope__in=scopes).exclude(pk__in=withheld)
    if min_confidence <= lifecycle.rules().floor:
        return rows
    return with_current_confidence(rows).filter(current_confidence__gte=min_confidence)


def _embeddings(rows, id_field: str) -> list[tuple[int, list[float]]]:
    """(id, embedding) of every row that has one, in one query: the vectors come as their JSON text, read
    with the cursor, and are decoded by vectors.decode_vectors (which remembers the texts it has decoded:
    decoding them cost more than reading and comparing them)."""
    query = (
        rows.filter(embedding__isnull=False)
        .annotate(vector_text=Cast("embedding", TextField()))
        .values_list(id_field, "vector_text")
    )
    pairs = plain_rows(query)
    if not pairs:
        return []
    ids, texts = zip(*pairs)
    return list(zip(ids, vectors.decode_vectors(texts)))


def without_near_duplicates(ranked: list[Ranked], k: int) -> list[Ranked]:
    """The first k of `ranked`, skipping one that repeats (or nearly repeats) an entry already chosen."""
    return first_distinct(ranked, k, lambda r: (r.entry.fingerprint, r.entry.trigger, r.entry.content))


def first_distinct(items: list, k: int, lesson_of) -> list:
    """The first k of `items`, skipping one that repeats an item already chosen: the same fingerprint, or word
    sets at least NEAR_DUPLICATE alike. `lesson_of(item)` answers its (fingerprint, trigger, content): a
    ranking's raw rows are chosen among before any is made an Entry."""
    chosen: list[tuple[object, str, frozenset]] = []
    for item in items:
        fingerprint, trigger, content = lesson_of(item)
        text = words(f"{trigger} {content}")
        if any(
            fingerprint == seen_fingerprint or jaccard(text, seen) >= NEAR_DUPLICATE
            for _, seen_fingerprint, seen in chosen
        ):
            continue
        chosen.append((item, fingerprint, text))
        if len(chosen) == k:
            break
    return [item for item, _, _ in chosen]
