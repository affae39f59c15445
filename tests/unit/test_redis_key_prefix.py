"""A test run keeps to its own Redis keys (tests/redis_prefix.py): pointed at the Redis database of a running
install, it forgets only its own rate counters and buffered reads between tests, never the install's, and its
purges and workers leave the install's queued and running tasks alone; so does `make load` on its own."""

import json
import os
import re
import time
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from django.conf import settings
from kombu import Connection, Producer

from curation.infra import redis
from curation.services.retrieval_buffer import BUFFER_KEY
from memoryadmin.celery import app
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
    if settings.CELERY_BROKER_URL.startswith("redis"):
        assert app.conf.broker_transport_options["global_keyprefix"] == f"{redis_prefix.RUN_PREFIX}:broker:"


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
    code = (
        "import django; django.setup(); from django.core.cache import cache; print(cache.make_key('api-x'));"
        "from memoryadmin.celery import app; print(app.conf.broker_transport_options['global_keyprefix'])"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
    }  # only named
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert found.stdout.split()[-2:] == [f"{redis_prefix.RUN_PREFIX}:1:api-x", f"{redis_prefix.RUN_PREFIX}:broker:"]


class InstallsTasks:
    """An install's tasks on the test run's broker database, in the install's keys (no prefix): one waiting on
    its interactive queue, one its worker is running (unacknowledged, its lease older than a test worker's). The
    message names no task, so an install's worker that took it would only log and drop it."""

    def __init__(self, client):
        self.client, self.queue, self.tag = client, settings.TASK_QUEUE_INTERACTIVE, uuid.uuid4().hex
        with Connection(settings.CELERY_BROKER_URL) as install:
            Producer(install).publish({"an install's task": self.tag}, exchange="", routing_key=self.queue)
        self.waiting = client.lindex(self.queue, 0)
        assert json.loads(self.waiting)["properties"]["delivery_info"]["routing_key"] == self.queue
        self.running = json.dumps([json.loads(self.waiting), "", self.queue])
        client.hset("unacked", self.tag, self.running)
        client.zadd("unacked_index", {self.tag: time.time() - 60})

    def assert_untouched(self):
        assert self.client.lrange(self.queue, 0, -1).count(self.waiting) == 1
        assert self.client.hget("unacked", self.tag) == self.running.encode()
        assert self.client.zscore("unacked_index", self.tag) is not None

    def remove(self):
        self.client.lrem(self.queue, 0, self.waiting)
        self.client.hdel("unacked", self.tag)
        self.client.zrem("unacked_index", self.tag)


@pytest.fixture
def installs_tasks():
    if not settings.CELERY_BROKER_URL.startswith("redis"):
        pytest.skip("needs the Redis broker (CELERY_BROKER_URL=redis://...)")
    tasks = InstallsTasks(redis.client(settings.CELERY_BROKER_URL))
    yield tasks
    tasks.remove()


def test_the_tests_purges_and_workers_leave_an_installs_tasks(installs_tasks):
    """What the tests do with their broker: the worker tests' purge, a worker taking from the run's queues, a
    test worker handing expired leases back to their queue. Before, the purge emptied the install's queue, a
    worker of the run took its task, and the running one was queued again, to be run twice."""
    app.control.purge()  # as the worker tests do before and after each test
    with app.connection_for_read() as ours:
        for name in (settings.TASK_QUEUE_INTERACTIVE, settings.TASK_QUEUE_SWEEPS):
            with ours.SimpleQueue(app.amqp.queues[name]) as taking:
                with pytest.raises(taking.Empty):
                    taking.get(timeout=0.5)
    lease = {**app.conf.broker_transport_options, "visibility_timeout": 6}  # the worker tests' lease
    with app.connection_for_write(transport_options=lease) as ours:
        ours.default_channel.qos.restore_visible(num=1000)
    installs_tasks.assert_untouched()


def test_make_loads_purge_leaves_an_installs_tasks(installs_tasks, tmp_path):
    """`make load` purges its broker database's queues before it starts its workers (benchmarks/load/run.py):
    they are its own, under its keys. Before, it emptied an install's queues on that database."""
    code = (
        "import sys; sys.path.insert(0, 'benchmarks/load'); import run; import django; django.setup();"
        "from memoryadmin.celery import app; app.control.purge();"
        "print(app.conf.broker_transport_options.get('global_keyprefix'))"
    )
    # its setup on this run's database; TMPDIR holds the data folder it makes when imported
    env = {**os.environ, "LOAD_REDIS_URL": settings.CELERY_BROKER_URL, "TMPDIR": str(tmp_path)}

    def loads_bindings() -> set:  # what its purge declares (its queues' bindings), to be removed afterwards
        return set(installs_tasks.client.scan_iter(match="memoryadmin-load:broker:_kombu.binding*"))

    there = loads_bindings()
    try:
        found = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
        )
    finally:
        if made := loads_bindings() - there:
            installs_tasks.client.delete(*made)
    assert found.stdout.split()[-1] == "memoryadmin-load:broker:"
    installs_tasks.assert_untouched()


def test_the_test_script_takes_a_broker_database_an_install_does_not():
    """scripts/test.sh's default broker: not the database docker-compose.yml gives an install (db 0)."""
    default = re.search(r"CELERY_BROKER_URL:-([^}]+)}", (ROOT / "scripts" / "test.sh").read_text())[1]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    install = compose["services"]["web"]["environment"]["CELERY_BROKER_URL"]
    assert urlsplit(default).path != urlsplit(install).path
