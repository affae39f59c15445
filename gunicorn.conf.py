"""The web server's configuration (Dockerfile and docker-compose.yml start gunicorn with it).

The access log names the path without its query string, and no Referer (a console page's address carries
its filters and search words): a query string may hold whatever an agent or a reviewer typed, secrets
and e-mail addresses included, and an access log keeps it verbatim. Agents send their retrieval
queries in a POST body (/api/v1/memory/search) anyway."""

bind = "0.0.0.0:8000"
accesslog = "-"
# gunicorn's default with the request line "%(r)s" (method, path, query string, protocol) as method,
# path and protocol, and without the Referer "%(f)s".
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'
