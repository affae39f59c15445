"""Retrieval reads on a replica. When DATABASE_REPLICA_URL names one, the settings add it as the
`replica` alias and the reads an agent's retrieval makes inside `retrieval_reads()` (the published
version's number and that version's rows, which a publish never changes once written) go there. Every
write, and every other read, stays on the primary: a decision must read what it is about to change.

A streaming replica is a little behind. A write that changes what agents read (a publish, a rollback, a
purge of released rows) calls `fence_replica_reads()`: once it commits, the primary's WAL position is the
fence, kept in the shared cache. A retrieval reads on the replica only when the replica has replayed past
the fence, so an answer right after a publish is the new version; otherwise, and whenever the replica
does not answer, it reads on the primary, and the replica is asked again `RETRY_SECONDS` later."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections, transaction

logger = logging.getLogger(__name__)

REPLICA = "replica"
# What retrieval reads: the published pointer, the versions, and the version rows it ranks.
RETRIEVAL_MODELS = frozenset({"publishedversion", "memoryversion", "releasedentry", "releasedskill"})
FENCE_KEY = "replica-fence-lsn"
# After the replica failed to answer, this process reads on the primary for this long before trying it again.
RETRY_SECONDS = 5.0

_target: ContextVar[str | None] = ContextVar("retrieval_target", default=None)
_replica_down_until = 0.0


def has_replica() -> bool:
    return bool(getattr(settings, "RETRIEVAL_ON_REPLICA", False))


def fence_replica_reads() -> None:
    """In a transaction that changes what agents read: once it commits, retrievals read on the replica
    only after the replica has replayed it."""
    if has_replica() and connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        transaction.on_commit(_raise_fence)


def _raise_fence() -> None:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
        lsn = cursor.fetchone()[0]
    try:
        # Publishes are serialised by the pointer's lock, so a lower value only comes from a purge racing
        # one: keep the higher.
        if lsn > (cache.get(FENCE_KEY) or 0):
            cache.set(FENCE_KEY, lsn, None)
    except Exception:  # noqa: BLE001 - without the cache no fence is known: retrievals read on the primary
        logger.warning("could not record the replica fence; retrievals read on the primary", exc_info=True)


def _fence() -> int | None:
    """The WAL position the replica must have replayed; None when the cache cannot say."""
    try:
        return cache.get(FENCE_KEY, 0)
    except Exception:  # noqa: BLE001
        return None


def replica_current() -> bool:
    """Whether the replica answers and has replayed every write agents must see. A server that is not in
    recovery (the test's second name for the primary) is always current."""
    global _replica_down_until
    if time.monotonic() < _replica_down_until:
        return False
    if connections[REPLICA].vendor != "postgresql":
        return True  # no WAL to compare: only the tests' second name for an SQLite primary
    fence = _fence()
    if fence is None:
        return False
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute("SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint")
            replayed = cursor.fetchone()[0]
    except (OperationalError, InterfaceError):
        _mark_down()
        return False
    return replayed is None or replayed >= fence


def _mark_down() -> None:
    global _replica_down_until
    _replica_down_until = time.monotonic() + RETRY_SECONDS
    connections[REPLICA].close()  # a new connection when it is asked again
    logger.warning("the read replica does not answer: retrievals read on the primary for %s s", RETRY_SECONDS)


def reset_replica_state() -> None:
    """Forget a failure seen before (a test, or an operator's shell after restarting the replica)."""
    global _replica_down_until
    _replica_down_until = 0.0


@contextmanager
def retrieval_reads():
    """The reads inside go to the replica when there is one and it is current, else to the primary.
    Yields the server chosen (REPLICA or DEFAULT_DB_ALIAS)."""
    where = REPLICA if has_replica() and replica_current() else DEFAULT_DB_ALIAS
    token = _target.set(where)
    try:
        yield where
    finally:
        _target.reset(token)


def read_for_retrieval(read):
    """`read()` inside retrieval_reads(), again on the primary when the replica fails under it.
    Returns (its result, the server that answered)."""
    with retrieval_reads() as where:
        if where == DEFAULT_DB_ALIAS:
            return read(), where
        try:
            return read(), where
        except (OperationalError, InterfaceError):
            replica = connections[REPLICA]
            if replica.connection is not None and replica.is_usable():
                raise  # the replica is fine: the error is the primary's or the query's
            _mark_down()
    token = _target.set(DEFAULT_DB_ALIAS)
    try:
        return read(), DEFAULT_DB_ALIAS
    finally:
        _target.reset(token)


class ReplicaRouter:
    def db_for_read(self, model, **hints):
        if _target.get() == REPLICA and model._meta.model_name in RETRIEVAL_MODELS:
            return REPLICA
        return None

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        # The replica holds the primary's rows: a row read there may be linked to one written here (the
        # Retrieval row names the entries the replica answered with).
        return {obj1._state.db or DEFAULT_DB_ALIAS, obj2._state.db or DEFAULT_DB_ALIAS} <= {DEFAULT_DB_ALIAS, REPLICA}

    def allow_migrate(self, db, app_label, **hints):
        return db != REPLICA  # the replica follows the primary's schema; nothing migrates it
