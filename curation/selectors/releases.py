"""Reads of published memory versions: the version agents read and its entries, what publishing would
change (the pending draft), the pre-publish checks, the history and the diff of two versions.

A version's content is the ReleasedEntry / ReleasedSkill rows valid in it: valid_from <= N and valid_to
null or above N. Every read here is bounded by the number of changes (Events since a publish, rows that start or
end between two versions), never by the size of the memory."""

from __future__ import annotations

import copy
import datetime
import functools
import operator
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connection, connections, router
from django.db.models import Exists, Max, OuterRef, Q, Subquery
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from psycopg.types.datetime import TimestamptzLoader

from curation.rules import access, clock, config, injection, lifecycle
from curation.models import (
    Conflict,
    Entry,
    Event,
    EventAction,
    MemoryVersion,
    PublishedVersion,
    ReleasedEntry,
    ReleasedSkill,
    SkillProposal,
    SkillSource,
    Status,
)
from curation.rules.memory_export import Lesson, export_files
from curation.rules.trust import Trust
from curation.rules.versions import (
    RELEASED_FIELDS,
    SKILL_RELEASED_FIELDS,
    Change,
    Warning,
    change_between,
    comparable_values,
    concerns,
    released_values,
    summary_for,
)

from .retrieval import (
    RETRIEVAL_POOL_FACTOR,
    Ranked,
    first_distinct,
    rank_by_vector,
    rank_by_words,
    ranking_params,
    without_near_duplicates,
)
from .confidence import with_current_confidence
from .entries import events_as_read
from .forgets import tombstones_for
from .skills import exported_skills_of, skill_md
from .sql import (
    PUBLISHED_NUMBER_SQL,
    IdIn,
    draft_diff_sql,
    id_set_param,
    ranked_by_words_sql,
    released_matches_sql,
)

PENDING_SHOWN = 500  # changes the releases page lists (a publish takes them all)
HISTORY_SHOWN = 50


def in_version(number: int) -> Q:
    """The rows of version `number`."""
    return Q(valid_from__lte=number) & (Q(valid_to__isnull=True) | Q(valid_to__gt=number))


def published_version() -> MemoryVersion | None:
    """The version agents read. The migration made version 1; None only in a database emptied since (a
    test's flush), where agents read nothing until a first publish."""
    pointer = PublishedVersion.objects.select_related("version").filter(pk=1).first()
    return pointer.version if pointer else None


def published_number() -> int:
    """The published version's number, 0 when none is. Every agent read asks it first: one scalar in raw
    SQL, on the connection the router gives the pointer (the replica's, where the version's rows are read),
    where the ORM's query and two model instances cost a millisecond of CPU."""
    with connections[router.db_for_read(PublishedVersion)].cursor() as cursor:
        cursor.execute(PUBLISHED_NUMBER_SQL)
        row = cursor.fetchone()
    return row[0] if row else 0


def version_by_number(number: int) -> MemoryVersion:
    """MemoryVersion.DoesNotExist for a number never published."""
    return MemoryVersion.objects.get(number=number)


def last_event_id() -> int:
    return Event.objects.aggregate(n=Max("pk"))["n"] or 0


def head_number() -> int:
    return MemoryVersion.objects.aggregate(n=Max("number"))["n"] or 0


def version_with_head(version_id: int) -> MemoryVersion:
    """Version `version_id` with the newest version's number (`head`) and the last Event's id
    (`events_through`): what a publish starts from, in one statement (three round trips read them apart)."""
    newest = MemoryVersion.objects.order_by("-number").values("number")[:1]
    last_event = Event.objects.order_by("-pk").values("pk")[:1]
    return MemoryVersion.objects.annotate(head=Subquery(newest), events_through=Subquery(last_event)).get(pk=version_id)


def as_entry(row: ReleasedEntry) -> Entry:
    """A released row as the Entry an answer and a context block are built from (not saved, never written)."""
    return released_entry(row.entry_id, {name: getattr(row, name) for name in RELEASED_FIELDS})


