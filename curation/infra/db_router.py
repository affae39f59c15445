"""Retrieval reads on a replica. When DATABASE_REPLICA_URL names one, the settings add it as the
`replica` alias and the reads an agent's retrieval makes inside `retrieval_reads()` (the published
version's number and that version's rows, which a publish never changes once written) go there. Every
write, and every other read, stays on the primary: a decision must read what it is about to change."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS

REPLICA = "replica"
# What retrieval reads: the published pointer, the versions, and the version rows it ranks.
RETRIEVAL_MODELS = frozenset({"publishedversion", "memoryversion", "releasedentry", "releasedskill"})

_retrieving: ContextVar[bool] = ContextVar("retrieving", default=False)


@contextmanager
def retrieval_reads():
    """The reads inside go to the replica, when there is one."""
    token = _retrieving.set(True)
    try:
        yield
    finally:
        _retrieving.reset(token)


def has_replica() -> bool:
    return bool(getattr(settings, "RETRIEVAL_ON_REPLICA", False))


class ReplicaRouter:
    def db_for_read(self, model, **hints):
        if _retrieving.get() and model._meta.model_name in RETRIEVAL_MODELS and has_replica():
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
