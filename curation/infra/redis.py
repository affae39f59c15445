"""The one way the code reaches Redis: a client per URL, shared by the process's threads (redis-py's own
pool), for the two Redis roles the settings name.

- The cache (`settings.CACHES["default"]`, when it is Redis): what may be lost, e.g. the rate limiter's
  counters. Django's cache API reaches it too; `cache_client()` is for the few paths that need a command the
  API lacks (one round trip for INCR and EXPIRE).
- The durable Redis (`settings.DURABLE_REDIS_URL`: the broker's when the broker is Redis): what must not be
  lost, e.g. agents' reads waiting for the worker's flush. The broker's Redis already must not evict (a
  queued task would vanish), so a cache with an LRU policy can be run beside it without touching the reads.
  `durable_client()` refuses a Redis that may evict keys without an expiry (an `allkeys-*` policy): it answers
  None, and says why in the log, so that its caller writes to PostgreSQL at once instead.

Both are read from the settings at each call, so a test that points the settings at another database is
followed at once."""

from __future__ import annotations

import logging
import os
import threading
import time

import redis
from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

POLICY_RECHECK_SECONDS = 300  # a policy changed at runtime (CONFIG SET) is seen within this long

_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}
_policies: dict[str, tuple[bool, float]] = {}  # url: (keeps every key, when asked)


def client(url: str) -> redis.Redis:
    """This process's client for `url`."""
    found = _clients.get(url)
    if found is None:
        with _lock:
            found = _clients.setdefault(url, redis.Redis.from_url(url))
    return found


def cache_url() -> str | None:
    """The cache's Redis, or None when the cache is not Redis (the embedded default keeps it in memory)."""
    configured = settings.CACHES["default"]
    return configured["LOCATION"] if configured["BACKEND"].endswith(".RedisCache") else None


def cache_client() -> redis.Redis | None:
    url = cache_url()
    return client(url) if url else None


def one_trip(found: redis.Redis, *commands: tuple) -> list:
    """The replies to `commands` (each a tuple such as ("INCR", key)), sent together in one round trip on this
    thread's own connection to `found`'s server; a Redis error reply is raised, and a connection that failed
    is dropped (the next trip opens another). What a pipeline sends, without its per-command objects,
    callbacks and retries, and without the pool's per-use bookkeeping (its lock, its metrics, its events),
    which cost an agent read more than the trip: the agent API's reads send two of these (the generation with
    the rate count, the read's record), and a caller whose trip fails goes on without Redis as it would after
    a pipeline's failure. As the pool does, a connection is checked before each use: one the server closed
    (or with a reply left unread) is replaced, not failed on."""
    connection = _own_connection(found)
    try:  # as the pool checks a connection it hands out
        if connection.can_read():  # a reply left unread
            connection.disconnect()
    except (redis.ConnectionError, redis.TimeoutError, OSError):  # closed by the server
        connection.disconnect()
    try:
        connection.send_packed_command(_packed(connection, commands) or connection.pack_commands(commands))
        return [connection.read_response() for _ in commands]
    except BaseException:
        connection.disconnect()  # a reply may be left unread on it
        raise


def _packed(connection, commands) -> list[bytes] | None:
    """`commands` as the Redis protocol sends them (arrays of bulk strings), as redis-py packs them: text in
    the connection's encoding, a whole number as its digits, a first argument with spaces ("CLIENT ID") as
    its words; None when an argument is of another type (redis-py packs those). A third of the time of a
    trip went in redis-py's packing of the read's few short commands."""
    encoding, errors = connection.encoder.encoding, connection.encoder.encoding_errors
    out = []
    for command in commands:
        name, *rest = command
        words = name.encode(encoding, errors).split() if isinstance(name, str) else [name]
        out.append(b"*%d\r\n" % (len(words) + len(rest)))
        for arg in (*words, *rest):
            if isinstance(arg, str):
                arg = arg.encode(encoding, errors)
            elif type(arg) is int:
                arg = b"%d" % arg
            elif not isinstance(arg, bytes):
                return None
            out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return [b"".join(out)]


_threads = threading.local()


def _own_connection(found: redis.Redis):
    """This thread's connection to the server of `found`'s pool (made with its settings on first use, and
    again in a forked child): one thread never waits for another's, as with a pooled connection."""
    pool = found.connection_pool
    kept = getattr(_threads, "connections", None)
    if kept is None or _threads.pid != os.getpid():
        kept = _threads.connections = {}
        _threads.pid = os.getpid()
    connection = kept.get(pool)
    if connection is None:
        connection = kept[pool] = pool.connection_class(**pool.connection_kwargs)
    return connection


def cache_key(name: str) -> str:
    """`name` with the cache's prefix and version, as the cache API stores it: keys of other deployments
    (and of other test runs) sharing the Redis stay apart."""
    return cache.make_key(name)


def durable_url() -> str | None:
    return getattr(settings, "DURABLE_REDIS_URL", "") or None


def evicts(policy: str) -> bool:
    """May Redis drop a key that has no expiry under this `maxmemory-policy`? The volatile-* policies
    evict only keys with one (and refuse writes when none is left), so they drop nothing kept for good."""
    return policy.startswith("allkeys-")


def durable_client() -> redis.Redis | None:
    """The durable Redis's client, or None: none is configured, or its policy may evict what is kept there."""
    url = durable_url()
    if not url:
        return None
    found = client(url)
    kept = _policies.get(url)
    if kept is None or time.monotonic() - kept[1] > POLICY_RECHECK_SECONDS:
        kept = (_keeps_every_key(found, url), time.monotonic())
        _policies[url] = kept
    return found if kept[0] else None


def _keeps_every_key(found: redis.Redis, url: str) -> bool:
    try:
        policy = found.config_get("maxmemory-policy").get("maxmemory-policy", "")
    except redis.ResponseError:  # a managed Redis may not let clients read its configuration
        logger.info("The durable Redis does not say its maxmemory-policy; it is trusted to keep its keys.")
        return True
    if evicts(policy):
        logger.error(
            "The durable Redis (%s) has maxmemory-policy %s: it may drop agents' reads waiting for the "
            "worker's flush, so they are written to PostgreSQL at once. Set maxmemory-policy noeviction on it "
            "(or point DURABLE_REDIS_URL at a Redis that has it); a cache that evicts belongs on REDIS_URL.",
            _without_password(url),
            policy,
        )
        return False
    return True


def _without_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.rsplit("@", 1)[1]
    return f"{scheme}{sep}{rest}"


def forget_policies() -> None:
    """Ask each durable Redis for its policy again on next use (tests that change it)."""
    _policies.clear()
