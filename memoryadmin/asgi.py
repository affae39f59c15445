"""The ASGI entry point (gunicorn with uvicorn workers, and `make demo`): Django, with the MCP server at /mcp.

Django answers every path but /mcp; the MCP app answers /mcp and the lifespan events (Django has no
lifespan; the MCP app's starts its session manager)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
django_application = get_asgi_application()

from curation.api.mcp_http import mcp_application, routes_to_mcp  # noqa: E402  (needs Django set up)

_mcp = mcp_application(django_application)


async def application(scope, receive, send):
    app = _mcp if routes_to_mcp(scope) else django_application
    await app(scope, receive, send)
