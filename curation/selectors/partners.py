"""Reads of conflict detection: the active entries that could contradict an entry (its partners), found
through indexed lookups only: the scope index (an ancestor scope, the same scope or a descendant) and, on
PostgreSQL, the full-text index on the action words; never every pair of the table."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple

from django.db import connection
from django.db.models import BooleanField, FloatField, Q
from django.db.models.expressions import RawSQL

from curation.rules import access
from curation.rules.contradiction import Lesson
from curation.models import Entry, Status

from .sql import (
    BATCH_POOL_SQLITE,
    MENTION_RANK_SQL,
    MENTIONS_ANY_SQL,
    outer_params,
    outer_rows_sql,
    overlapping_entries_sql,
)

# More action words than this in one lookup and the text filter is dropped (the scope filter and the
# pool bound still hold): a long OR is no longer an index lookup, and SQLite limits expression depth.
MAX_SEARCH_WORDS = 64
# What detection reads of an entry: enough to compare it and to label its Event.
DETECTION_FIELDS = ("id", "scope", "trigger", "content", "conditions", "status", "version")


def mentioning(qs, stems):
    """Entries whose text mentions one of the action words: a partner can only contradict about those."""
    stems = sorted(stems)
    if len(stems) > MAX_SEARCH_WORDS:
        return qs
    if connection.vendor == "postgresql":
        # The GIN index on search_vector (active entries only, migration 0005). A prefix query tolerates
        # the difference between our light stemmer and PostgreSQL's English one (queue/queu, copy/copi);
        # six characters at most keep a stem such as "unit9" from matching every word that starts "unit".
        query = " | ".join(f"{s[:6]}:*" for s in stems)
        # Written so that no text index can serve it: the scope index finds the few hundred entries of the
        # overlapping scopes and each is checked, which is far cheaper than reading a common word's
        # posting list across the whole table.
        match = RawSQL(MENTIONS_ANY_SQL, (query,), output_field=BooleanField())
        rank = RawSQL(MENTION_RANK_SQL, (query,), output_field=FloatField())
        return qs.alias(mentions=match, mention_rank=rank).filter(mentions=True).order_by("-mention_rank", "-id")
    q = Q(pk__in=[])
    for s in stems:
        q |= Q(content__icontains=s)
    return qs.filter(q)


def partner_pool(scope: str, stems, *, limit: int, exclude=(), descendants: bool = True) -> list[Entry]:
    """Active entries that apply together with `scope` and mention an action word, newest first, bounded.

    Without descendants the scope part is an equality lookup on the active-scope index only (a prefix
    LIKE is no index range on PostgreSQL unless the collation is C): the sweep needs no more, because of
    two overlapping entries one is at or below the other's scope and finds it among its ancestors."""
    where = (
        access.overlapping_scopes_q(scope, bytewise=connection.vendor == "sqlite")
        if descendants
        else Q(scope__in=access.scope_ancestors(scope))
    )
    qs = mentioning(Entry.objects.filter(status=Status.ACTIVE).filter(where), stems)
    if exclude:
        qs = qs.exclude(pk__in=list(exclude))
    if not qs.query.order_by:
        qs = qs.order_by("-id")
    return list(qs.only(*DETECTION_FIELDS)[:limit])


@lru_cache(maxsize=4096)
def _decoded(conditions: str) -> tuple:
    """The conditions' JSON text decoded, once per distinct text: a batch's pools read thousands of rows and
    few distinct lists of keywords."""
    return tuple(json.loads(conditions))


class Partner(NamedTuple):
    """What a comparison reads of a partner found at ingest (DETECTION_FIELDS, as the database holds
    them: redacted when written), without building a model instance for each of a batch's thousands of
    partners. The few in a conflict become one (`entry()`) to be written about."""

    pk: int
    scope: str
    trigger: str
    content: str
    conditions: list
    status: str
    version: int

    @classmethod
    def of_row(cls, row) -> "Partner":
        """A partner from its DETECTION_FIELDS read with the cursor: the conditions may come as their JSON
        text (SQLite), else already decoded."""
        pk, scope, trigger, content, conditions, status, version = row
        return cls(
            pk,
            scope,
            trigger,
            content,
            list(_decoded(conditions)) if isinstance(conditions, str) else conditions,
            status,
            version,
        )

    def entry(self) -> Entry:
        """The Entry as loaded with only(*DETECTION_FIELDS)."""
        values = dict(zip(DETECTION_FIELDS, self))
        return Entry.from_db(
            connection.alias,
            DETECTION_FIELDS,
            [values[f.attname] for f in Entry._meta.concrete_fields if f.attname in values],
        )


