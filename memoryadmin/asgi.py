"""The ASGI entry point (gunicorn's uvicorn workers, and `make demo`): Django, with the MCP server at /mcp.

Django answers every path but /mcp (curation/api/mcp_http.py), as its WSGI application on a pool of
threads (threaded_wsgi.py), which keep their database connections as a WSGI server's threads do."""

import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
django_wsgi_application = get_wsgi_application()

from curation.api.mcp_http import with_mcp  # noqa: E402  (needs Django set up)

from .threaded_wsgi import ThreadedWSGI  # noqa: E402

DJANGO_THREADS = int(os.environ.get("WEB_THREADS", "8"))  # per worker process; each holds a database connection


class PathOnlyAccessLog(logging.Filter):
    """uvicorn's access line without the query string, which may hold whatever an agent or a reviewer typed
    (gunicorn.conf.py does the same for gunicorn's own access log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) == 5:  # client, method, path, version, status
            client, method, path, version, status = record.args
            record.args = (client, method, str(path).partition("?")[0], version, status)
        return True


logging.getLogger("uvicorn.access").addFilter(PathOnlyAccessLog())

django_application = ThreadedWSGI(django_wsgi_application, threads=DJANGO_THREADS)
application = with_mcp(django_application)
