"""Per-process copies of what every agent read asks before its ranking: the token its key names and the
published version's number. Both change only by a revoke, a publish or a rollback, which call `forget()`;
every read compares the process's copies with one shared generation (a value in Redis, one round trip
where the two database reads were two), so a change made in any process reaches every process on its
next request.

`forget()` sets a new generation at once and again when the change commits: the first keeps this process
and the tests (whose transactions never commit) from reading the old copy, the second catches a process
that read the old row between the first and the commit. A copy is kept under the generation read before
its row was, never after, so it can only be older than the generation it is filed under by a change that
has already moved the generation on.

Kept only where the cache is shared by every process (Redis); with the in-memory cache of the embedded
default, or when Redis does not answer, every read asks the database as before. The published number is
kept only when it is read from the primary: a replica may lag behind a publish and must be asked each time.
A copy is dropped after KEEP_SECONDS whatever the generation says, so a generation lost with Redis cannot
leave a revoked token working for longer than that.

The generation is read with the request's first commands to Redis (`read_generation_with`: the API's rate
limit count), one round trip for both, through the cache's Redis client (infra.redis): its bytes as the
cache stored them, compared and never decoded. It is written through the cache API as ever, so processes of
an older release, which read it through the cache API, keep reading it during a rolling deploy."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, router, transaction

from curation.infra import redis
from curation.models import AgentToken, PublishedVersion

from . import releases
from .tokens import hash_key, token_for_key

logger = logging.getLogger(__name__)

# "api-" keys are the API's own: the tests forget them between tests (token ids are reused there).
GENERATION_KEY = "api-read-generation"
KEEP_SECONDS = 60
MAX_TOKENS = 10_000  # distinct keys kept per process; past it the copies start over

_lock = threading.Lock()
_state: dict = {"generation": None, "tokens": {}, "published": None}
_request = threading.local()  # the generation read once for the request this thread serves (one_generation)


def shared() -> bool:
    """Is the cache one that every process reads (Redis), so that a generation set in one reaches all?"""
    return settings.CACHES["default"]["BACKEND"].endswith(".RedisCache")


@contextmanager
def one_generation():
    """Within it, the shared generation is read once: the token and the published number of one request ask
    for it one after the other."""
    _request.memo = []
    try:
        yield
    finally:
        _request.memo = None


def _current_generation() -> bytes | None:
    memo = getattr(_request, "memo", None)
    if memo:
        return memo[0]
    generation = _read_generation()
    if memo is not None:
        memo.append(generation)
    return generation


def read_generation_with(*commands: tuple) -> list | None:
    """Read this request's shared generation (one_generation's) in the same round trip to the cache's Redis
    as `commands` (infra.redis.one_trip's), and answer their replies; None when nothing was sent (no shared
    cache, outside one_generation, the generation read already, or Redis did not answer): the caller then
    runs its commands itself. A generation not yet made is made by the next read, as ever."""
    memo = getattr(_request, "memo", None)
    if memo is None or memo or not shared():
        return None
    try:
        generation, *results = redis.one_trip(redis.cache_client(), ("GET", redis.cache_key(GENERATION_KEY)), *commands)
    except Exception:  # noqa: BLE001 - _read_generation asks again, and says so if Redis is down
        return None
    if generation is not None:
        memo.append(generation)
    return results


def _read_generation() -> bytes | None:
    """The shared generation (made when there is none), or None: nothing may be kept now."""
    if not shared():
        return None
    try:
        client, key = redis.cache_client(), redis.cache_key(GENERATION_KEY)
        generation = client.get(key)
        if generation is None:
            cache.add(GENERATION_KEY, uuid.uuid4().hex, timeout=None)  # whoever adds first makes it
            generation = client.get(key)
        return generation
    except Exception:  # noqa: BLE001 - a cache that does not answer means: read the database
        logger.warning("The read cache's generation could not be read; reading tokens from the database.")
        return None


def _copies(generation: str | None) -> dict:
    """This process's copies under `generation` (emptied when it moved on or nothing may be kept)."""
    with _lock:
        if generation is None or _state["generation"] != generation:
            _state.update(generation=generation, tokens={}, published=None)
        return _state


def kept_token_id(key: str) -> int | None:
    """The id of the token this process keeps for `key`, whatever generation it was kept under (a guess, for
    the commands sent with the generation's read: token() decides whether the token is still good)."""
    kept = _state["tokens"].get(hash_key(key))
    if kept is None or time.monotonic() - kept[1] >= KEEP_SECONDS:
        return None
    return kept[0].pk


def token(key: str, now) -> AgentToken | None:
    """selectors.tokens.token_for_key, from this process's copy while no revoke happened anywhere."""
    generation = _current_generation()
    state = _copies(generation)
    digest = hash_key(key)
    kept = state["tokens"].get(digest)
    if kept is not None and time.monotonic() - kept[1] < KEEP_SECONDS:
        found = kept[0]
        return found if found.is_usable(now) else None
    found = token_for_key(key, now)
    if found is not None and generation is not None:  # an unknown key is not kept: a new token works at once
        with _lock:
            if _state["generation"] == generation:
                if len(_state["tokens"]) >= MAX_TOKENS:
                    _state["tokens"] = {}
                _state["tokens"][digest] = (found, time.monotonic())
    return found


def published_number() -> int:
    """selectors.releases.published_number, from this process's copy while no publish or rollback happened."""
    if router.db_for_read(PublishedVersion) != DEFAULT_DB_ALIAS:
        return releases.published_number()  # a replica may not have the last publish yet: asked every time
    generation = _current_generation()
    state = _copies(generation)
    kept = state["published"]
    if kept is not None and time.monotonic() - kept[1] < KEEP_SECONDS:
        return kept[0]
    number = releases.published_number()
    if generation is not None:
        with _lock:
            if _state["generation"] == generation:
                _state["published"] = (number, time.monotonic())
    return number


def forget() -> None:
    """A token was revoked or the published version switched: every process's copies are old, now and
    when the change commits."""
    _new_generation()
    transaction.on_commit(_new_generation)


def _new_generation() -> None:
    if getattr(_request, "memo", None):
        _request.memo.clear()
    with _lock:
        _state.update(generation=None, tokens={}, published=None)
    if not shared():
        return
    try:
        cache.set(GENERATION_KEY, uuid.uuid4().hex, timeout=None)
    except Exception:  # noqa: BLE001 - the other processes' copies then end within KEEP_SECONDS
        logger.error(
            "The read cache's generation could not be moved on; other processes keep their copies for at most %s s.",
            KEEP_SECONDS,
        )
