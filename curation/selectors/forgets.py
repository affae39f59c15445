"""Reads for forget requests and tombstones: the Forget queue (open requests, oldest first, each card with
its entry and the near duplicates the queues' own search suggests) and the tombstones ingest and the
sweeps compare lessons with. A fixed number of queries per page, whatever its size."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q

from curation import access
from curation.forgetting import LEGACY_KEY_ID, Lesson, key_id, same_lesson, same_stems, tombstone_key
from curation.matching_text import Token, reading
from curation.models import Entry, ForgetRequest, Tombstone

from .entries import visible_entries
from .paging import Page, capped_count, read_page
from .similar import similar_active_entries_many

PAGE_SIZE = 20
SUGGESTED = 8  # near duplicates a card offers to forget along


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
    return [(stone, {"scope": stone.scope, "fingerprint": stone.fingerprint, "signature": frozenset(stone.signature),
                     "tokens": frozenset(stone.tokens), "key": keys[stone.key_id]})
            for stone in stones if stone.key_id in keys]


def _matching(lesson: Lesson, comparable) -> Tombstone | None:
    """The first stone whose forgotten lesson `lesson` is."""
    return next((stone for stone, fields in comparable if same_lesson(lesson, **fields)), None)


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
    if not stones:  # the usual answer: no lesson's text is worth reading
        return [None] * len(lessons)
    comparable = _comparable(stones, tombstone_keys())
    return [_matching(Lesson.of(scope, trigger, content), comparable) for scope, trigger, content in lessons]


def all_tombstones() -> list[Tombstone]:
    """Every tombstone, for a sweep that compares many lessons at once (forgetting is rare: they are few)."""
    return list(Tombstone.objects.only("scope", "fingerprint", "signature", "tokens", "key_id", "request_id")
                .order_by("id"))


def forgotten_among(entries, tombstones: list[Tombstone]) -> set[int]:
    """The ids of `entries` that repeat a forgotten lesson: what a sweep never proposes again."""
    if not tombstones:
        return set()
    comparable = _comparable(tombstones, tombstone_keys())
    return {entry.pk for entry in entries
            if _matching(Lesson.of(entry.scope, entry.trigger, entry.content), comparable) is not None}


USES_READ = 20  # entries read per token when looking for other lessons that use it


def tokens_used_elsewhere(scope: str, tokens: list[Token], lesson: Lesson, *, exclude_ids=()) -> set[str]:
    """The folded forms of `tokens` that another lesson in a scope overlapping `scope` also uses: shared
    vocabulary, not what makes this lesson unique (a tombstone holding it would hold those lessons too). A
    near duplicate of `lesson` itself (its own copies, a paraphrase) is not another lesson. One query per
    token, at forget time only; the word is looked for case-insensitively inside trigger and content, then
    the rows read are checked token by token."""
    shared = set()
    overlapping = Entry.objects.filter(access.overlapping_scopes_q(scope)).exclude(pk__in=list(exclude_ids))
    for token in tokens:
        rows = overlapping.filter(Q(trigger__icontains=token.written) | Q(content__icontains=token.written)) \
            .values_list("trigger", "content")[:USES_READ]
        for trigger, content in rows:
            other = reading(f"{trigger}\n{content}")
            if token.folded in other.forms and not same_stems(lesson.stems, other.stems):
                shared.add(token.folded)
                break
    return shared