# A batch's reads of the overlapping active entries, per scope, on a database without the PostgreSQL
# statements: this many of the newest (a pool of 500 and the entry itself).
BATCH_POOL_ROWS = 501
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass
class ScopePool:
    """The newest active entries that apply together with a scope (Partner rows, newest first), and
    whether they are all of them."""

    rows: list
    complete: bool

    @cached_property
    def lowered(self) -> list[str]:
        """Each row's content with its ASCII letters lower-cased, as SQLite's LIKE compares them."""
        return [row.content.translate(_ASCII_LOWER) for row in self.rows]


def batch_pools(scopes) -> dict[str, ScopePool] | None:
    """What a batch of new entries reads for its near duplicates and its conflict partners, once per
    scope for both (one query per scope): the newest BATCH_POOL_ROWS overlapping active entries. None on
    PostgreSQL, whose single statements per batch read their own ranked pools."""
    if connection.vendor == "postgresql":
        return None
    # The columns as stored (redacted when written), read with the cursor: without the redacting columns'
    # bookkeeping of every value read, since the rows are compared, not written back. One statement text for
    # every scope (BATCH_POOL_SQLITE), so that a batch of hundreds of scopes compiles no query per scope.
    pools = {}
    with connection.cursor() as cursor:
        for scope in sorted(set(scopes)):
            cursor.execute(
                BATCH_POOL_SQLITE,
                [json.dumps(access.scope_ancestors(scope)), BATCH_POOL_ROWS, scope + "/", scope + "0"]
                + [BATCH_POOL_ROWS] * 2,
            )
            rows = [Partner.of_row(row) for row in cursor.fetchall()]
            pools[scope] = ScopePool(rows, complete=len(rows) < BATCH_POOL_ROWS)
    return pools


def _from_pool(pool: ScopePool, entry_id: int, stems, limit: int) -> list | None:
    """partner_pool read from a batch's pool: the newest `limit` that mention a stem as SQLite's LIKE
    finds it (ASCII letters in any case; the stems are ASCII), the entry itself left out. None when the
    pool is cut short and holds fewer than `limit`: older entries may mention one, the query decides."""
    stems = sorted(stems)
    found = []
    for row, content in zip(pool.rows, pool.lowered):
        if row.pk == entry_id:
            continue
        if len(stems) > MAX_SEARCH_WORDS or any(stem in content for stem in stems):
            found.append(row)
            if len(found) == limit:
                return found
    return found if pool.complete else None


def partner_pools(
    entries: list[Entry], lessons: dict[int, Lesson], limit: int, pools: dict[str, ScopePool] | None = None
) -> dict[int, list]:
    """partner_pool of each entry (its scope, ancestors and descendants), most mentioning first: Entry
    or Partner rows. On PostgreSQL one query for them all, through the (scope, word) index keys of the
    action words as written (PostgreSQL stems them as it stemmed the entries); elsewhere from the
    batch's `pools` (batch_pools) when given and enough, else one query per entry."""
    if connection.vendor != "postgresql":
        found = {}
        for e in entries:
            stems = lessons[e.pk].search_words
            from_pool = _from_pool(pools[e.scope], e.pk, stems, limit) if pools and e.scope in pools else None
            found[e.pk] = (
                from_pool if from_pool is not None else partner_pool(e.scope, stems, exclude=[e.pk], limit=limit)
            )
        return found
    columns = ", ".join(f"e.{name}" for name in (*DETECTION_FIELDS, "search_vector"))
    sql = (
        outer_rows_sql()
        + f"""
        SELECT p.for_id, {", ".join(f"p.{name}" for name in DETECTION_FIELDS)}
        FROM c CROSS JOIN LATERAL (
            SELECT c.id AS for_id, m.* FROM ({overlapping_entries_sql(columns)}) AS m
            ORDER BY ts_rank(m.search_vector, c.query) DESC, m.id DESC
            LIMIT %(pool)s
        ) AS p
    """
    )
    params = {
        **outer_params(
            entries,
            lambda e: " ".join(sorted(lessons[e.pk].search_terms)),
            fallback_of=lambda e: " ".join(sorted(lessons[e.pk].object_terms)),
        ),
        "pool": limit,
    }
    found: dict[int, list] = {e.pk: [] for e in entries}
    seen: dict[int, Partner] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for for_id, *partner in cursor.fetchall():
            pk = partner[0]
            if pk not in seen:
                seen[pk] = Partner.of_row(partner)
            found[for_id].append(seen[pk])
    return found
