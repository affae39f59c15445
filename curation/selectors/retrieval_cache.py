"""Retrieval answers from Redis. A published version's rows never change once written, so the ranking of
(version, the scopes read, query, k, confidence floor, kinds, query embedding and metric, the lowest trust
level asked for) is the same every
time it is asked, but for decay, which moves entries under the floor as days pass: it is cached under
exactly those inputs and the hour of the one clock (a replay's hours too), and a publish (a new version
number, read by every request) is the invalidation. The confidence an answer shows is derived when it is
read, not cached. The context budget is applied to the ranking afterwards, so one cached ranking serves every
budget. The scopes in the key are the ones the token's request reads (retrievable_scopes), so a token
never meets another scope's answer. A cache that does not answer is a miss, never an error."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace

from django.core.cache import cache

from curation.infra import redis
from curation.rules import clock, config

from .releases import retrieve_released
from .retrieval import Ranked

logger = logging.getLogger(__name__)

# "api-" keys are the API's own (rate limits too): the tests forget them between tests.
KEY_PREFIX = "api-retrieval"
GENERATION_KEY = f"{KEY_PREFIX}-generation"
DELETE_BATCH = 1000  # keys a SCAN step reads and an UNLINK deletes


def _plain(name: str, value, options: dict):
    """An option as the key holds it: what changes no answer (a metric without an embedding) left out, an
    unordered collection sorted."""
    if name == "metric" and options.get("embedding") is None:
        return None
    if isinstance(value, (set, frozenset, tuple, list)) and name != "embedding":
        return sorted(value)
    return int(value) if name == "min_trust" else value


def _key(number: int, scopes, q: str, k: int, min_confidence: float, generation: int, options: dict) -> str:
    # Every input that changes the answer is in the key: every option retrieve_released takes, by name.
    inputs = json.dumps(
        [
            number,
            sorted(scopes),
            q,
            k,
            round(min_confidence, 6),
            generation,
            int(clock.now().timestamp() // 3600),
            sorted((name, _plain(name, value, options)) for name, value in options.items()),
        ]
    )
    return f"{KEY_PREFIX}:{hashlib.sha256(inputs.encode()).hexdigest()}"


def forget_cached_answers() -> None:
    """Drop every cached answer at once (a new generation in every key): for a change to a version's rows
    in place, which publishing never makes (a forget's purge). The answers themselves are deleted too, so
    that none holds a purged text in Redis (and in its snapshots on disk) until it expires."""
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:  # no generation yet
        cache.set(GENERATION_KEY, 1, None)
    _delete_cached_answers()


def _delete_cached_answers() -> None:
    """Delete the cached answers from Redis: a SCAN of their prefix, a batch of keys a round trip (a forget is
    rare; the cache holds at most RETRIEVAL_CACHE_SECONDS of distinct reads). Without Redis the in-process
    cache of the embedded default is each process's own, and its answers expire as ever."""
    client = redis.cache_client()
    if client is None:
        return
    try:
        batch = []
        for key in client.scan_iter(match=redis.cache_key(f"{KEY_PREFIX}:*"), count=DELETE_BATCH):
            batch.append(key)
            if len(batch) >= DELETE_BATCH:
                client.unlink(*batch)
                batch = []
        if batch:
            client.unlink(*batch)
    except Exception:  # noqa: BLE001 - unread under the new generation, they expire within the cache's time
        logger.warning("The cached retrieval answers could not be deleted from Redis.", exc_info=True)


def cached_retrieve_released(
    number: int, *, scopes, q: str = "", k: int, min_confidence: float, **options
) -> list[Ranked]:
    """retrieve_released, answered from the cache when the same inputs were asked of the same version; its
    other options (kinds, embedding, metric, min_trust) are passed through as given."""
    seconds = config.RETRIEVAL_CACHE_SECONDS.value
    if not seconds or not scopes:
        return retrieve_released(number, scopes=scopes, q=q, k=k, min_confidence=min_confidence, **options)
    q = (q or "").strip()[:500]  # as retrieve_released reads it
    try:
        key = _key(number, scopes, q, k, min_confidence, cache.get(GENERATION_KEY, 0), options)
        found = cache.get(key)
    except Exception:  # noqa: BLE001 - the cache is an optimisation: without it, the database answers
        logger.warning("retrieval cache unavailable", exc_info=True)
        return retrieve_released(number, scopes=scopes, q=q, k=k, min_confidence=min_confidence, **options)
    if found is not None:
        return found
    ranked = retrieve_released(number, scopes=scopes, q=q, k=k, min_confidence=min_confidence, **options)
    try:  # without what the statement read of quarantine: a later read asks again (releases.as_served)
        cache.set(key, [replace(r, withheld=None) for r in ranked], seconds)
    except Exception:  # noqa: BLE001
        logger.warning("retrieval cache unavailable", exc_info=True)
    return ranked
