"""Live servers for the tests of real clients: pytest-django's `live_server` (WSGI) answers /api/v1/; /mcp
is served by the ASGI entry point, which `asgi_server` runs with uvicorn in a thread, on the same test
database."""

from __future__ import annotations

import gc
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from django.db import connections

from curation.api.mcp_http import with_mcp
from curation.services.tokens import create_agent_token
from memoryadmin.asgi import django_application

MEMORYADMIN_MCP = Path(sys.executable).parent / "memoryadmin-mcp"  # the console script of clients/python


def token_key(name: str, scopes) -> str:
    return create_agent_token(name=name, scopes=list(scopes))[1]


def stdio_environment(url: str, key: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "MEMORYADMIN_URL": url, "MEMORYADMIN_TOKEN": key}


@pytest.fixture
def asgi_server(transactional_db):
    """The site's ASGI app (a fresh one: an MCP session manager runs once) on a free port; its URL."""
    # As in production (Dockerfile): under ASGI a connection belongs to its request and is closed with it.
    database = connections.settings["default"]
    conn_max_age, database["CONN_MAX_AGE"] = database["CONN_MAX_AGE"], 0
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(with_mcp(django_application), lifespan="on", log_level="warning",
                                           access_log=False))
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
    database["CONN_MAX_AGE"] = conn_max_age
    sock.close()
    gc.collect()  # a request's connection that Django dropped without closing is closed when collected
