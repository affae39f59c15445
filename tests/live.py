"""Live servers for the tests of real clients: pytest-django's `live_server` (WSGI) answers /api/v1/; /mcp
is served by the ASGI entry point, which `asgi_server` runs with uvicorn in a thread, on the same test
database."""

from __future__ import annotations

import os
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
import time
from pathlib import Path

import anyio
import pytest
import uvicorn
from django.db import connections

from curation.api.mcp_http import with_mcp
from curation.services.tokens import create_agent_token
from memoryadmin.asgi import django_wsgi_application
from memoryadmin.threaded_wsgi import ThreadedWSGI

MEMORYADMIN_MCP = Path(sys.executable).parent / "memoryadmin-mcp"  # the console script of clients/python


def token_key(name: str, scopes) -> str:
    return create_agent_token(name=name, scopes=list(scopes))[1]


def stdio_environment(url: str, key: str) -> dict[str, str]:
    # PYTHONPATH passes on, so the server runs the client package the tests import (a checkout's, not the
    # installed one, when they differ).
    passed_on = {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ}
    return {"PATH": os.environ.get("PATH", ""), "MEMORYADMIN_URL": url, "MEMORYADMIN_TOKEN": key, **passed_on}


THREADS = 4


def run_async(scenario):
    """anyio.run(scenario) in a thread of its own, since Playwright's sync API may have left an event loop in
    this one; closes the database connections the scenario's ORM calls opened there. Answers its result."""

    async def closing():
        try:
            return await scenario()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(anyio.run, closing).result()


def close_connections(django_application: ThreadedWSGI) -> None:
    """Close the database connection of each of the pool's threads (a barrier makes each take one task)."""
    barrier = threading.Barrier(THREADS)

    def close():
        barrier.wait(10)
        connections.close_all()

    for done in [django_application.pool.submit(close) for _ in range(THREADS)]:
        done.result()
    django_application.pool.shutdown()


@contextmanager
def threaded_django():
    """Django on a pool of threads, as memoryadmin.asgi serves it, for one test. Its threads keep their database
    connections (CONN_MAX_AGE): they are closed at the end, so none holds the test database open when it is
    flushed or dropped. (memoryadmin.asgi's own pool would keep them until the run ends: the test database
    could then not be dropped, "being accessed by other users".)"""
    django_application = ThreadedWSGI(django_wsgi_application, threads=THREADS)
    try:
        yield django_application
    finally:
        close_connections(django_application)


@pytest.fixture
def asgi_server(transactional_db):
    """The site's ASGI app (a fresh one: an MCP session manager runs once) on a free port; its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    with threaded_django() as django_application:
        # As the shipped servers run it: no forwarded header trusted at the server (gunicorn.conf.py).
        server = uvicorn.Server(
            uvicorn.Config(
                with_mcp(django_application), lifespan="on", log_level="warning", access_log=False, proxy_headers=False
            )
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the ASGI server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        server.should_exit = True
        thread.join(10)
        sock.close()