def released_entry(entry_id: int, values: dict, now=None) -> Entry:
    """The Entry of entry `entry_id` as a version released it (`values`: its RELEASED_FIELDS): active, its
    confidence decaying from its last verification (from `now`, the clock's when not given, when it has none,
    as the SQL of a version's rows says). Built from every field's value in order, as a row from the database
    is: built from keywords, each of the 25 fields a version does not hold looks up its default, a third of an
    agent read's CPU."""
    now = now or clock.now()
    # What Model.__init__ leaves on an instance built from every field in order (each attname's value and a
    # new ModelState), without its per-field setattr and signals: twenty of these on every agent read.
    entry = Entry.__new__(Entry)
    entry.__dict__.update(_entry_defaults())
    entry.__dict__.update(values)
    entry.__dict__.update(id=entry_id, status=Status.ACTIVE, flags=[], created_at=now, updated_at=now)
    entry._state = ModelState()
    return entry


@functools.cache
def _entry_defaults() -> dict:
    """Each field's default, for the fields whose default is a constant (released_entry sets the others)."""
    return {
        field.attname: None if field.has_default() and callable(field.default) else field.get_default()
        for field in Entry._meta.concrete_fields
    }


def released_entries(number: int, *, scopes=None, prefix: str = ""):
    """The released rows of version `number`, of exactly `scopes` or under `prefix` when given."""
    rows = ReleasedEntry.objects.filter(in_version(number))
    if scopes is not None:
        rows = rows.filter(scope__in=list(scopes))
    if prefix:
        rows = rows.filter(access.under_scope(prefix))
    return rows


def retrieve_released(
    number: int,
    *,
    scopes,
    q: str = "",
    k: int,
    min_confidence: float,
    kinds=None,
    embedding=None,
    metric: str = "l2",
    min_trust: int = Trust.UNTRUSTED,
) -> list[Ranked]:
    """retrieve_memory's answer, read from version `number` instead of the live rows, ranked the same way:
    on PostgreSQL by the live ranking SQL over the version's rows (one indexed lookup); without a query,
    or on SQLite, by confidence or the portable word match; with an embedding, by exact distance (or its
    fusion with the words) over the version's rows of those scopes. `kinds` limits it to entries of those
    kinds (the rules-only arm: the few that people wrote), ranked by the portable word match on every
    database. `min_trust` leaves out the rows below that provenance trust level, in every path."""
    if not scopes:
        return []
    q = (q or "").strip()[:500]
    pool = k * RETRIEVAL_POOL_FACTOR

    def rows():  # the queryset, built only by the paths that read through it
        found = with_current_confidence(released_entries(number, scopes=scopes), released=True).filter(
            current_confidence__gte=min_confidence
        )
        if min_trust > Trust.UNTRUSTED:
            found = found.filter(trust__gte=min_trust)
        return found.filter(kind__in=list(kinds)) if kinds is not None else found

    def by_words(size, distinct=None):  # with `distinct`, the first that many that repeat none before them
        if q and connection.vendor == "postgresql" and kinds is None:
            return _ranked_released_postgres(
                number, scopes, q, min_confidence, size, min_trust, distinct=distinct, embeddings=embedding is not None
            )
        ranked = rank_by_words(rows(), q, size, as_entry)
        return ranked if distinct is None else without_near_duplicates(ranked, distinct)

    if embedding is not None:
        ranked = rank_by_vector(
            rows(), embedding, metric, q=q, pool=pool, by_words=by_words, id_field="entry_id", as_entry=as_entry
        )
        return without_near_duplicates(ranked, k)
    return by_words(pool, distinct=k)


