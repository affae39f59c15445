"""A test run's own Redis key prefix. The settings read it from MEMORYADMIN_REDIS_KEY_PREFIX when they load,
and pytest-django loads them before any conftest is imported: so this module is a plugin, named in pyproject's
addopts (`-p tests.redis_prefix`), which pytest imports before pytest-django's setup. The processes the
tests start (a Celery worker, another web process) inherit the variable and so use the same prefix.

Every key the cache and the durable Redis hold (rate counters, buffered reads, read generations) is made by
the cache's make_key under this prefix, so what the tests delete between tests and at the end of the run is
only their own: a run pointed at the Redis database of a running install leaves the install's keys alone.

The broker's keys (the Celery queues, the messages the run's workers are running) start with it too
(MEMORYADMIN_BROKER_KEY_PREFIX): the tests' purges empty the run's queues only, their workers take none of an
install's tasks, and what the run leaves queued goes with its other keys at the end."""

import os
import uuid

PREFIX_VARIABLE = "MEMORYADMIN_REDIS_KEY_PREFIX"
INSTALL_PREFIX = "memoryadmin"  # an install's prefix when the variable is unset

# Always a new one: a prefix exported in the shell (an install's own) is not a test run's.
RUN_PREFIX = f"{INSTALL_PREFIX}-test-{uuid.uuid4().hex[:16]}"
os.environ[PREFIX_VARIABLE] = RUN_PREFIX
BROKER_PREFIX_VARIABLE = "MEMORYADMIN_BROKER_KEY_PREFIX"
os.environ[BROKER_PREFIX_VARIABLE] = f"{RUN_PREFIX}:broker:"


def own_prefix() -> str:
    """A prefix for one test's own keys, under the run's: the run's cleanup reaches it too."""
    return f"{RUN_PREFIX}-{uuid.uuid4().hex}"


def _clients():
    from django.conf import settings  # loaded by the time anything here is called

    from curation.infra import redis

    broker = settings.CELERY_BROKER_URL if settings.CELERY_BROKER_URL.startswith("redis") else None
    return [redis.client(url) for url in {redis.cache_url(), redis.durable_url(), broker} - {None}]


def delete_keys(match: str = "*") -> int:
    """Delete the keys of this run (its prefix's and its tests' prefixes') that match `match` after the
    prefix, in the cache's, the durable and the broker's Redis; answers how many went."""
    deleted = 0
    for client in _clients():
        keys = list(client.scan_iter(match=f"{RUN_PREFIX}*{match}"))
        if keys:
            deleted += client.delete(*keys)
    return deleted
