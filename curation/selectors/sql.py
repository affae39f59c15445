"""The raw SQL of the reads, in one place: PostgreSQL full-text and trigram lookups that the ORM cannot
say. Each function returns a fragment or a statement with named parameters (%(name)s); the selectors
run them."""

import json

from django.db import connections
from django.db.models import BooleanField, F, Func

from curation.rules import access, lifecycle

from .confidence import confidence_sql


def plain_rows(query) -> list[tuple]:
    """The rows of a values_list() queryset as the database holds them, read with the cursor: no field's
    converter runs (a redacting column's remembering what it read, a JSON column's decoding), which on a
    read of hundreds of rows per call cost more than the query."""
    sql, params = query.query.sql_with_params()
    with connections[query.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def pg_array(values) -> str:
    """A list of integers or of strings as a PostgreSQL array literal ('{1,2}', '{"a","b"}'), sent as one text
    parameter and cast in the statement (CAST(%s AS bigint[])): a batch's arrays hold tens of thousands of
    items, which psycopg's adaptation of a Python list dumps item by item, slower than the statement runs."""
    values = list(values)
    if values and isinstance(values[0], str):
        if '"' in (together := "".join(values)) or "\\" in together:  # a text to escape: item by item
            return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"
        return '{"' + '","'.join(values) + '"}'  # scopes and most texts: quoted as they are, in one join
    return "{" + ",".join(map(str, map(int, values))) + "}"


# An API call's token, by the hash of the secret it presents (the unique index on key_hash).
TOKEN_BY_HASH_SQL = "SELECT * FROM curation_agenttoken WHERE key_hash = %s"

# The number of the version agents read (the one row of PublishedVersion), none before a first publish.
PUBLISHED_NUMBER_SQL = """
    SELECT v.number FROM curation_publishedversion p JOIN curation_memoryversion v ON v.id = p.version_id
    WHERE p.id = 1"""

# The live entries (active before pending, then oldest) of many (scope, fingerprint) pairs: one probe of the
# (scope, fingerprint) index per pair. `scope IN (...) AND fingerprint IN (...)` would probe every combination
# of the two lists, 250,000 for a batch of 500. Locked, with LOCK_AS_AN_UPDATE after it, as an UPDATE locks a
# row (FOR NO KEY UPDATE): another batch's rows that only refer to these entries (evidence, Events, links: the
# key share each commit's key check takes) do not wait for it; with FOR UPDATE two batches repeating each
# other's lessons deadlocked at commit. Rows are locked in the order they are sorted: two lockers of the same
# entries take them in the same order.
LIVE_BY_FINGERPRINT_SQL = """
    SELECT e.* FROM unnest(CAST(%s AS text[]), CAST(%s AS text[])) AS k(scope, fingerprint)
    JOIN curation_entry e ON e.scope = k.scope AND e.fingerprint = k.fingerprint
    WHERE (e.status = ANY(%s) OR e.held_by_id IS NOT NULL)
    ORDER BY e.status, e.id
"""
LOCK_AS_AN_UPDATE = " FOR NO KEY UPDATE OF e"

# Does the entry's text mention one of the words (a tsquery in 'simple' prefix form), and how much?
MENTIONS_ANY_SQL = "COALESCE(search_vector @@ to_tsquery('simple', %s), false)"
MENTION_RANK_SQL = "ts_rank(search_vector, to_tsquery('simple', %s))"


def any_word_tsquery_sql(text_sql: str) -> str:
    """SQL for the English tsquery that matches any word of `text_sql` (plainto_tsquery ANDs them), NULL
    when no word is left after the stop words."""
    return f"CAST(NULLIF(replace(CAST(plainto_tsquery('english', {text_sql}) AS text), '&', '|'), '') AS tsquery)"


# The most matching entries a lookup reads for one entry, in each half of overlapping_entries_sql, before
# ranking them. Below it a lookup reads every match, as it always did; a scope where more than this many
# entries share a word with the new one (thousands of near-identical lessons) costs what this many cost
# instead of growing with the scope, and its ranking is over the matches the index finds first, so a near
# duplicate or a partner among the others can be missed at ingest (the detection sweeps still compare it).
OVERLAPPING_MATCHES_READ = 500


def overlapping_entries_sql(columns: str) -> str:
    """For each row of `c` (see outer_rows_sql): the active entries of its scope, its ancestors and the
    scopes below it that mention one of its lookup words, at most %(read)s (OVERLAPPING_MATCHES_READ) from
    each half. Two halves, each one index lookup: the (scope, word) keys of migration 0010 for the scope
    and its ancestors (only entries that mention a word are read), and the scope-prefix range below it
    (~>=~ / ~<~ compare bytes: the scopes that start with "<scope>/", served by the varchar_pattern_ops
    index). Apart, neither half re-evaluates the other's condition on every row, as an OR of the two
    would."""
    return f"""
        (SELECT {columns} FROM curation_entry e
         WHERE e.status = 'active' AND e.id <> c.id
           AND curation_scoped_lexemes(e.scope, e.search_vector) && c.keys
         LIMIT %(read)s)
        UNION ALL
        (SELECT {columns} FROM curation_entry e
         WHERE e.status = 'active' AND e.id <> c.id AND e.scope ~>=~ c.below AND e.scope ~<~ c.below_end
           AND COALESCE(e.search_vector @@ c.lookup, false)
         LIMIT %(read)s)
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
        "read": OVERLAPPING_MATCHES_READ,
        "ids": [e.pk for e in entries],
        "texts": [f"{e.trigger} {e.content}" for e in entries],
        "lookup": [lookup_of(e) for e in entries],
        "fallback": [fallback_of(e) for e in entries],
        "rank": [rank_of(e) if rank_of else None for e in entries],  # None: the words looked up
        "ancestors": ["|".join(access.scope_ancestors(e.scope)) for e in entries],
        "below": [e.scope + "/" for e in entries],
        "below_end": [e.scope + "0" for e in entries],  # "0" is the character after "/"
    }


def similar_entries_sql() -> str:
    """For each row of outer_rows_sql: (its id, a similar active entry's id, the score), at most
    %(limit)s per row, scoring the %(pool)s best-ranked overlapping entries only."""
    return (
        outer_rows_sql()
        + f"""
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
    """
    )


# An approved skill replaces its source entries: agents read the skill (GET /api/v1/skills), and the entries
# come back when the skill is retired. Skills are few, so this anti-join costs a probe of a tiny table.
NOT_WITHHELD_SQL = """NOT EXISTS (
    SELECT 1 FROM curation_skillsource ss JOIN curation_skillproposal sp ON sp.id = ss.proposal_id
    WHERE ss.entry_id = {entry_id} AND ss.live AND sp.status = 'approved')"""


def id_set_sql(vendor: str, placeholder: str = "%(ids)s") -> str:
    """A set of ids given as one parameter (id_set_param's): any number of them in one statement, never a
    placeholder per id, which PostgreSQL parses one by one and SQLite refuses past 32,766."""
    if vendor == "postgresql":
        return f"SELECT unnest(CAST({placeholder} AS bigint[])) AS id"
    return f"SELECT value AS id FROM json_each({placeholder})"


def id_set_param(vendor: str, ids) -> str:
    """The parameter of id_set_sql and id_in_sql: one array literal on PostgreSQL (pg_array: psycopg would
    dump a list item by item), a JSON list elsewhere."""
    if vendor == "postgresql":
        return pg_array(ids)
    return json.dumps([int(i) for i in ids])


def id_in_sql(vendor: str, column: str, placeholder: str = "%s") -> str:
    """The condition that `column` is one of the ids given as one parameter (id_set_param's)."""
    if vendor == "postgresql":
        return f"{column} = ANY(CAST({placeholder} AS bigint[]))"
    return f"{column} IN ({id_set_sql(vendor, placeholder)})"


def draft_diff_sql(vendor: str, compared: dict[str, str], shown) -> str:
    """The candidates %(ids)s (id_set_sql) whose released row in version %(base)s differs from what the
    draft would release (an active entry no approved skill withholds): added, removed, or a field of
    `compared` distinct (each name with the expression it is compared by, "{}" the column), one row each
    by id with whether each side exists and the `shown` fields of both. The diff is made in the database:
    only the changed rows are read."""
    distinct = "IS DISTINCT FROM" if vendor == "postgresql" else "IS NOT"
    differs = " OR ".join(
        f"{how.format('b.' + name)} {distinct} {how.format('a.' + name)}" for name, how in compared.items()
    )
    columns = ", ".join([f"b.{name}" for name in shown] + [f"a.{name}" for name in shown])
    return f"""
        SELECT c.id, b.entry_id IS NOT NULL, a.id IS NOT NULL{", " + columns if columns else ""}
        FROM ({id_set_sql(vendor)}) c
        LEFT JOIN curation_releasedentry b
          ON b.entry_id = c.id AND b.valid_from <= %(base)s AND (b.valid_to IS NULL OR b.valid_to > %(base)s)
        LEFT JOIN curation_entry a
          ON a.id = c.id AND a.status = 'active' AND {NOT_WITHHELD_SQL.format(entry_id="a.id")}
        WHERE (b.entry_id IS NOT NULL OR a.id IS NOT NULL)
          AND (b.entry_id IS NULL OR a.id IS NULL OR {differs})
        ORDER BY c.id
    """


def _live_confidence() -> str:
    """An active entry's confidence at %(now)s (Entry.confidence_at), under the rules in force."""
    return confidence_sql("e.base_confidence", "COALESCE(e.last_verified_at, e.created_at)", lifecycle.rules())


def _released_confidence() -> str:
    """A released row's confidence at %(now)s (ReleasedEntry.confidence)."""
    return confidence_sql("e.base_confidence", "COALESCE(e.last_verified_at, %(now)s)", lifecycle.rules())


# The entries of %(scopes)s that mention a word of %(q)s: one lookup of an index of "<scope> <lexeme>" keys.
_MENTIONS_QUERY_WORD = (
    "curation_scoped_lexemes(e.scope, e.search_vector) && curation_scoped_query(CAST(%(scopes)s AS text[]), %(q)s)"
)


def live_matches_sql() -> str:
    """ranked_by_words_sql's candidates from the live rows: the active entries, through the (scope, word)
    keys of migration 0010, that no approved skill withholds."""
    return f"""
        SELECT e.id, e.id AS entry_id, e.search_vector, {_live_confidence()} AS confidence FROM curation_entry e
        WHERE e.status = 'active' AND {_MENTIONS_QUERY_WORD}
          AND {NOT_WITHHELD_SQL.format(entry_id="e.id")}
    """


def released_matches_sql() -> str:
    """ranked_by_words_sql's candidates from version %(version)s's released rows (a publish left out the
    sources of approved skills): the open rows through the (scope, word) keys of migration 0020, and the
    rows closed since the version (none when it is the newest) through the valid_to index, at provenance
    trust %(min_trust)s or above. One statement: a publish committing meanwhile changes nothing it reads."""
    return f"""
        SELECT e.id, e.entry_id, e.search_vector, {_released_confidence()} AS confidence FROM curation_releasedentry e
        WHERE e.valid_to IS NULL AND e.valid_from <= %(version)s AND e.trust >= %(min_trust)s
          AND {_MENTIONS_QUERY_WORD}
        UNION ALL
        SELECT e.id, e.entry_id, e.search_vector, {_released_confidence()} AS confidence FROM curation_releasedentry e
        WHERE e.valid_to > %(version)s AND e.valid_from <= %(version)s AND e.trust >= %(min_trust)s
          AND e.scope = ANY(CAST(%(scopes)s AS text[])) AND {_MENTIONS_QUERY_WORD}
    """


def ranked_by_words_sql(columns: str, matches_sql: str | None = None, table: str = "curation_entry") -> str:
    """The rows of `matches_sql` (live_matches_sql unless given: id, entry_id, search_vector, confidence of
    the rows of `table` that mention a word of %(q)s in %(scopes)s) with their score. Any query word may
    match (OR), more matching words rank higher; trigram word similarity to the trigger then refines the
    order of the best of them. Ties go to the newer entry, so live rows and a version rank alike."""
    return f"""
        WITH query AS (
            SELECT {any_word_tsquery_sql("%(q)s")} AS tsq
        ), matched AS (
            SELECT m.id, m.entry_id, ts_rank(m.search_vector, query.tsq) AS rank, m.confidence
            FROM query, ({matches_sql or live_matches_sql()}) AS m
            WHERE m.confidence >= %(min)s
            ORDER BY ts_rank(m.search_vector, query.tsq) * m.confidence DESC, m.entry_id DESC
            LIMIT %(wide)s
        )
        SELECT {columns}, (matched.rank + word_similarity(%(q)s, e.trigger)) * matched.confidence AS score
        FROM matched JOIN {table} e ON e.id = matched.id
        ORDER BY score DESC, matched.entry_id DESC
        LIMIT %(pool)s
    """


def ranked_by_confidence_sql(columns: str) -> str:
    """Active entries of %(scopes)s, highest confidence first: each scope is its own index range (a
    LATERAL join over the scopes)."""
    return f"""
        SELECT {columns}, e.confidence AS score
        FROM unnest(CAST(%(scopes)s AS text[])) AS s(scope)
        CROSS JOIN LATERAL (
            SELECT * FROM (
                SELECT e.*, {_live_confidence()} AS confidence FROM curation_entry e
                WHERE status = 'active' AND scope = s.scope AND {NOT_WITHHELD_SQL.format(entry_id="e.id")}
            ) AS in_scope
            WHERE confidence >= %(min)s
            ORDER BY confidence DESC, id DESC
            LIMIT %(pool)s
        ) AS e
        ORDER BY e.confidence DESC, e.id DESC
        LIMIT %(pool)s
    """


def supersedes_chain_sql() -> str:
    """("older" | "newer", id, supersedes_id) of the entries entry %(id)s replaces, step by step, and of
    those that replace it, at most %(limit)s steps each way: one recursive query instead of one a step."""
    return """
        WITH RECURSIVE older(id, supersedes_id, depth) AS (
            SELECT id, supersedes_id, 0 FROM curation_entry WHERE id = %(id)s
            UNION ALL
            SELECT e.id, e.supersedes_id, o.depth + 1
            FROM curation_entry e JOIN older o ON e.id = o.supersedes_id
            WHERE o.depth < %(limit)s
        ), newer(id, supersedes_id, depth) AS (
            SELECT id, supersedes_id, 0 FROM curation_entry WHERE id = %(id)s
            UNION ALL
            SELECT e.id, e.supersedes_id, n.depth + 1
            FROM curation_entry e JOIN newer n ON e.supersedes_id = n.id
            WHERE n.depth < %(limit)s
        )
        SELECT 'older', id, supersedes_id FROM older WHERE depth > 0
        UNION ALL
        SELECT 'newer', id, supersedes_id FROM newer WHERE depth > 0
    """


# Near duplicates through the MinHash band keys (models.EntryBand): for each key of each looked-up text, the
# entries of the overlapping scopes that share it: one probe of the (band, scope) index per key and strict
# ancestor of the scope (the `equal` rows: the text's number n, the key, the ancestor), and one per key for
# the scope and the range below it together (`keys`: each text's `bands` keys in turn, NULLs for a text with
# none, and `scopes`, each text's scope: text n's keys are the n-th run of `bands`; the range from the
# scope to the scope followed by "0", the character after "/", keeping the scope itself and what starts with
# "<scope>/", not a sibling such as "<scope>-x" that sorts inside it); both columns equal or ranged, so each
# probe reads only the key's rows in those scopes. Answers the shared active entries (the text itself left
# out, at most %(read)s of them, the newest: OVERLAPPING_MATCHES_READ) with their text, once per entry (on its
# first row; many texts of a batch share a partner), which the caller scores (similar._similar_postgres). The
# arrays come as literals (pg_array). `under` pairs each scope with its text's run of keys (a slice of the
# integer array, found by its offset) once per text: a scope taken per key by its place in the text array was
# found by walking that array from its start, three times a probe (~20 % of the statement at 24,000 probes).
# MATERIALIZED: the planner, left to itself, joined the slices against the whole band table. In key order, the
# probes walk the index's pages in order (~5 % of the statement).
SHARING_BANDS_SQL = """
    WITH under AS MATERIALIZED (
        SELECT CAST(t.i - 1 AS int) AS n, t.scope, k.band
        FROM unnest(CAST(%(scopes)s AS text[])) WITH ORDINALITY AS t(scope, i)
        CROSS JOIN LATERAL unnest((CAST(%(keys)s AS bigint[]))[(t.i - 1) * %(bands)s + 1 : t.i * %(bands)s]) AS k(band)
        ORDER BY k.band
    ), shared AS (
        SELECT k.n, b.entry_id
        FROM unnest(CAST(%(equal_ns)s AS int[]), CAST(%(equal_keys)s AS bigint[]), CAST(%(equal_scopes)s AS text[]))
             AS k(n, band, scope)
        JOIN curation_entryband b ON b.band = k.band AND b.scope = k.scope
        UNION
        SELECT k.n, b.entry_id
        FROM under AS k
        JOIN curation_entryband b
          ON b.band = k.band AND b.scope ~>=~ k.scope AND b.scope ~<~ (k.scope || '0')
             AND (b.scope = k.scope OR b.scope ~>=~ (k.scope || '/'))
    ), c AS (
        SELECT * FROM unnest(CAST(%(ns)s AS int[]), CAST(%(ids)s AS bigint[])) AS c(n, id)
    ), partners AS (
        SELECT c.n, e.id, e.trigger, e.content, row_number() OVER (PARTITION BY c.n ORDER BY e.id DESC) AS newest
        FROM shared s JOIN c ON c.n = s.n JOIN curation_entry e ON e.id = s.entry_id
        WHERE e.status = 'active' AND e.id IS DISTINCT FROM c.id
    )
    SELECT n, id, CASE WHEN row_number() OVER (PARTITION BY id) = 1 THEN trigger || ' ' || content END
    FROM partners
    WHERE newest <= %(read)s
"""

# The trigram similarity of the (text n, entry id) pairs SHARING_BANDS_SQL found that the caller cannot score
# itself (a text beyond ASCII, whose words the database's locale decides; the arrays as literals), each entry's
# text read again by its id, of those at %(threshold)s or above: the caller ranks them.
SIMILAR_SCORES_SQL = """
    SELECT p.n, p.id, scored.score
    FROM unnest(CAST(%(pair_ns)s AS int[]), CAST(%(pair_ids)s AS bigint[])) AS p(n, id)
    JOIN unnest(CAST(%(texts)s AS text[])) WITH ORDINALITY AS c(text, n) ON c.n = p.n + 1
    CROSS JOIN LATERAL (
        SELECT similarity(e.trigger || ' ' || e.content, c.text) AS score
        FROM curation_entry e WHERE e.id = p.id AND e.status = 'active'
    ) AS scored
    WHERE scored.score >= %(threshold)s
"""

# Which of the scopes (an array) hold an active entry: an EXISTS probe of the active-scope index each.
HOLDING_ACTIVE_SQL = """
    SELECT s FROM unnest(CAST(%s AS text[])) AS s
    WHERE EXISTS (SELECT 1 FROM curation_entry e WHERE e.status = 'active' AND e.scope = s)
"""
HOLDING_ACTIVE_SQLITE = """
    SELECT value FROM json_each(%s)
    WHERE EXISTS (SELECT 1 FROM curation_entry e WHERE e.status = 'active' AND e.scope = value)
"""

# SHARING_BANDS_SQL's first half on SQLite, the probes as JSON (no limit on their number): the (n, entry
# id) pairs sharing a key in the overlapping scopes. `equal`: [n, key, ancestor] per key and strict ancestor;
# `under`: [n, key, scope] per key, the scope and the range below it as above (SQLite compares text
# bytewise).
SHARED_BANDS_SQLITE = """
    SELECT k.n, b.entry_id FROM (
        SELECT json_extract(value, '$[0]') AS n, json_extract(value, '$[1]') AS band,
               json_extract(value, '$[2]') AS scope FROM json_each(%s)
    ) AS k CROSS JOIN curation_entryband b ON b.band = k.band AND b.scope = k.scope
    UNION
    SELECT k.n, b.entry_id FROM (
        SELECT json_extract(value, '$[0]') AS n, json_extract(value, '$[1]') AS band,
               json_extract(value, '$[2]') AS scope FROM json_each(%s)
    ) AS k CROSS JOIN curation_entryband b
         ON b.band = k.band AND b.scope >= k.scope AND b.scope < k.scope || '0'
            AND (b.scope = k.scope OR b.scope >= k.scope || '/')
"""

# A batch's pool of conflict partners for one scope on SQLite (partners.batch_pools): the newest active
# entries (DETECTION_FIELDS) of its ancestors (a JSON list, the scope itself among them) and of the range
# below it (bytewise, as access.overlapping_scopes_q says it). Each half read through the active-scope index
# (scope, id): left to itself SQLite walks the active entries newest first until it has found the pool, which
# for the small scopes most batches write to is every active entry of the table, once per scope.
BATCH_POOL_SQLITE = """
    SELECT * FROM (
        SELECT * FROM (
            SELECT id, scope, trigger, content, conditions, status, version
            FROM curation_entry INDEXED BY entry_active_scope_idx
            WHERE status = 'active' AND scope IN (SELECT value FROM json_each(%s))
            ORDER BY id DESC LIMIT %s)
        UNION ALL
        SELECT * FROM (
            SELECT id, scope, trigger, content, conditions, status, version
            FROM curation_entry INDEXED BY entry_active_scope_idx
            WHERE status = 'active' AND scope >= %s AND scope < %s
            ORDER BY id DESC LIMIT %s)
    ) ORDER BY id DESC LIMIT %s
"""

# The text of the active entries among the ids (a JSON list), for SQLite's word measure.
ACTIVE_TEXTS_SQLITE = """
    SELECT id, trigger, content FROM curation_entry
    WHERE status = 'active' AND id IN (SELECT value FROM json_each(%s))
"""


class ScopeOverlapsAny(Func):
    """access.overlapping_any_scope_q of `scopes` as two parameters (id_set_param's forms): the scope is one of
    their ancestors (or one of them), or lies below one of them (LIKE '<scope>/%', as startswith). A release
    or a batch names hundreds of scopes, and a condition per scope cost more to build, compile and plan than
    the few rows (tombstones) it reads."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, scopes, column: str = "scope"):
        super().__init__(F(column))
        scopes = sorted(set(scopes))
        self.ancestors = sorted({ancestor for scope in scopes for ancestor in access.scope_ancestors(scope)})
        self.scopes = scopes

    def as_sql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        if not self.scopes:
            return "1 = 0", []
        below = [connection.ops.prep_for_like_query(scope) + "/%" for scope in self.scopes]
        if connection.vendor == "postgresql":
            sql = f"({column} = ANY(CAST(%s AS text[])) OR {column} LIKE ANY(CAST(%s AS text[])))"
            return sql, [*params, pg_array(self.ancestors), *params, pg_array(below)]
        sql = (
            f"({column} IN (SELECT value FROM json_each(%s)) "
            f"OR EXISTS (SELECT 1 FROM json_each(%s) AS below WHERE {column} LIKE below.value ESCAPE '\\'))"
        )
        return sql, [*params, json.dumps(self.ancestors), *params, json.dumps(below)]


class IdIn(Func):
    """`id IN (...)` for a batch's ids in the ORM, as one parameter (id_in_sql): a list of thousands is not
    thousands of placeholders to compile, bind and parse, once per statement of a batch (SQLite refuses more
    than 32,766)."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, ids, column: str = "id"):
        super().__init__(F(column))
        self.ids = [int(i) for i in ids]

    def as_sql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        if not self.ids:
            return "1 = 0", []
        return id_in_sql(connection.vendor, column), [*params, id_set_param(connection.vendor, self.ids)]
