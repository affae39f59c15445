"""Reads for forget requests and tombstones: the Forget queue (open requests, oldest first, each card with
its entry and the near duplicates the queues' own search suggests) and the tombstones ingest and the
sweeps compare lessons with. A fixed number of queries per page, whatever its size."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from curation import access
from curation.forgetting import Lesson, same_lesson
from curation.models import Entry, ForgetRequest, Tombstone

from .entries import visible_entries
from .paging import Page, capped_count, read_page
from .similar import similar_active_entries_many

PAGE_SIZE = 20
WAITING = (ForgetRequest.State.OPEN, ForgetRequest.State.REOPENED)  # what a lead has to decide
SUGGESTED = 8  # near duplicates a card offers to forget along


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


def _with_suggestions(user, requests: list) -> list:
    """Each open request's suggested near duplicates (active entries in overlapping scopes, the user's to
    see), and each decided one's forgotten entries: the search once for the page, then one read of the
    entries."""
    open_ones = [r for r in requests if r.state == ForgetRequest.State.OPEN]
    targets = {r.pk: _target(r) for r in open_ones}
    # The search is keyed by entry id: text requests (all id 0) are searched one by one.
    by_entry = similar_active_entries_many([t for t in targets.values() if t.pk], limit=SUGGESTED)
    found = {r.pk: (by_entry.get(targets[r.pk].pk, []) if targets[r.pk].pk
                    else similar_active_entries_many([targets[r.pk]], limit=SUGGESTED)[0])
             for r in open_ones}
    wanted = {pk for pairs in found.values() for pk, _ in pairs}
    wanted |= {pk for r in requests if r.state != ForgetRequest.State.OPEN for pk in r.forgotten_ids}
    entries = {e.pk: e for e in visible_entries(user).filter(pk__in=wanted)} if wanted else {}
    for r in requests:
        if r.state == ForgetRequest.State.OPEN:
            r.suggestions = [(entries[pk], score) for pk, score in found[r.pk]
                             if pk in entries and pk != r.entry_id]
            r.forgotten_entries = []
        else:
            r.suggestions = []
            r.forgotten_entries = [entries[pk] for pk in r.forgotten_ids if pk in entries]
    return requests


def forget_queue(user, filters: ForgetFilters = ForgetFilters(), *, cursor: str = "",
                 page_size: int = PAGE_SIZE) -> Page:
    """One page of requests (open ones by default), oldest first, keyset on (created_at, id)."""
    qs = visible_forget_requests(user).filter(filters.as_q()).select_related("entry", "decided_by")
    return read_page(qs, qs, stamp="created_at", cursor=cursor, page_size=page_size, filters=filters,
                     prepare=lambda rows: _with_suggestions(user, rows))


def forget_card(user, request_id) -> ForgetRequest:
    request = visible_forget_requests(user).select_related("entry", "decided_by").get(pk=request_id)
    return _with_suggestions(user, [request])[0]


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