# What the ranking SQL fetches of a released row: the entry it is and what an answer shows of it. The
# embedding only for a fusion with a query embedding (rank_by_vector measures the distance of a word hit from
# it): an answer never shows it, and an agent's vector is its largest field.
_RANKED_COLUMNS = ("entry_id", *(name for name in RELEASED_FIELDS if name != "embedding"))
_RANKED_WITH_EMBEDDING = (*_RANKED_COLUMNS, "embedding")  # last: the other columns keep their places
_JSON_COLUMNS = frozenset(
    name for name in RELEASED_FIELDS if ReleasedEntry._meta.get_field(name).get_internal_type() == "JSONField"
)
# Each column list's JSON fields, (name, field) in order: looked up once, not on every read.
_JSON_FIELDS = {
    names: tuple((name, ReleasedEntry._meta.get_field(name)) for name in names if name in _JSON_COLUMNS)
    for names in (_RANKED_COLUMNS, _RANKED_WITH_EMBEDDING)
}


def _ranked_released_postgres(
    number: int,
    scopes,
    q: str,
    min_confidence: float,
    pool: int,
    min_trust: int = Trust.UNTRUSTED,
    *,
    distinct: int | None = None,
    embeddings: bool = False,
) -> list[Ranked]:
    """The ranking SQL over version `number`'s rows, each row made the Entry an answer is built from in one
    step (through the fields' own converters), not a ReleasedEntry first: on every agent read. With
    `distinct`, only the first that many rows that repeat no row before them (without_near_duplicates' rule,
    judged on the rows as read), so that only the entries answered are built. The entries carry their
    embedding only with `embeddings` (else None)."""
    db = router.db_for_read(ReleasedEntry)
    # On the primary the statement also reads which of its rows are in quarantine now (as_served's question,
    # in the same statement instead of a second round trip); a replica may lag behind a quarantine, so there
    # as_served asks the primary.
    on_primary = db == DEFAULT_DB_ALIAS
    names = _RANKED_WITH_EMBEDDING if embeddings else _RANKED_COLUMNS
    sql = _ranking_sql(names, on_primary)
    params = {**ranking_params(scopes, q, min_confidence, pool), "version": number, "min_trust": int(min_trust)}
    read_on = connections[db]  # asked once: each connections[] look-up goes through a thread-local
    with read_on.cursor() as cursor:
        # The times as psycopg reads them (in C), not through Django's loader, which parses each in Python to
        # set its time zone: the pool's rows are read for the few answered, which get Django's zone below.
        cursor.cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
        cursor.execute(sql, params)
        found = cursor.fetchall()
    if distinct is not None:
        found = first_distinct(found, distinct, _RANKED_LESSON)
    fields, value_names = _JSON_FIELDS[names], names[1:]  # the entry's id apart: it is not one of its values
    zone, now, ranked = read_on.timezone, clock.now(), []
    for row in found:
        values = dict(zip(value_names, row[1:]))
        for name, field in fields:
            values[name] = field.from_db_value(values[name], None, read_on)
        if (verified := values["last_verified_at"]) is not None:  # as Django's loader gives it: the session's
            values["last_verified_at"] = verified.replace(tzinfo=zone)  # time in the connection's zone
        entry = released_entry(row[0], values, now)
        ranked.append(Ranked(entry, float(row[-1]), withheld=bool(row[-2]) if on_primary else None))
    return ranked


_ranking_sqls: dict[tuple, tuple[lifecycle.Rules, str]] = {}  # (columns, on the primary): (rules, statement)


def _ranking_sql(names: tuple[str, ...], on_primary: bool) -> str:
    """_ranked_released_postgres's statement, built again only when the confidence rules it embeds
    (released_matches_sql reads them) are others: the same text on every agent read."""
    rules = lifecycle.rules()  # the same object while the settings are
    kept = _ranking_sqls.get((names, on_primary))
    if kept is None or kept[0] is not rules:
        columns = ", ".join(f"e.{name}" for name in names) + (f", {WITHHELD_SQL} AS withheld" if on_primary else "")
        kept = (rules, ranked_by_words_sql(columns, released_matches_sql(), ReleasedEntry._meta.db_table))
        _ranking_sqls[(names, on_primary)] = kept
    return kept[1]


# A ranked row's (fingerprint, trigger, content), as first_distinct reads it.
_RANKED_LESSON = operator.itemgetter(*(_RANKED_COLUMNS.index(name) for name in ("fingerprint", "trigger", "content")))


