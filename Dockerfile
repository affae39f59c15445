# memoryadmin: one image for the web server, the Celery worker and Celery beat (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MEMORYADMIN_DATA_DIR=/app/data

# A fixed uid, so files on a mounted volume have a predictable owner.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin app

# Dependencies first, from pyproject.toml alone, so editing the code does not reinstall them.
# pyproject.toml builds no package ([tool.setuptools] packages = []): `pip install .` installs
# the dependencies only, and the code runs from /app (manage.py's directory) below.
COPY pyproject.toml /tmp/build/
RUN pip install /tmp/build && rm -rf /tmp/build
# The Python client: /mcp serves its MCP tools (clients/python/memoryadmin_client/mcp_server.py).
COPY clients/python /tmp/client
RUN pip install /tmp/client && rm -rf /tmp/client

# /app itself belongs to the app user: each process makes data/ inside it when it starts
# (memoryadmin/data_folders.py).
RUN install -d -o app -g app /app
WORKDIR /app
COPY --chown=app:app . .
USER app

# Static files are collected at build time (settings' DEBUG defaults on here, so no SECRET_KEY is
# needed); data/ stays writable by the app user for celerybeat-schedule.
RUN python manage.py collectstatic --noinput
# The folder a lead's upload waits in for the worker (docker-compose.yml mounts one volume there in web and
# worker); made here so the volume starts owned by the app user.
RUN mkdir -p /app/data/uploads

EXPOSE 8000
# gunicorn.conf.py: uvicorn workers serving memoryadmin.asgi (Django and /mcp), the bind address, and an
# access log without query strings.
CMD ["gunicorn", "--config", "gunicorn.conf.py"]
