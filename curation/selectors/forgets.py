"""Reads for forget requests and tombstones: the Forget queue (open requests, oldest first, each card with
its entry and the near duplicates to forget with it) and the tombstones ingest, the write path and the
sweeps compare lessons with. A fixed number of queries per page, whatever its size.

A card's near duplicates are the active, pending (deferred too) and archived entries the request's
tombstone would match (forgetting.same_lesson: what the write path refuses once it exists), ticked, and the
active entries the queues' similarity search finds, unticked. Approval refuses to leave an active match the
lead sees unticked (`live_matches`); a pending or archived one left unticked stays, and the write path
refuses to approve or revive it while the tombstone matches it."""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count, Q

from curation.infra.round_trip import one_round_trip
from curation.rules import access, clock
from curation.rules.forgetting import (
    LEGACY_KEY_ID,
    Lesson,
    forgotten_lesson,
    key_id,
    same_lesson,
    same_stems,
    tombstone_key,
)
from curation.rules.matching_text import Token, distinctive_tokens, reading
from curation.models import Entry, ForgetRequest, Status, Tombstone

from .entries import visible_entries
from .forget_quotes import quotes_of_many
from .paging import Page, capped_count, read_page
from .similar import similar_active_entries_many
from .sql import ScopeOverlapsAny

PAGE_SIZE = 20
WAITING = (ForgetRequest.State.OPEN, ForgetRequest.State.REOPENED)  # what a lead has to decide
SUGGESTED = 8  # near duplicates by similarity a card offers to forget along
# The statuses whose entries a tombstone is compared with on the card: what agents read, what reviewers may
# still approve, what a revival may bring back.
MATCHED_STATUSES = (Status.ACTIVE, Status.PENDING, Status.ARCHIVED)
# Entries of the overlapping scopes compared with a request's tombstone, newest first: each costs its
# signature (about 70 microseconds), so a card and an approval stay under a second or so.
MATCH_POOL = 5000
_MATCH_FIELDS = ("id", "scope", "trigger", "content", "status", "queued_at", "kind")


@dataclass(frozen=True)
class ForgetFilters:
    scope: str = ""
    state: str = ForgetRequest.State.OPEN

    def as_q(self) -> Q:
        # "open": waiting for a lead, which a request reopened by its receipt is too.
        q = Q(state__in=WAITING) if self.state in ("", ForgetRequest.State.OPEN) else Q(state=self.state)
        if self.scope:
            q &= access.under_scope(self.scope)
        return q

    @property
    def active(self) -> bool:
        return bool(self.scope) or self.state not in ("", ForgetRequest.State.OPEN)


def visible_forget_requests(user):
    """The requests about the user's scopes; another one answers like an unknown one."""
    return ForgetRequest.objects.filter(access.scope_q(access.user_scope_prefixes(user)))


def forget_count(user, filters: ForgetFilters = ForgetFilters()) -> tuple[int, bool]:
    return capped_count(visible_forget_requests(user).filter(filters.as_q()))


def open_forget_requests(user):
    return visible_forget_requests(user).filter(state__in=WAITING)


def _target(request: ForgetRequest) -> Entry:
    """What the near-duplicate search looks for: the entry, or (a text request) an unsaved entry made of the
    text in the request's scope; id 0, which no entry has, so nothing is excluded as itself."""
    if request.entry_id:
        return request.entry
    return Entry(pk=0, scope=request.scope, trigger=request.match_text, content=request.match_text, conditions=[])


def prospective_tombstones(request: ForgetRequest) -> list[Tombstone]:
    """The tombstones approving an open request leaves of its own entry or text (unsaved), made as approval
    makes them (tombstones_of): what its near duplicates are matched with."""
    return tombstones_of(request, [request.entry] if request.entry_id else [], now=clock.now())


