"""Reads for forget requests and tombstones: the Forget queue (open requests, oldest first, each card with
its entry and the near duplicates to forget with it) and the tombstones ingest, the write path and the
sweeps compare lessons with. A fixed number of queries per page, whatever its size.

A card's near duplicates are the active, pending (deferred too) and archived entries the request's
tombstone would match (forgetting.same_lesson: what the write path refuses once it exists), ticked, and the
active entries the queues' similarity search finds, unticked. Approval refuses to leave an active match the
lead sees unticked (`live_matches`); a pending or archived one left unticked stays, and the write path
refuses to approve or revive it while the tombstone matches it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Q

from curation import access, clock
from curation.forgetting import Lesson, same_lesson
from curation.models import Entry, ForgetRequest, Status, Tombstone
from curation.similarity import fingerprint, signature

from .entries import visible_entries
from .forget_quotes import quotes_of_many
from .paging import Page, capped_count, read_page
from .similar import similar_active_entries_many

PAGE_SIZE = 20
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
        q = Q(state=self.state or ForgetRequest.State.OPEN)
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
    return visible_forget_requests(user).filter(state=ForgetRequest.State.OPEN)


def _target(request: ForgetRequest) -> Entry:
    """What the near-duplicate search looks for: the entry, or (a text request) an unsaved entry made of the
    text in the request's scope; id 0, which no entry has, so nothing is excluded as itself."""
    if request.entry_id:
        return request.entry
    return Entry(pk=0, scope=request.scope, trigger=request.match_text, content=request.match_text, conditions=[])


def prospective_tombstones(request: ForgetRequest) -> list[Tombstone]:
    """The tombstone approving an open request leaves of its own entry or text (unsaved), made as approval
    makes it: what its near duplicates are matched with."""
    if request.entry_id:
        e = request.entry
        return [Tombstone(scope=e.scope, fingerprint=fingerprint(e.trigger, e.content),
                          signature=signature(f"{e.trigger} {e.content}"))]
    return [Tombstone(scope=request.scope, signature=signature(request.match_text))]


def _overlapping(tombstones) -> Q:
    return access.overlapping_any_scope_q({t.scope for t in tombstones}, bytewise=connection.vendor == "sqlite")


def matching_entries(tombstones, *, statuses=MATCHED_STATUSES, within: Q = Q(), exclude=()) -> list[Entry]:
    """The entries in `statuses` (`within` narrows them) that one of `tombstones` matches: the MATCH_POOL
    newest of the overlapping scopes read in one query, each compared in Python. Oldest first."""
    if not tombstones:
        return []
    rows = list(Entry.objects.filter(_overlapping(tombstones), within, status__in=list(statuses))
                .exclude(pk__in=list(exclude)).only(*_MATCH_FIELDS).order_by("-id")[:MATCH_POOL])
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
    pooled = matching_entries([t for ts in stones.values() for t in ts],
                              within=access.scope_q(access.user_scope_prefixes(user)))
    matched = {r.pk: [e for e in pooled if e.pk != r.entry_id and forgotten_among([e], stones[r.pk])]
               for r in open_ones}
    # The search is keyed by entry id: text requests (all id 0) are searched one by one.
    by_entry = similar_active_entries_many([t for t in targets.values() if t.pk], limit=SUGGESTED)
    found = {r.pk: (by_entry.get(targets[r.pk].pk, []) if targets[r.pk].pk
                    else similar_active_entries_many([targets[r.pk]], limit=SUGGESTED)[0])
             for r in open_ones}
    wanted = {pk for pairs in found.values() for pk, _ in pairs}
    wanted |= {pk for r in requests if r.state != ForgetRequest.State.OPEN for pk in r.forgotten_ids}
    entries = {e.pk: e for e in visible_entries(user).filter(pk__in=wanted)} if wanted else {}
    now = clock.now()
    for r in requests:
        if r.state == ForgetRequest.State.OPEN:
            scores = dict(found[r.pk])
            same = [(e, scores.get(e.pk)) for e in matched[r.pk]]
            similar = [(entries[pk], score) for pk, score in found[r.pk]
                       if pk in entries and pk != r.entry_id and pk not in {e.pk for e, _ in same}]
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


def forget_queue(user, filters: ForgetFilters = ForgetFilters(), *, cursor: str = "",
                 page_size: int = PAGE_SIZE) -> Page:
    """One page of requests (open ones by default), oldest first, keyset on (created_at, id)."""
    qs = _with_held_count(visible_forget_requests(user).filter(filters.as_q()).select_related("entry", "decided_by"))
    return read_page(qs, qs, stamp="created_at", cursor=cursor, page_size=page_size, filters=filters,
                     prepare=lambda rows: _with_quotes(user, _with_suggestions(user, rows)))


def forget_card(user, request_id) -> ForgetRequest:
    request = _with_held_count(visible_forget_requests(user).select_related("entry", "decided_by")).get(pk=request_id)
    return _with_quotes(user, _with_suggestions(user, [request]))[0]


# --- tombstones ---------------------------------------------------------------------------------------------


def tombstone_for(scope: str, trigger: str, content: str) -> Tombstone | None:
    """The tombstone of a forgotten lesson that this one repeats, exactly or nearly, in an overlapping
    scope (the oldest), or None: one query over the tombstones of the overlapping scopes."""
    return tombstones_for([(scope, trigger, content)])[0]


def tombstones_for(lessons: list[tuple[str, str, str]]) -> list[Tombstone | None]:
    """tombstone_for of many (scope, trigger, content) at once, in one query: a batch's."""
    if not lessons:
        return []
    overlapping = access.overlapping_any_scope_q(scope for scope, _, _ in lessons)
    stones = list(Tombstone.objects.filter(overlapping).order_by("id"))
    if not stones:  # the usual answer: no lesson's signature is worth computing
        return [None] * len(lessons)
    found = []
    for scope, trigger, content in lessons:
        lesson = Lesson.of(scope, trigger, content)
        found.append(next((stone for stone in stones if same_lesson(
            lesson, scope=stone.scope, fingerprint=stone.fingerprint, signature=stone.signature)), None))
    return found


def all_tombstones() -> list[Tombstone]:
    """Every tombstone, for a sweep that compares many lessons at once (forgetting is rare: they are few)."""
    return list(Tombstone.objects.only("scope", "fingerprint", "signature", "request_id").order_by("id"))


def forgotten_among(entries, tombstones: list[Tombstone]) -> set[int]:
    """The ids of `entries` that repeat a forgotten lesson: what a sweep never proposes again."""
    if not tombstones:
        return set()
    found = set()
    for entry in entries:
        lesson = Lesson.of(entry.scope, entry.trigger, entry.content)
        if any(same_lesson(lesson, scope=t.scope, fingerprint=t.fingerprint, signature=t.signature)
               for t in tombstones):
            found.add(entry.pk)
    return found
