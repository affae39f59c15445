"""`memoryadmin-mcp`: the MCP server over stdio, for an agent on its own machine.

Reads MEMORYADMIN_URL (the memoryadmin server, e.g. https://memory.example.com) and MEMORYADMIN_TOKEN
(an agent token) from the environment, and MEMORYADMIN_SCOPES (optional, comma-separated: scopes to offer
as memory resources besides the token's own, e.g. the project's `acme/billing-api`), and answers every tool and resource through the agent API."""

from __future__ import annotations

import logging
import os
import sys
from contextlib import nullcontext
from importlib.metadata import PackageNotFoundError, version

import anyio
from mcp.server.stdio import stdio_server

from .client import AsyncMemoryAdmin
from .mcp_server import build_server


def _package_version() -> str:
    try:
        return version("memoryadmin-client")
    except PackageNotFoundError:
        return ""


async def serve(url: str, token: str, scopes: tuple[str, ...] = ()) -> None:
    async with AsyncMemoryAdmin(url, token, user_agent="memoryadmin-mcp") as api:
        server = build_server(lambda ctx: nullcontext(api), scopes=scopes, version=_package_version())
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> int:
    url, token = os.environ.get("MEMORYADMIN_URL", "").strip(), os.environ.get("MEMORYADMIN_TOKEN", "").strip()
    missing = [name for name, value in (("MEMORYADMIN_URL", url), ("MEMORYADMIN_TOKEN", token)) if not value]
    if missing:
        print(
            f"memoryadmin-mcp: set {' and '.join(missing)} (the server's address and an agent token).", file=sys.stderr
        )
        return 2
    # stdout carries the protocol; warnings go to stderr. httpx's INFO lines would name every request.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    scopes = tuple(s.strip() for s in os.environ.get("MEMORYADMIN_SCOPES", "").split(",") if s.strip())
    anyio.run(serve, url, token, scopes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
