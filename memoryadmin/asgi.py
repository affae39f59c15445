"""The ASGI entry point (gunicorn's uvicorn workers, and `make demo`): Django, with the MCP server at /mcp.

Django answers every path but /mcp; the MCP app answers /mcp and the lifespan events (Django has no
lifespan; the MCP app's starts its session manager)."""

import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
django_application = get_asgi_application()

from curation.api.mcp_http import mcp_application, routes_to_mcp  # noqa: E402  (needs Django set up)


class PathOnlyAccessLog(logging.Filter):
    """uvicorn's access line without the query string, which may hold whatever an agent or a reviewer typed
    (gunicorn.conf.py does the same for gunicorn's own access log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) == 5:  # client, method, path, version, status
            client, method, path, version, status = record.args
            record.args = (client, method, str(path).partition("?")[0], version, status)
        return True


logging.getLogger("uvicorn.access").addFilter(PathOnlyAccessLog())

_mcp = mcp_application(django_application)


async def application(scope, receive, send):
    app = _mcp if routes_to_mcp(scope) else django_application
    await app(scope, receive, send)
