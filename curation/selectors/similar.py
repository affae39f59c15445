"""Near duplicates: the active entries of overlapping scopes that say nearly the same thing as an entry.
Found through the MinHash band keys of their text (models.EntryBand, rules/minhash): a lookup reads only
the entries sharing a key with it, and the exact measure ranks those: pg_trgm's trigram similarity on
PostgreSQL (one statement for a whole batch answers the entries sharing a key with their text; an ASCII pair is
scored here as the database scores it, a pair beyond ASCII by a second statement), word Jaccard elsewhere."""

from __future__ import annotations

import json
from array import array
from functools import lru_cache

from django.db import connection

from curation.rules import access, config, minhash
from curation.models import Entry
from curation.rules.similarity import (
    as_read_from_float4,
    jaccard,
    trigram_codes,
    trigram_similarity,
    trigram_similarity_bound,
    sketched_trigrams,
    words,
)

from . import sql

# The partners' texts split into words, by text: the next submission to the scope reads the same entries
# (a batch of 500 spread over 200 scopes reads ~20,000 of them; about 1.5 KB each).
WORDS_REMEMBERED = 32768


@lru_cache(maxsize=WORDS_REMEMBERED)
def _pooled_words(text: str) -> frozenset[str]:
    return words(text)


@lru_cache(maxsize=WORDS_REMEMBERED)  # the same for their trigrams, on PostgreSQL: ~1 KB each
def _pooled_trigrams(text: str) -> tuple[tuple[int, int, int], array] | None:
    """A text's trigram sketch (to rule a pair out) and its trigrams as numbers (to score it), or None for a
    text beyond ASCII."""
    sketched = sketched_trigrams(text)
    if sketched is None:
        return None
    grams, sketch = sketched
    return sketch, trigram_codes(grams)


def _text(entry: Entry) -> str:
    return f"{entry.trigger} {entry.content}"


def similar_active_entries_many(entries, *, limit: int = 5) -> dict[int, list[tuple[int, float]]]:
    """similar_active_entries for many entries at once, by their id (an unsaved entry's text is looked up
    as it is: it is left out of nothing). On PostgreSQL one statement for the batch; elsewhere one for the
    shared keys and one for the partners' texts."""
    entries = list(entries)
    if not entries:
        return {}
    bands = minhash.bands_for(connection.vendor)
    keys = [minhash.band_keys(_text(entry), bands) for entry in entries]
    if connection.vendor == "postgresql":
        found = _similar_postgres(entries, keys, limit)
    else:
        found = _similar_portable(entries, keys, limit)
    return {entry.pk: found.get(n, []) for n, entry in enumerate(entries)}


def similar_active_entries(entry: Entry, *, limit: int = 5) -> list[tuple[int, float]]:
    """(id, score) of active entries in overlapping scopes that say nearly the same thing: trigram
    similarity on PostgreSQL, the portable word measure elsewhere, among the entries sharing a band key."""
    return similar_active_entries_many([entry], limit=limit)[entry.pk]


def _ancestor_probes(entries: list[Entry], keys: list[tuple[int, ...]]) -> list[tuple[int, int, str]]:
    """The equality probes of the texts' keys: (n, key, ancestor) per key and strict ancestor of the text's
    scope that holds an active entry (an ancestor without one, an organisation's node above its services,
    say, has no partner to find: its probes are not made)."""
    strict = [access.scope_ancestors(entry.scope)[:-1] for entry in entries]
    held = _holding_active({scope for ancestors in strict for scope in ancestors})
    equal = []
    for n, ancestors in enumerate(strict):
        if ancestors := [scope for scope in ancestors if scope in held]:
            equal += [(n, key, scope) for key in keys[n] for scope in ancestors]
    return equal


def _probes(entries: list[Entry], keys: list[tuple[int, ...]]) -> tuple[list, list]:
    """The index probes of the texts' keys: the ancestors' (_ancestor_probes), and (n, key, scope) per key for
    the scope with the range below it (sql.SHARED_BANDS_SQLITE)."""
    under = [(n, key, entry.scope) for n, entry in enumerate(entries) for key in keys[n]]
    return _ancestor_probes(entries, keys), under


def _holding_active(scopes: set[str]) -> set[str]:
    """Which of the scopes hold an active entry: one probe of the active-scope index each, one statement."""
    if not scopes:
        return set()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(sql.HOLDING_ACTIVE_SQL, [sql.pg_array(sorted(scopes))])
        else:
            cursor.execute(sql.HOLDING_ACTIVE_SQLITE, [json.dumps(sorted(scopes))])
        return {scope for (scope,) in cursor.fetchall()}


# Below it by this much or more, a pair's trigram share cannot reach the threshold in the database's float4.
_FLOAT4_MARGIN = 1e-6