def tombstones_of(request: ForgetRequest, entries: list[Entry], *, now) -> list[Tombstone]:
    """The unsaved tombstones of `request` forgetting `entries` (and its text, for a text request): for
    each, the hashes (fingerprint, signature, distinctive tokens) under the install's current key, never a
    word. Built in this one place, for the approval that writes them and for the card that shows what they
    will match."""
    key = next(iter(tombstone_keys().values()))  # the current key: the first
    forgotten_ids = [e.pk for e in entries]
    stones = [
        _tombstone(
            request,
            key,
            scope=e.scope,
            trigger=e.trigger,
            content=e.content,
            exact=True,
            forgotten_ids=forgotten_ids,
            entry=e,
            now=now,
        )
        for e in entries
    ]
    if request.match_text:
        stones.append(
            _tombstone(
                request,
                key,
                scope=request.scope,
                trigger=request.match_text,
                content=request.match_text,
                exact=False,
                forgotten_ids=forgotten_ids,
                entry=None,
                now=now,
            )
        )
    return stones


def _tombstone(
    request: ForgetRequest,
    key: bytes,
    *,
    scope: str,
    trigger: str,
    content: str,
    exact: bool,
    forgotten_ids,
    entry: Entry | None,
    now,
) -> Tombstone:
    text = f"{trigger}\n{content}" if exact else trigger
    tokens = distinctive_tokens(text)
    # A token another lesson of these scopes uses is shared vocabulary: it would hold that lesson too.
    shared = tokens_used_elsewhere(scope, tokens, Lesson.of(scope, trigger, content), exclude_ids=forgotten_ids)
    lesson = forgotten_lesson(key, trigger, content, [t.folded for t in tokens if t.folded not in shared], exact=exact)
    return Tombstone(
        request=request,
        entry=entry,
        scope=scope,
        fingerprint=lesson.fingerprint,
        signature=lesson.signature,
        tokens=lesson.tokens,
        key_id=lesson.key_id,
        forgotten_on=now.date(),
        created_at=now,
    )


def _overlapping(tombstones) -> Q:
    return access.overlapping_any_scope_q({t.scope for t in tombstones}, bytewise=connection.vendor == "sqlite")


def matching_entries(tombstones, *, statuses=MATCHED_STATUSES, within: Q = Q(), exclude=()) -> list[Entry]:
    """The entries in `statuses` (`within` narrows them) that one of `tombstones` matches: the MATCH_POOL
    newest of the overlapping scopes read in one query, each compared in Python. Oldest first."""
    if not tombstones:
        return []
    rows = list(
        Entry.objects.filter(_overlapping(tombstones), within, status__in=list(statuses))
        .exclude(pk__in=list(exclude))
        .only(*_MATCH_FIELDS)
        .order_by("-id")[:MATCH_POOL]
    )
    found = forgotten_among(rows, list(tombstones))
    return sorted((e for e in rows if e.pk in found), key=lambda e: e.pk)


def live_matches(request: ForgetRequest, entries, tombstones) -> list[Entry]:
    """What approving `request` with `entries` ticked would leave matching its `tombstones`: the other active,
    pending and archived entries they match, in every scope (the pre-publish check keeps the active ones of
    them out of every release; the write path keeps the others from coming back)."""
    return matching_entries(tombstones, exclude={e.pk for e in entries} | ({request.entry_id} - {None}))


def unticked_active(user, left: list[Entry]) -> list[Entry]:
    """Of live_matches, the active entries the lead sees: approval refuses while they are unticked."""
    return [e for e in left if e.status == Status.ACTIVE and access.user_can_see_scope(user, e.scope)]


def _deferred(entry: Entry, now) -> bool:
    return entry.status == Status.PENDING and entry.queued_at is not None and entry.queued_at > now


