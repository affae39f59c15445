"""The tombstones a forget request leaves, built in one place: for each forgotten entry and for the request's
text, the hashes (fingerprint, signature, distinctive tokens) under the install's current key, never a word.
The rows are returned unsaved: `forgets.approve_forget_request` writes them in its transaction, after the
purge."""

from __future__ import annotations

from curation.forgetting import Lesson, forgotten_lesson
from curation.matching_text import distinctive_tokens
from curation.models import Entry, ForgetRequest, Tombstone
from curation.selectors.forgets import tombstone_keys, tokens_used_elsewhere


def _tombstone(request: ForgetRequest, key: bytes, *, scope: str, trigger: str, content: str, exact: bool,
               forgotten_ids, entry: Entry | None, now) -> Tombstone:
    text = f"{trigger}\n{content}" if exact else trigger
    tokens = distinctive_tokens(text)
    # A token another lesson of these scopes uses is shared vocabulary: it would hold that lesson too.
    shared = tokens_used_elsewhere(scope, tokens, Lesson.of(scope, trigger, content), exclude_ids=forgotten_ids)
    lesson = forgotten_lesson(key, trigger, content, [t.folded for t in tokens if t.folded not in shared],
                              exact=exact)
    return Tombstone(request=request, entry=entry, scope=scope, fingerprint=lesson.fingerprint,
                     signature=lesson.signature, tokens=lesson.tokens, key_id=lesson.key_id,
                     forgotten_on=now.date(), created_at=now)


def tombstones_of(request: ForgetRequest, entries: list[Entry], *, now) -> list[Tombstone]:
    """The unsaved tombstones of `request` forgetting `entries` (and its text, for a text request)."""
    key = next(iter(tombstone_keys().values()))  # the current key: the first
    forgotten_ids = [e.pk for e in entries]
    stones = [_tombstone(request, key, scope=e.scope, trigger=e.trigger, content=e.content, exact=True,
                         forgotten_ids=forgotten_ids, entry=e, now=now) for e in entries]
    if request.match_text:
        stones.append(_tombstone(request, key, scope=request.scope, trigger=request.match_text,
                                 content=request.match_text, exact=False, forgotten_ids=forgotten_ids, entry=None,
                                 now=now))
    return stones