# --- entries withheld as possible injections -------------------------------------------------------------------


# A released row's entry is in quarantine now: withheld_among's query as a column of the ranking statement
# (a hashed lookup over the partial index of quarantined entries, read once per statement).
WITHHELD_SQL = "e.entry_id IN (SELECT w.id FROM curation_entry w WHERE w.quarantined)"


def withheld_among(entry_ids) -> set[int]:
    """Of `entry_ids`, the entries in quarantine (an injection detector flagged their text since, and no lead
    has decided): agents read a placeholder instead of them, whatever version released them. One query on the
    primary, on the partial index of quarantined entries; none for no ids. Asked after the ranking (and its
    cache), so a quarantine counts from the moment it is written."""
    ids = list(entry_ids)
    if not ids:
        return set()
    return set(Entry.objects.filter(pk__in=ids, quarantined=True).values_list("pk", flat=True))


def placeholder(entry: Entry) -> Entry:
    """An entry as agents read it while it is in quarantine: its id, scope and trust, and "withheld for
    review, #id" for its text (a copy: the ranking's cached Entry is never changed)."""
    shown = copy.copy(entry)
    text = injection.withheld_text(entry.pk)
    shown.trigger, shown.content, shown.boundary, shown.recheck_when = text, text, "", ""
    shown.conditions, shown.embedding, shown.quarantined = [], None, True
    return shown


def as_served(ranked: list[Ranked]) -> list[Entry]:
    """The entries of `ranked` as an agent is served them: those in quarantine as their placeholder. What the
    ranking statement itself read on the primary is taken as read; the rest (a cached ranking, a replica's)
    is asked of the primary now."""
    held = {r.entry.pk for r in ranked if r.withheld}
    held |= withheld_among(r.entry.pk for r in ranked if r.withheld is None)
    return [placeholder(r.entry) if r.entry.pk in held else r.entry for r in ranked]


def released_skill_ids(number: int) -> list[int]:
    return list(ReleasedSkill.objects.filter(in_version(number)).values_list("skill_id", flat=True))


# --- what a release would change --------------------------------------------------------------------------


def among(field: str, ids) -> Q:
    """`field` is one of `ids`, given as one parameter (sql.IdIn): a publish's reads name one id per change,
    and an IN list of 100,000 placeholders costs more to build and parse than the rows it reads (SQLite
    refuses it)."""
    return Q(IdIn(ids, column=field))


def rows_at(number: int, entry_ids) -> dict[int, dict]:
    """{entry id: its released values in version `number`}: read as tuples, not rows made model instances
    (a publish reads one per change)."""
    if not entry_ids:
        return {}
    rows = ReleasedEntry.objects.filter(in_version(number), among("entry_id", entry_ids))
    return _released_by_id(rows.values_list("entry_id", *RELEASED_FIELDS))


def _released_by_id(rows) -> dict[int, dict]:
    return {row[0]: comparable_values(dict(zip(RELEASED_FIELDS, row[1:]))) for row in rows}


def skill_rows_at(number: int, skill_ids) -> dict[int, dict]:
    return {
        r.skill_id: released_values(r, SKILL_RELEASED_FIELDS)
        for r in ReleasedSkill.objects.filter(in_version(number), skill_id__in=list(skill_ids))
    }


def row_ids_at(number: int, entry_ids) -> dict[int, int]:
    """{entry id: the id of its row in version `number`}."""
    if not entry_ids:
        return {}
    return dict(
        ReleasedEntry.objects.filter(in_version(number), among("entry_id", entry_ids)).values_list("entry_id", "pk")
    )


def skill_versions(skill_ids) -> list[tuple[int, int]]:
    return list(SkillProposal.objects.filter(pk__in=list(skill_ids)).values_list("pk", "version"))