def _with_suggestions(user, requests: list) -> list:
    """Each open request's near duplicates (the user's to see): the entries its tombstone would match, ticked,
    then the active entries the similarity search suggests; each decided one's forgotten entries. One read of
    the overlapping scopes for the page's matching, the search once for the page, one read of the entries."""
    open_ones = [r for r in requests if r.state == ForgetRequest.State.OPEN]
    targets = {r.pk: _target(r) for r in open_ones}
    stones = {r.pk: prospective_tombstones(r) for r in open_ones}
    pooled = matching_entries(
        [t for ts in stones.values() for t in ts], within=access.scope_q(access.user_scope_prefixes(user))
    )
    matched = {
        r.pk: [e for e in pooled if e.pk != r.entry_id and forgotten_among([e], stones[r.pk])] for r in open_ones
    }
    # The search is keyed by entry id: text requests (all id 0) are searched one by one.
    by_entry = similar_active_entries_many([t for t in targets.values() if t.pk], limit=SUGGESTED)
    found = {
        r.pk: (
            by_entry.get(targets[r.pk].pk, [])
            if targets[r.pk].pk
            else similar_active_entries_many([targets[r.pk]], limit=SUGGESTED)[0]
        )
        for r in open_ones
    }
    wanted = {pk for pairs in found.values() for pk, _ in pairs}
    wanted |= {pk for r in requests if r.state != ForgetRequest.State.OPEN for pk in r.forgotten_ids}
    entries = {e.pk: e for e in visible_entries(user).filter(pk__in=wanted)} if wanted else {}
    now = clock.now()
    for r in requests:
        if r.state == ForgetRequest.State.OPEN:
            scores = dict(found[r.pk])
            same = [(e, scores.get(e.pk)) for e in matched[r.pk]]
            similar = [
                (entries[pk], score)
                for pk, score in found[r.pk]
                if pk in entries and pk != r.entry_id and pk not in {e.pk for e, _ in same}
            ]
            for e, _ in same:
                e.same_lesson = True
            for e, _ in similar:
                e.same_lesson = False
            for e, _ in same + similar:
                e.deferred = _deferred(e, now)
            r.suggestions = same + similar
            r.forgotten_entries = []
        else:
            r.suggestions = []
            r.forgotten_entries = [entries[pk] for pk in r.forgotten_ids if pk in entries]
    return requests


def _with_quotes(user, requests: list) -> list:
    """Each open request's "Also found in": the rows beyond the lesson's own that quote its text, for the
    lead to tick (forget_quotes), searched once for the page."""
    open_ones = [r for r in requests if r.state == ForgetRequest.State.OPEN]
    found = quotes_of_many(user, [(r, [r.entry] if r.entry_id else []) for r in open_ones]) if open_ones else {}
    for r in requests:
        r.quotes = found.get(r.pk, [])
    return requests


def _with_held_count(requests):
    """Each request with `held_count`: the submissions since held for repeating what it forgot."""
    return requests.annotate(held_count=Count("held_entries"))


def forget_queue(
    user, filters: ForgetFilters = ForgetFilters(), *, cursor: str = "", page_size: int = PAGE_SIZE
) -> Page:
    """One page of requests (open ones by default), oldest first, keyset on (created_at, id)."""
    qs = _with_held_count(visible_forget_requests(user).filter(filters.as_q()).select_related("entry", "decided_by"))
    return read_page(
        qs,
        qs,
        stamp="created_at",
        cursor=cursor,
        page_size=page_size,
        filters=filters,
        prepare=lambda rows: _with_quotes(user, _with_suggestions(user, rows)),
    )


def forget_card(user, request_id) -> ForgetRequest:
    request = _with_held_count(visible_forget_requests(user).select_related("entry", "decided_by")).get(pk=request_id)
    return _with_quotes(user, _with_suggestions(user, [request]))[0]


# --- tombstones ---------------------------------------------------------------------------------------------


def tombstone_keys() -> dict[str, bytes | None]:
    """The keys tombstones are compared under, by key id: the current one (from SECRET_KEY, the one new
    tombstones are written with: first), each of SECRET_KEY_FALLBACKS (a rotation keeps the tombstones of the
    old key matching while it is a fallback), and the fixed legacy key (None) of the tombstones written before."""
    keys: dict[str, bytes | None] = {}
    for secret in [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]:
        key = tombstone_key(secret)
        keys.setdefault(key_id(key), key)
    keys[LEGACY_KEY_ID] = None
    return keys


