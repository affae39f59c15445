"""Near duplicates: the active entries of overlapping scopes that say nearly the same thing as an entry.
Trigram similarity on PostgreSQL (one statement for a whole batch), word Jaccard elsewhere."""

from __future__ import annotations

from functools import lru_cache

from django.db import connection

from curation.rules import access, config
from curation.models import Entry, Status
from curation.rules.similarity import jaccard, words

from .sql import outer_params, plain_rows, similar_entries_sql

SIMILAR_POOL = 500
SIMILAR_POOL_POSTGRES = 20


@lru_cache(maxsize=4 * SIMILAR_POOL)
def _pooled_words(text: str) -> frozenset[str]:
    """words() of a pooled entry's text: the next submission to the scope reads the same pool again."""
    return words(text)


def _situation_words(entry: Entry) -> str:
    """What a near duplicate must mention: a word of the trigger or the conditions (the situation)."""
    return " ".join([entry.trigger, *(c for c in entry.conditions or () if isinstance(c, str))])


def similar_active_entries_many(entries, *, limit: int = 5, pools=None) -> dict[int, list[tuple[int, float]]]:
    """similar_active_entries for many entries at once: on PostgreSQL one query (a LATERAL join over
    the entries; the index keys pick the few entries of the overlapping scopes that share words with
    each, trigram similarity is computed on the best-ranked of those only), planned once for a whole
    batch; elsewhere one lookup per scope, or the batch's `pools` (partners.batch_pools) when given."""
    entries = list(entries)
    if connection.vendor != "postgresql" or not entries:
        return _similar_portable_many(entries, limit, pools)
    found: dict[int, list[tuple[int, float]]] = {entry.pk: [] for entry in entries}
    with connection.cursor() as cursor:
        cursor.execute(
            similar_entries_sql(),
            {
                **outer_params(entries, _situation_words, lambda e: f"{e.trigger} {e.content}"),
                "pool": SIMILAR_POOL_POSTGRES,
                "threshold": config.SIMILAR_THRESHOLD.value,
                "limit": limit,
            },
        )
        for entry_id, other_id, score in cursor.fetchall():
            found[entry_id].append((other_id, round(float(score), 3)))
    return found


def similar_active_entries(entry: Entry, *, limit: int = 5) -> list[tuple[int, float]]:
    """(id, score) of active entries in overlapping scopes that say nearly the same thing: trigram
    similarity on PostgreSQL, the portable word measure elsewhere. Reads a bounded pool."""
    return similar_active_entries_many([entry], limit=limit)[entry.pk]


def _similar_portable_many(entries: list[Entry], limit: int, pools=None) -> dict[int, list[tuple[int, float]]]:
    """Word Jaccard of each entry with the SIMILAR_POOL most recent active entries of its overlapping scopes
    (itself left out). Entries of one scope share that pool: one query per scope of the batch (none when
    the batch read it already, `pools`), and each pooled row's words split once for the whole batch."""
    threshold = config.SIMILAR_THRESHOLD.value
    by_scope: dict[str, list[Entry]] = {}
    for entry in entries:
        by_scope.setdefault(entry.scope, []).append(entry)
    words_of: dict[int, frozenset[str]] = {}
    found: dict[int, list[tuple[int, float]]] = {}
    for scope, members in by_scope.items():
        # The pool less any of these entries is the pool each would read alone: enough rows past it to
        # leave SIMILAR_POOL once an entry's own row is dropped.
        read = pools.get(scope) if pools else None
        if read is not None and (read.complete or len(read.rows) > SIMILAR_POOL):
            pool = [(row.pk, row.trigger, row.content) for row in read.rows[: SIMILAR_POOL + 1]]
        else:
            pool = plain_rows(
                Entry.objects.filter(status=Status.ACTIVE)
                .filter(access.overlapping_scopes_q(scope, bytewise=connection.vendor == "sqlite"))
                .order_by("-id")
                .values_list("id", "trigger", "content")[: SIMILAR_POOL + 1]
            )
        for pk, trigger, content in pool:
            if pk not in words_of:
                words_of[pk] = _pooled_words(f"{trigger} {content}")
        for entry in members:
            mine = words(f"{entry.trigger} {entry.content}")
            own = [pk for pk, _, _ in pool if pk != entry.pk][:SIMILAR_POOL]
            scored = [(pk, round(jaccard(mine, words_of[pk]), 3)) for pk in own]
            scored = [(pk, score) for pk, score in scored if score >= threshold]
            scored.sort(key=lambda pair: -pair[1])
            found[entry.pk] = scored[:limit]
    return found