def _similar_postgres(entries: list[Entry], keys: list[tuple[int, ...]], limit: int) -> dict[int, list]:
    """The entries sharing a key, read with their text (SHARING_BANDS_SQL), scored by pg_trgm's similarity().
    An ASCII text's trigrams are the ones similarity() counts (similarity.trigrams), so a pair of ASCII texts
    is scored here, exactly as the database would (trigram_similarity), after a bound from their sketches
    rules out most pairs without splitting them; a pair with a text beyond ASCII, whose words the database's
    locale decides, is scored by the database (SIMILAR_SCORES_SQL)."""
    found: dict[int, list[tuple[int, float]]] = {}
    if not any(keys):
        return found
    equal = _ancestor_probes(entries, keys)
    bands = minhash.bands_for(connection.vendor)
    none = ",".join(["NULL"] * bands)  # a text with no word: its run of keys, matching nothing
    texts = [_text(entry) for entry in entries]
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SHARING_BANDS_SQL,
            {
                "read": sql.OVERLAPPING_MATCHES_READ,
                "equal_ns": sql.pg_array(n for n, _, _ in equal),
                "equal_keys": sql.pg_array(key for _, key, _ in equal),
                "equal_scopes": sql.pg_array(scope for _, _, scope in equal),
                # each text's keys in turn, as one literal: no row per key is built here
                "keys": "{" + ",".join(",".join(map(str, mine)) if mine else none for mine in keys) + "}",
                "scopes": sql.pg_array(entry.scope for entry in entries),
                "bands": bands,
                "ns": sql.pg_array(range(len(entries))),
                "ids": "{" + ",".join("NULL" if e.pk is None else str(e.pk) for e in entries) + "}",
            },
        )
        shared = cursor.fetchall()
        threshold = config.SIMILAR_THRESHOLD.value
        partner_text = {pk: text for _, pk, text in shared if text is not None}
        mine = [_pooled_trigrams(text) for text in texts]
        theirs = {pk: _pooled_trigrams(text) for pk, text in partner_text.items()}
        rows, beyond_ascii, mine_numbers = [], [], {}
        shown: dict[float, float] = {}  # each score as read from a float4, once: a batch's scores repeat
        for n, pk, _ in shared:
            if mine[n] is None or theirs[pk] is None:
                beyond_ascii.append((n, pk))
            elif trigram_similarity_bound(mine[n][0], theirs[pk][0]) >= threshold - _FLOAT4_MARGIN:
                if n not in mine_numbers:
                    mine_numbers[n] = frozenset(mine[n][1])
                score = trigram_similarity(mine_numbers[n], theirs[pk][1])
                if score >= threshold:
                    if score not in shown:
                        shown[score] = as_read_from_float4(score)
                    rows.append((n, pk, shown[score]))
        if beyond_ascii:
            cursor.execute(
                sql.SIMILAR_SCORES_SQL,
                {
                    "pair_ns": sql.pg_array(n for n, _ in beyond_ascii),
                    "pair_ids": sql.pg_array(pk for _, pk in beyond_ascii),
                    "texts": sql.pg_array(texts),
                    "threshold": threshold,
                },
            )
            rows += cursor.fetchall()
    for n, other_id, score in sorted(rows, key=lambda row: (row[0], -row[2], -row[1])):
        ranked = found.setdefault(n, [])
        if len(ranked) < limit:
            ranked.append((other_id, round(float(score), 3)))
    return found


def _similar_portable(entries: list[Entry], keys: list[tuple[int, ...]], limit: int) -> dict[int, list]:
    equal, under = _probes(entries, keys)
    found: dict[int, list[tuple[int, float]]] = {}
    if not under:
        return found
    with connection.cursor() as cursor:
        cursor.execute(sql.SHARED_BANDS_SQLITE, [json.dumps(equal), json.dumps(under)])
        shared = cursor.fetchall()
        partners = sorted({entry_id for _, entry_id in shared})
        cursor.execute(sql.ACTIVE_TEXTS_SQLITE, [json.dumps(partners)])
        texts = {pk: f"{trigger} {content}" for pk, trigger, content in cursor.fetchall()}
    threshold = config.SIMILAR_THRESHOLD.value
    by_text: dict[int, set[int]] = {}
    for n, entry_id in shared:
        if entry_id in texts and entry_id != entries[n].pk:
            by_text.setdefault(n, set()).add(entry_id)
    read = sql.OVERLAPPING_MATCHES_READ  # the newest this many, as on PostgreSQL
    for n, partner_ids in by_text.items():
        mine = _pooled_words(_text(entries[n]))
        newest = sorted(partner_ids, reverse=True)[:read]
        scored = [(pk, round(jaccard(mine, _pooled_words(texts[pk])), 3)) for pk in newest]
        scored = [(pk, score) for pk, score in scored if score >= threshold]
        scored.sort(key=lambda pair: (-pair[1], -pair[0]))
        found[n] = scored[:limit]
    return found