def live_skill_values(skill_ids) -> dict[int, dict]:
    rows = SkillProposal.objects.filter(pk__in=list(skill_ids), status=SkillProposal.Status.APPROVED)
    return {p.pk: released_values(p, SKILL_RELEASED_FIELDS) for p in rows.only("id", *SKILL_RELEASED_FIELDS)}


@dataclass
class Candidates:
    """The entries and skills that may differ between the published version and the draft."""

    entry_ids: set[int]
    skill_ids: set[int]


def draft_candidates(
    published: MemoryVersion | None, prefix: str = "", *, also_entry_ids=(), head: int | None = None
) -> Candidates:
    """What may have changed since the published version: the subjects of the Events since its
    `pending_from_event`, what differs between it and the newest version (`head`, read when not given; after
    a rollback), and the source entries of those skills (approving a skill withholds its sources; retiring it
    gives them back). Under `prefix`, only entries and skills whose live scope lies there. Bounded by the
    changes."""
    since = published.pending_from_event if published else 0
    subjects = (
        Event.objects.filter(pk__gte=since)
        .filter(Q(entry__isnull=False) | Q(skill__isnull=False))
        .values_list("entry_id", "skill_id")
        .distinct()
    )
    entry_ids = {entry for entry, _ in subjects if entry} | set(also_entry_ids)
    skill_ids = {skill for _, skill in subjects if skill}
    head = head_number() if head is None else head
    if published and published.number != head:
        drift_entries, drift_skills = drift_between(published.number, head)
        entry_ids |= drift_entries
        skill_ids |= drift_skills
    if prefix:
        skill_ids = set(
            SkillProposal.objects.filter(access.under_scope(prefix), pk__in=skill_ids).values_list("pk", flat=True)
        )
    if skill_ids:
        entry_ids |= set(SkillSource.objects.filter(proposal_id__in=skill_ids).values_list("entry_id", flat=True))
    if prefix:
        entry_ids = set(
            Entry.objects.filter(access.under_scope(prefix), among("pk", entry_ids)).values_list("pk", flat=True)
        )
    return Candidates(entry_ids, skill_ids)


# What a publish reads of each change: its scope (the memory tests it touches) and what the pre-publish checks
# read of a released one (its text, against the forgotten lessons; its boundary). Its other fields are
# compared in the database, never read.
PUBLISH_FIELDS = ("scope", "trigger", "content", "boundary")


def changes_of(base: int, candidates: Candidates, *, fields=RELEASED_FIELDS) -> list[Change]:
    """How the draft differs from version `base` for these candidates: entries, then skills. An entry's
    before and after hold `fields` of its values (all by default; a publish reads PUBLISH_FIELDS)."""
    changes = _entry_changes(base, candidates.entry_ids, fields)
    skills_before = skill_rows_at(base, candidates.skill_ids)
    skills_after = live_skill_values(candidates.skill_ids)
    changes += [
        c
        for i in sorted(candidates.skill_ids)
        if (c := change_between(i, skills_before.get(i), skills_after.get(i), is_skill=True))
    ]
    return changes


def _compared_as(name: str, vendor: str) -> str:
    """How the draft diff compares a released field ("{}" the column), as released_values compares it: the
    base confidence to 4 places, no conditions as none, JSON as its value (SQLite holds it as text)."""
    pg = vendor == "postgresql"
    if name == "base_confidence":
        return "round(CAST({} AS numeric), 4)" if pg else "round({}, 4)"
    if name == "conditions":
        return "coalesce({}, CAST('[]' AS jsonb))" if pg else "json(coalesce({}, '[]'))"
    if name in _JSON_COLUMNS and not pg:
        return "json({})"
    return "{}"


