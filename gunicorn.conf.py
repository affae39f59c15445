"""The web server's configuration (Dockerfile and docker-compose.yml start gunicorn with it).

gunicorn runs uvicorn workers serving the ASGI entry point, `memoryadmin/asgi.py`: Django, and the MCP
server at /mcp (Streamable HTTP). Their access log is uvicorn's, which asgi.py keeps to the path without
its query string, like the format below for a sync worker.

The access log names the path without its query string, and no Referer (a console page's address carries
its filters and search words): a query string may hold whatever an agent or a reviewer typed, secrets
and e-mail addresses included, and an access log keeps it verbatim. Agents send their retrieval
queries in a POST body (/api/v1/memory/search) anyway."""

bind = "0.0.0.0:8000"
wsgi_app = "memoryadmin.asgi:application"
# uvicorn picks httptools and uvloop (dependencies in pyproject.toml) over h11 and asyncio's own loop when
# they are installed: less CPU per request in the server around Django (make bench-api).
worker_class = "uvicorn_worker.UvicornWorker"
# Trust no forwarded header at the server: uvicorn would otherwise take the client's address from
# X-Forwarded-For on any connection from 127.0.0.1 (its default), and a client on this host could then
# name any address it likes to its login and bad-token limits. The application reads X-Forwarded-For
# itself, only behind TRUSTED_PROXIES proxies (curation/infra/client_address.py); HTTPS behind a proxy is
# HTTPS_PROXY_HEADER's (settings.py).
forwarded_allow_ips = ""
accesslog = "-"
# gunicorn's default with the request line "%(r)s" (method, path, query string, protocol) as method,
# path and protocol, and without the Referer "%(f)s" (for a sync worker, e.g. `-k sync memoryadmin.wsgi`).
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'
