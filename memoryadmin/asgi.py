"""The ASGI entry point (gunicorn's uvicorn workers, and `make demo`): Django, with the MCP server at /mcp.

Django answers every path but /mcp (curation/api/mcp_http.py)."""

import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
django_application = get_asgi_application()

from curation.api.mcp_http import with_mcp  # noqa: E402  (needs Django set up)


class PathOnlyAccessLog(logging.Filter):
    """uvicorn's access line without the query string, which may hold whatever an agent or a reviewer typed
    (gunicorn.conf.py does the same for gunicorn's own access log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) == 5:  # client, method, path, version, status
            client, method, path, version, status = record.args
            record.args = (client, method, str(path).partition("?")[0], version, status)
        return True


logging.getLogger("uvicorn.access").addFilter(PathOnlyAccessLog())

application = with_mcp(django_application)