def _entry_changes(base: int, entry_ids, fields) -> list[Change]:
    """The candidates' changes from version `base`, found by one statement that compares every released field
    in the database (draft_diff_sql): no unchanged row is read, and a changed one only for its `fields`."""
    if not entry_ids:
        return []
    vendor = connection.vendor
    compared = {name: _compared_as(name, vendor) for name in RELEASED_FIELDS}
    with connection.cursor() as cursor:
        cursor.execute(
            draft_diff_sql(vendor, compared, fields),
            {"ids": id_set_param(vendor, sorted(entry_ids)), "base": base},
        )
        found = cursor.fetchall()
    # Each value as the ORM would give it (a JSON column decoded, a time parsed on SQLite), then comparable.
    converted = [(i, name, _converters(name)) for i, name in enumerate(fields)]
    converted = [(i, name, fns) for i, name, fns in converted if fns]
    width = len(fields)

    def values(row: tuple, start: int) -> dict:
        shown = list(row[start : start + width])
        for i, name, (fns, expression) in converted:
            for fn in fns:
                shown[i] = fn(shown[i], expression, connection)
        return comparable_values(dict(zip(fields, shown)))

    return [
        Change(row[0], values(row, 3) if row[1] else None, values(row, 3 + width) if row[2] else None) for row in found
    ]


def _converters(name: str):
    """The converters the ORM runs on a released field's value read from the database, with the expression
    they take (None when there are none)."""
    expression = Col(ReleasedEntry._meta.db_table, ReleasedEntry._meta.get_field(name))
    fns = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)
    return (fns, expression) if fns else None


def pending_changes(prefix: str = "", *, user=None) -> list[Change]:
    """What publishing (under `prefix`) would change against the published version, each with the latest
    Event that caused it; only what `user` may see when given."""
    published = published_version()
    changes = changes_of(published.number if published else 0, draft_candidates(published, prefix))
    if user is not None:
        changes = [c for c in changes if access.user_can_see_scope(user, c.scope)]
    _attach_causes(changes, published.pending_from_event if published else 0)
    if user is not None:  # a cause is read as the entry's history reads it: nothing beyond the user's scopes
        causes = events_as_read(access.user_scope_prefixes(user), [c.cause for c in changes if c.cause])
        shown = {event.pk: event for event in causes}
        for change in changes:
            change.cause = shown.get(change.cause.pk) if change.cause else None
    return changes


def _attach_causes(changes: list[Change], since_event: int) -> None:
    """The latest Event of each changed entry or skill since the published version: why it is in the draft
    (one query; a change a rollback brought back has its cause before that, and shows none)."""
    entry_ids = [c.subject_id for c in changes if not c.is_skill]
    skill_ids = [c.subject_id for c in changes if c.is_skill]
    if not changes:
        return
    latest = {}
    events = Event.objects.filter(among("entry_id", entry_ids) | Q(skill_id__in=skill_ids), pk__gte=since_event)
    for event in events.order_by("pk"):
        if event.skill_id in skill_ids:
            latest[("skill", event.skill_id)] = event
        if event.entry_id in entry_ids:
            latest[("entry", event.entry_id)] = event
    for change in changes:
        change.cause = latest.get(("skill" if change.is_skill else "entry", change.subject_id))


def low_impact(changes: list[Change], actions) -> list[Change]:
    """The entry changes auto-publish may release alone: still released (not a removal), every Event of the
    entry since the published version one of `actions`, and no pre-publish warning."""
    candidates = [c for c in changes if not c.is_skill and c.after is not None]
    if not candidates:
        return []
    published = published_version()
    since = published.pending_from_event if published else 0
    ids = [c.subject_id for c in candidates]
    other = set(
        Event.objects.filter(among("entry_id", ids), pk__gte=since)
        .exclude(action__in=list(actions))
        .values_list("entry_id", flat=True)
    )
    warned = {w.entry_id for w in pre_publish_checks(candidates)}
    return [c for c in candidates if c.subject_id not in other | warned]


def group_by_scope(changes: list[Change]) -> list[tuple[str, list[Change]]]:
    groups: dict[str, list[Change]] = {}
    for change in changes:
        groups.setdefault(change.scope, []).append(change)
    return sorted(groups.items())