def _comparable(stones, keys) -> list[tuple[Tombstone, dict]]:
    """Each stone whose key is known, with what same_lesson compares, read once for a whole batch. A stone
    whose key is no longer known (its secret rotated out of the fallbacks) cannot be compared: it holds
    nothing."""
    return [
        (
            stone,
            {
                "scope": stone.scope,
                "fingerprint": stone.fingerprint,
                "signature": frozenset(stone.signature),
                "tokens": frozenset(stone.tokens),
                "key": keys[stone.key_id],
            },
        )
        for stone in stones
        if stone.key_id in keys
    ]


def _matching(lesson: Lesson, comparable) -> Tombstone | None:
    """The first stone whose forgotten lesson `lesson` is."""
    return next((stone for stone, fields in comparable if same_lesson(lesson, **fields)), None)


def tombstone_for(scope: str, trigger: str, content: str) -> Tombstone | None:
    """The tombstone of a forgotten lesson that this one repeats, exactly or nearly, in an overlapping
    scope (the oldest), or None: one query over the tombstones of the overlapping scopes."""
    return tombstones_for([(scope, trigger, content)])[0]


# Forgetting and the writes that look at the tombstones take turns on PostgreSQL (SQLite lets one writer at a
# time anyway). A write's look inside its transaction holds this advisory lock, shared, until the write
# commits; an approval takes it alone before it reads anything. So an approval reads every lesson a write
# let through (committed by then), and a look made while an approval is being written is refused at once
# (ForgetInProgress) rather than read tombstones the approval has not committed yet. The look never waits for
# the lock inside its transaction: it may hold rows the approval is waiting for.
FORGETTING_LOCK = (0x6D656D6F, 0x666F7267)  # two int4 keys: apart from the sweeps' single-key locks


class ForgetInProgress(ValidationError):
    """A look at the tombstones made while a forget's approval is being written: refused at once, nothing
    saved (the write may hold rows the approval waits for, so it does not wait inside its transaction). Tried
    again once the approval is done, the write sees its tombstones."""

    MESSAGE = "A forget request is being approved at this moment; nothing was saved. Try again in a few seconds."

    def __init__(self):
        super().__init__({"forgotten": [self.MESSAGE]})

    def __str__(self) -> str:  # a refused decision's card shows it as it is
        return self.MESSAGE


# Set while this thread's transaction holds the forgetting lock alone (an approval's: forgetting_alone).
_forgetting_alone: contextvars.ContextVar[bool] = contextvars.ContextVar("forgetting_alone", default=False)

# What a look at the tombstones reads of each (what _comparable and the refusals read).
_STONE_FIELDS = ("id", "request_id", "scope", "fingerprint", "signature", "tokens", "key_id", "forgotten_on")


def _tombstones_where(where) -> list[Tombstone]:
    """The tombstones `where` finds, oldest first. Inside a transaction on PostgreSQL, read under the forgetting
    lock, held shared until the transaction ends, or ForgetInProgress: the lock's statement and the read go as
    one query string, two statements, so the read's snapshot is taken once the lock is held (an approval that
    committed before is seen), in one round trip."""
    found = Tombstone.objects.filter(where).order_by("id")
    if connection.vendor != "postgresql" or not connection.in_atomic_block or _forgetting_alone.get():
        return list(found)  # outside a transaction a look decides nothing: the write's own, in its transaction, does
    sql, params = found.values_list(*_STONE_FIELDS).query.sql_with_params()
    held, rows = one_round_trip(
        [("SELECT pg_try_advisory_xact_lock_shared(%s, %s)", list(FORGETTING_LOCK)), (sql, list(params))]
    )
    if not held[0][0]:
        raise ForgetInProgress
    # Each value as the field reads it from the database (the JSON fields' jsonb arrives as its text).
    loads = [getattr(Tombstone._meta.get_field(name), "from_db_value", None) for name in _STONE_FIELDS]
    return [
        Tombstone(
            **{
                name: value if load is None else load(value, None, connection)
                for name, load, value in zip(_STONE_FIELDS, loads, row)
            }
        )
        for row in rows
    ]


