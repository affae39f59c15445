"""A test run keeps to its own Redis keys (tests/redis_prefix.py): pointed at the Redis database of a running
install, it forgets only its own rate counters and buffered reads between tests, never the install's."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from curation.infra import redis
from curation.services.retrieval_buffer import BUFFER_KEY
from tests import redis_prefix

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_clients():
    urls = {redis.cache_url(), redis.durable_url()} - {None}
    if not urls:
        pytest.skip("no Redis configured (CELERY_BROKER_URL or REDIS_URL): nothing is kept there")
    return [redis.client(url) for url in urls]


def test_the_settings_take_the_runs_own_prefix():
    assert os.environ[redis_prefix.PREFIX_VARIABLE] == redis_prefix.RUN_PREFIX
    assert redis_prefix.RUN_PREFIX.startswith(f"{redis_prefix.INSTALL_PREFIX}-test-")
    if redis.cache_url():
        assert settings.CACHES["default"]["KEY_PREFIX"] == redis_prefix.RUN_PREFIX


def test_an_installs_keys_in_the_same_redis_database_survive_the_tests_cleanup(redis_clients):
    """What fresh_rate_limits runs before every test: it deleted every "*:api-*" key of the database, an
    install's buffered reads (retrieval records lost), rate counters and read generation among them."""
    mark = uuid.uuid4().hex
    install = [f"{redis_prefix.INSTALL_PREFIX}:1:{BUFFER_KEY}-{mark}", f"{redis_prefix.INSTALL_PREFIX}:1:api-{mark}"]
    ours = redis.cache_key(f"api-{mark}")
    try:
        for client in redis_clients:
            client.rpush(install[0], '{"id": "an install\'s read"}')
            client.set(install[1], 3)
            client.set(ours, 1)
        redis_prefix.delete_keys(":api-*")
        for client in redis_clients:
            assert client.exists(*install) == 2
            assert client.exists(ours) == 0
    finally:
        for client in redis_clients:
            client.delete(*install, ours)


def test_a_process_the_tests_start_uses_the_runs_prefix():
    """A Celery worker, another web process: started with the tests' environment, as the worker tests start
    theirs (tests/sweeps/test_worker_queues.py), they make their keys under the same prefix."""
    code = "import django; django.setup(); from django.core.cache import cache; print(cache.make_key('api-x'))"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }  # only named
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert found.stdout.split()[-1] == f"{redis_prefix.RUN_PREFIX}:1:api-x"