def pre_publish_checks(changes: list[Change], *, now=None, kept_under: str | None = None, user=None) -> list[Warning]:
    """What a lead must acknowledge before publishing these changes: open conflicts between entries of the
    release, entries whose recent task outcomes failed, entries without a boundary. One query each. First
    the blocking ones, which no acknowledgement passes: entries a forgotten lesson's tombstone matches that
    the release would add, change or (`kept_under` a prefix, "" for all) keep (forgotten_in_release).
    `user`: the reader (the releases page), to whom no entry or conflict beyond their scopes is named; the
    changes are theirs already (pending_changes), the entries a forget kept and a conflict's other side are
    cut here. None: every scope (a publish, whose reach is checked before)."""
    now = now or clock.now()
    released = [c for c in changes if not c.is_skill and c.after is not None]
    ids = [c.subject_id for c in released]
    warnings = forgotten_in_release(released, kept_under=kept_under, user=user)
    if not ids:
        return warnings
    for conflict in (
        Conflict.objects.filter(among("entry_a_id", ids) | among("entry_b_id", ids), state=Conflict.State.OPEN)
        .select_related("entry_a", "entry_b")
        .order_by("pk")
    ):
        entry_id = conflict.entry_a_id if conflict.entry_a_id in ids else conflict.entry_b_id
        if user is None or all(access.user_can_see_scope(user, e.scope) for e in (conflict.entry_a, conflict.entry_b)):
            said = f"#{entry_id} is in open {conflict.label}."
        else:  # as the entry's history says it (events_as_read)
            said = f"#{entry_id} is in an open conflict with an entry outside your scopes."
        warnings.append(Warning("conflict", entry_id, said))
    since = now - datetime.timedelta(days=config.FAILED_OUTCOME_DAYS.value)
    failed = (
        Event.objects.filter(among("entry_id", ids), action=EventAction.OUTCOME_FAILURE, created_at__gte=since)
        .values_list("entry_id", flat=True)
        .distinct()
    )
    for entry_id in sorted(set(failed)):
        warnings.append(Warning("failed_outcomes", entry_id, f"#{entry_id}: a task that used it failed recently."))
    for change in released:
        if not change.after["boundary"].strip():
            warnings.append(
                Warning(
                    "no_boundary", change.subject_id, f"#{change.subject_id} says nothing about when it does not hold."
                )
            )
    return warnings


def forgotten_in_release(released: list[Change], *, kept_under: str | None, user=None) -> list[Warning]:
    """The released entries (added or changed: `released`; and, under `kept_under`, the active ones a forget
    left matching its tombstone, unticked or outside its lead's scopes) that repeat a forgotten lesson: a
    release never gives one back to agents. Two queries, and one for the tombstones when any is a candidate."""
    lessons = {c.subject_id: (c.after["scope"], c.after["trigger"], c.after["content"]) for c in released}
    if kept_under is not None:
        left = {
            pk
            for after in Event.objects.filter(
                forget_request__isnull=False, action=EventAction.FORGET_APPROVED
            ).values_list("after", flat=True)
            for pk in (after or {}).get("left_matching", [])
        }
        kept = Entry.objects.filter(pk__in=sorted(left - set(lessons)), status=Status.ACTIVE)
        if kept_under:
            kept = kept.filter(access.under_scope(kept_under))
        if user is not None:  # the reader's only: an entry beyond their scopes is not theirs to name
            kept = kept.filter(access.scope_q(access.user_scope_prefixes(user)))
        lessons.update(
            {e.pk: (e.scope, e.trigger, e.content) for e in kept.only("id", "scope", "trigger", "content")}
            if left
            else {}
        )
    ids = sorted(lessons)
    return [
        Warning(
            "forgotten",
            pk,
            f"#{pk} repeats a lesson forgotten by forget request #{stone.request_id}: "
            "forget or retire it; it is not published.",
        )
        for pk, stone in zip(ids, tombstones_for([lessons[pk] for pk in ids]))
        if stone is not None
    ]


# --- history and diff -----------------------------------------------------------------------------------


