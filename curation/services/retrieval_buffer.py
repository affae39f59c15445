"""Agents' reads recorded in Redis and written to PostgreSQL in batches.

An agent's read is given its retrieval id at once (a UUID made by the read, so no row is needed to number
it), and its record (the Retrieval, the entries it was given, their retrieval counters) is appended to a
Redis list. The worker's `flush` (every few seconds, by beat) writes what the list holds in one set-based
statement per batch and only then takes those records off the list: a process killed between the read and
the flush loses nothing, and a flush killed before it took its records off writes nothing twice when it runs
again (a retrieval already stored is skipped, with its items and counters). The counters of an entry read
many times in one batch are one UPDATE, not one per read.

The list lives in the durable Redis (infra.redis: the broker's), never in a cache that may evict it: a
Redis whose policy may drop it takes no record, and each read writes its own. Buffered only on PostgreSQL
with a durable Redis (the deployment that runs a worker and beat), and only while
CURATION['BUFFER_RETRIEVALS'] is on; the embedded default (SQLite, filesystem broker) writes each record at
once, as does a read whose Redis does not answer or may evict. `services.usage.record_retrieval` decides
which.

What reads these rows flushes first where a few seconds' lag would matter: feedback on a retrieval not yet
written, the forget's purge (the queries it rewrites), and every sweep run (the counters and usage history
they judge by)."""

from __future__ import annotations

import json
import logging

from django.db import DataError, IntegrityError, connection, transaction

from curation.infra import redis
from curation.rules import config
from curation.models import Retrieval

from .entry_writes import insert_counted_retrievals

logger = logging.getLogger(__name__)

# "api-" keys are the API's own: the tests forget them between tests. Kept under the cache's prefix, so
# deployments (and test runs) sharing a Redis keep apart.
BUFFER_KEY = "api-retrievals-buffered"
FLUSH_BATCH = 1000  # records per statement


def buffering() -> bool:
    """Are agents' reads recorded in Redis for the worker to write (else each is written at once)?"""
    return config.BUFFER_RETRIEVALS.value and connection.vendor == "postgresql" and bool(redis.durable_url())


def _client():
    """The durable Redis and the list's full key: to read and empty the list, whatever its policy."""
    return redis.client(redis.durable_url()), redis.cache_key(BUFFER_KEY)


def as_record(retrieval: Retrieval) -> dict:
    return {
        "id": str(retrieval.pk),
        "token_id": retrieval.token_id,
        "scope": retrieval.scope,
        "query": retrieval.query,
        "task_ref": retrieval.task_ref,
        "entry_ids": list(retrieval.entry_ids),
        "memory_version": retrieval.memory_version,
        "arm": retrieval.arm,
        "created_at": retrieval.created_at.isoformat(),
    }


def buffer(retrieval: Retrieval) -> bool:
    """Append the retrieval's record to the list; False when Redis did not take it (the caller writes it)."""
    try:
        client = redis.durable_client()
        if client is None:  # its policy may evict the list: logged by infra.redis
            return False
        redis.one_trip(
            client, ("RPUSH", redis.cache_key(BUFFER_KEY), json.dumps(as_record(retrieval), separators=(",", ":")))
        )
    except Exception:  # noqa: BLE001 - a Redis that does not answer means: write the record now
        logger.warning("The retrieval could not be buffered in Redis; writing it at once.", exc_info=True)
        return False
    return True


def pending() -> int:
    """Records waiting for a flush."""
    if not buffering():
        return 0
    client, key = _client()
    return client.llen(key)


def flush(batch: int = FLUSH_BATCH) -> int:
    """Write every buffered record, a batch at a time; answers how many retrievals were stored (a record
    already stored is not counted again). Inside a caller's transaction, the records leave the list when it
    commits: rolled back, they stay for the next flush."""
    if not buffering():
        return 0
    client, key = _client()
    stored, start = 0, 0
    while True:
        try:
            raw = client.lrange(key, start, start + batch - 1)
        except Exception:  # noqa: BLE001 - what Redis holds waits for it; the caller goes on without
            logger.warning("The buffered retrievals could not be read from Redis.", exc_info=True)
            return stored
        if not raw:
            return stored
        stored += _write([json.loads(item) for item in raw])

        def taken(raw=raw):
            try:
                pipe = client.pipeline(transaction=False)
                for item in raw:
                    pipe.lrem(key, 1, item)
                pipe.execute()
            except Exception:  # noqa: BLE001 - left on the list, they are skipped as stored by the next flush
                logger.warning("Flushed retrievals could not be taken off the Redis list.", exc_info=True)

        if connection.in_atomic_block:
            transaction.on_commit(taken)
            start += len(raw)  # still on the list until the commit: the next batch is after them
        else:
            taken()
        if len(raw) < batch:
            return stored


def _write(records: list[dict]) -> int:
    """One statement for the batch; when the data refuses it (a record naming a row that is not there),
    each record on its own, and a record that cannot be written is logged and dropped so that it holds up no
    other. A lost connection raises: the records stay on the list for the next flush."""
    try:
        with transaction.atomic():  # committed (its deferred checks made) before it counts
            stored = insert_counted_retrievals(records)
        return stored
    except (IntegrityError, DataError):
        logger.warning("A batch of %s buffered retrievals failed; writing them one by one.", len(records))
    stored = 0
    for record in records:
        try:
            with transaction.atomic():
                one = insert_counted_retrievals([record])
            stored += one
        except (IntegrityError, DataError):
            logger.error("Buffered retrieval %s could not be written; dropped.", record.get("id"), exc_info=True)
    return stored
