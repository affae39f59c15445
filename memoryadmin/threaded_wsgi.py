"""Django's WSGI application inside the ASGI server, on a pool of threads.

Each request runs in one of `threads` long-lived threads, which keep their database connection between
requests (CONN_MAX_AGE), as under a threaded WSGI server. Django's own ASGI handler runs every request in
a new thread context, so it opens (and leaves to the garbage collector) a connection per request: that
cost the agent API about 20 ms a call. The answer is buffered: Django's answers here are pages and JSON."""

from __future__ import annotations

import asyncio
import io
from concurrent.futures import ThreadPoolExecutor

from uvicorn.middleware.wsgi import build_environ


class ThreadedWSGI:
    def __init__(self, wsgi_application, *, threads: int):
        self.wsgi_application = wsgi_application
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="django")

    async def __call__(self, scope, receive, send) -> None:
        assert scope["type"] == "http", "Django answers HTTP only (the lifespan is the MCP app's)"
        body, message = bytearray(), {"more_body": True}
        while message.get("more_body"):
            message = await receive()
            body += message.get("body", b"")
        environ = build_environ(scope, message, io.BytesIO(bytes(body)))
        status, headers, content = await self.call(self.answer, environ)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def call(self, function, *args):
        """`function(*args)` on one of the pool's threads (and its database connection)."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, function, *args)

    def answer(self, environ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Django's answer to a WSGI request (status, headers, body), on the calling thread."""
        started = {}

        def start_response(status: str, headers, exc_info=None):
            started["status"] = int(status.split(" ", 1)[0])
            # stripped: Django writes a cookie as " name=value; ..." (what a WSGI server tolerates, and h11 does not)
            started["headers"] = [
                (name.lower().encode("latin-1"), value.strip().encode("latin-1")) for name, value in headers
            ]

        result = self.wsgi_application(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()  # Django's request_finished: close_old_connections, as a WSGI server does
        return started["status"], started["headers"], content