def version_history(user=None, limit: int = HISTORY_SHOWN) -> list[MemoryVersion]:
    """The newest versions, each with `shown_summary` and `shown_prefix` as `user` reads them: a publish
    under scopes beyond the reader's says only that (versions.summary_for)."""
    prefixes = access.user_scope_prefixes(user) if user is not None else None
    versions = list(MemoryVersion.objects.order_by("-number")[:limit])
    for v in versions:
        v.shown_summary = summary_for(v.scope_prefix, v.summary, prefixes)
        v.shown_prefix = v.scope_prefix if concerns(v.scope_prefix, prefixes) else ""
    return versions


def drift_between(a: int, b: int) -> tuple[set[int], set[int]]:
    """The entries and skills whose rows start or end between versions a and b: the only ones that may
    differ between them (two indexed range reads)."""
    low, high = min(a, b), max(a, b)
    moved = Q(valid_from__gt=low, valid_from__lte=high) | Q(valid_to__gt=low, valid_to__lte=high)
    return (
        set(ReleasedEntry.objects.filter(moved).values_list("entry_id", flat=True)),
        set(ReleasedSkill.objects.filter(moved).values_list("skill_id", flat=True)),
    )


def version_diff(a: int, b: int, *, prefixes=None) -> list[Change]:
    """What changes from version a to version b (either order), entries then skills, under the reader's
    scope prefixes (None: all)."""
    entry_ids, skill_ids = drift_between(a, b)
    before, after = rows_at(a, entry_ids), rows_at(b, entry_ids)
    changes = [c for i in sorted(entry_ids) if (c := change_between(i, before.get(i), after.get(i)))]
    skills_before, skills_after = skill_rows_at(a, skill_ids), skill_rows_at(b, skill_ids)
    changes += [
        c
        for i in sorted(skill_ids)
        if (c := change_between(i, skills_before.get(i), skills_after.get(i), is_skill=True))
    ]
    if prefixes is not None:
        changes = [c for c in changes if access.covered_by_any(prefixes, c.scope)]
    return changes


def change_json(change: Change) -> dict:
    data = {
        "kind": change.kind,
        "scope": change.scope,
        ("skill" if change.is_skill else "entry"): change.subject_id,
        "before": change.before,
        "after": change.after,
        "fields": [{"name": f.name, "before": f.before, "after": f.after} for f in change.fields],
    }
    if change.cause is not None:
        data["cause"] = {
            "event": change.cause.pk,
            "action": change.cause.action,
            "actor": change.cause.actor_label,
            "at": change.cause.created_at.isoformat(),
            "reason": change.cause.reason,
        }
    return data


# --- exports --------------------------------------------------------------------------------------------


def export_of(version: MemoryVersion, *, prefixes=None, scope: str = "") -> dict[str, str]:
    """The files of version `version`'s export (MEMORY.md, topics, skills), of the entries and skills under
    `prefixes` (None: all) and `scope` (when given)."""
    rows = released_entries(version.number, prefix=scope)
    skills = SkillProposal.objects.filter(pk__in=released_skill_ids(version.number))
    if scope:
        skills = skills.filter(access.under_scope(scope))
    if prefixes is not None:
        rows = rows.filter(access.scope_q(list(prefixes)))
        skills = skills.filter(access.scope_q(list(prefixes)))
    # In quarantine since the version was published: the placeholder, never the text (one join on the id).
    rows = rows.annotate(withheld=Exists(Entry.objects.filter(pk=OuterRef("entry_id"), quarantined=True)))
    lessons = [
        Lesson(
            r.entry_id,
            r.scope,
            r.kind,
            r.trigger,
            r.content,
            tuple(r.conditions),
            r.boundary,
            r.signal,
            r.confidence,
            withheld=r.withheld,
            trust=r.trust,
        )
        for r in rows.order_by("scope", "entry_id").iterator(chunk_size=2000)
    ]
    skill_files = [(p.slug, skill_md(p)) for p in exported_skills_of(skills)]
    return export_files(
        lessons,
        skill_files,
        version_number=version.number,
        summary=summary_for(version.scope_prefix, version.summary, prefixes),
    )
