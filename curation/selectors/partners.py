"""Reads of conflict detection: the active entries that could contradict an entry (its partners), found
through indexed lookups only: the scope index (an ancestor scope, the same scope or a descendant) and, on
PostgreSQL, the full-text index on the action words; never every pair of the table."""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField, FloatField, Q
from django.db.models.expressions import RawSQL

from curation import access
from curation.contradiction import Lesson
from curation.models import Entry, Status

from .sql import MENTION_RANK_SQL, MENTIONS_ANY_SQL, outer_params, outer_rows_sql, overlapping_entries_sql

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
    where = (access.overlapping_scopes_q(scope, bytewise=connection.vendor == "sqlite") if descendants else Q(scope__in=access.scope_ancestors(scope)))
    qs = mentioning(Entry.objects.filter(status=Status.ACTIVE).filter(where), stems)
    if exclude:
        qs = qs.exclude(pk__in=list(exclude))
    if not qs.query.order_by:
        qs = qs.order_by("-id")
    return list(qs.only(*DETECTION_FIELDS)[:limit])


def partner_pools(entries: list[Entry], lessons: dict[int, Lesson], limit: int) -> dict[int, list[Entry]]:
    """partner_pool of each entry (its scope, ancestors and descendants), most mentioning first. On
    PostgreSQL one query for them all, through the (scope, word) index keys of the action words as
    written (PostgreSQL stems them as it stemmed the entries); elsewhere one query per entry."""
    if connection.vendor != "postgresql":
        return {e.pk: partner_pool(e.scope, lessons[e.pk].search_words, exclude=[e.pk], limit=limit) for e in entries}
    columns = ", ".join(f"e.{name}" for name in (*DETECTION_FIELDS, "search_vector"))
    sql = outer_rows_sql() + f"""
        SELECT p.for_id, {", ".join(f"p.{name}" for name in DETECTION_FIELDS)}
        FROM c CROSS JOIN LATERAL (
            SELECT c.id AS for_id, m.* FROM ({overlapping_entries_sql(columns)}) AS m
            ORDER BY ts_rank(m.search_vector, c.query) DESC, m.id DESC
            LIMIT %(pool)s
        ) AS p
    """
    params = {**outer_params(entries, lambda e: " ".join(sorted(lessons[e.pk].search_terms)),
                             fallback_of=lambda e: " ".join(sorted(lessons[e.pk].object_terms))), "pool": limit}
    pools: dict[int, list[Entry]] = {e.pk: [] for e in entries}
    for partner in Entry.objects.raw(sql, params):
        pools[partner.for_id].append(partner)
    return pools
