"""Exit 0 when the PostgreSQL of DATABASE_URL and the Redis of CELERY_BROKER_URL answer; say which does not."""

import os
import sys

import dj_database_url
import psycopg
import redis

ok = True
db = dj_database_url.parse(os.environ["DATABASE_URL"])
try:
    psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname="postgres",
        connect_timeout=3,
    ).close()
except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
    print(f"PostgreSQL not reachable: {exc}", file=sys.stderr)
    ok = False
try:
    redis.Redis.from_url(os.environ["CELERY_BROKER_URL"], socket_connect_timeout=3).ping()
except Exception as exc:  # noqa: BLE001
    print(f"Redis not reachable: {exc}", file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
