"""The tests' own servers (tests/live.py) leave no database connection behind: one left open keeps PostgreSQL
from dropping the test database at the end of the run ("being accessed by other users"), and a later run
finds it there."""

import threading
import time

import pytest
from django.db import connection

from tests.live import THREADS, threaded_django


def _other_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_threaded_django_closes_the_connections_of_its_threads(on_postgres):
    before = _other_sessions()
    barrier = threading.Barrier(THREADS)

    def query():  # on each of the pool's threads: the barrier makes each take one
        barrier.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    with threaded_django() as django_application:
        for done in [django_application.pool.submit(query) for _ in range(THREADS)]:
            done.result()
        assert _other_sessions() == before + THREADS  # kept between requests, as a server's threads keep them
    # A closed connection's backend leaves pg_stat_activity when it has exited, a moment after the close.
    deadline = time.monotonic() + 10
    while _other_sessions() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _other_sessions() == before