@contextmanager
def forgetting_alone():
    """An approval's transaction, from its first statement: wait until every write that looked at the
    tombstones has committed, and keep new looks out until the transaction ends (they are refused, and tried
    again after it). The approval's own looks (its publish's) read plainly: it holds the lock alone, and a
    second approval waiting for it would have them refused."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", FORGETTING_LOCK)
    token = _forgetting_alone.set(True)
    try:
        yield
    finally:
        _forgetting_alone.reset(token)


def wait_for_forgetting() -> None:
    """Return once no approval is being written: a write refused with ForgetInProgress waits here, holding
    nothing, before it is tried again. Inside a transaction (an idempotent request's) the refusal stands: the
    transaction may hold what the approval waits for."""
    if connection.in_atomic_block:
        raise ForgetInProgress
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock_shared(%s, %s)", FORGETTING_LOCK)
            cursor.execute("SELECT pg_advisory_unlock_shared(%s, %s)", FORGETTING_LOCK)


def tombstones_for(lessons: list[tuple[str, str, str]]) -> list[Tombstone | None]:
    """tombstone_for of many (scope, trigger, content) at once, in one query: a batch's. Inside a transaction,
    under the forgetting lock (above) until it ends."""
    if not lessons:
        return []
    stones = _tombstones_where(ScopeOverlapsAny(scope for scope, _, _ in lessons))
    if not stones:  # the usual answer: no lesson's text is worth reading
        return [None] * len(lessons)
    comparable = _comparable(stones, tombstone_keys())
    return [_matching(Lesson.of(scope, trigger, content), comparable) for scope, trigger, content in lessons]


def all_tombstones() -> list[Tombstone]:
    """Every tombstone, for a sweep that compares many lessons at once (forgetting is rare: they are few)."""
    return list(
        Tombstone.objects.only("scope", "fingerprint", "signature", "tokens", "key_id", "request_id").order_by("id")
    )


def forgotten_among(entries, tombstones: list[Tombstone]) -> set[int]:
    """The ids of `entries` that repeat a forgotten lesson: what a sweep never proposes again."""
    if not tombstones:
        return set()
    comparable = _comparable(tombstones, tombstone_keys())
    return {
        entry.pk
        for entry in entries
        if _matching(Lesson.of(entry.scope, entry.trigger, entry.content), comparable) is not None
    }


USES_READ = 20  # entries read per token when looking for other lessons that use it


def tokens_used_elsewhere(scope: str, tokens: list[Token], lesson: Lesson, *, exclude_ids=()) -> set[str]:
    """The folded forms of `tokens` that another lesson in a scope overlapping `scope` also uses: shared
    vocabulary, not what makes this lesson unique (a tombstone holding it would hold those lessons too). A
    near duplicate of `lesson` itself (its own copies, a paraphrase) is not another lesson. One query per
    token, when a forget is approved and when its card shows what the tombstone will match (so a Forget
    queue page costs one more query per distinctive token of each open request); the word is looked for
    case-insensitively inside trigger and content, then the rows read are checked token by token."""
    shared = set()
    overlapping = Entry.objects.filter(access.overlapping_scopes_q(scope)).exclude(pk__in=list(exclude_ids))
    for token in tokens:
        rows = overlapping.filter(
            Q(trigger__icontains=token.written) | Q(content__icontains=token.written)
        ).values_list("trigger", "content")[:USES_READ]
        for trigger, content in rows:
            other = reading(f"{trigger}\n{content}")
            if token.folded in other.forms and not same_stems(lesson.stems, other.stems):
                shared.add(token.folded)
                break
    return shared
