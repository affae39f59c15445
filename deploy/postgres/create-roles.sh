#!/bin/sh
# Runs once, when the PostgreSQL volume is first made (the image's /docker-entrypoint-initdb.d): the role
# that owns the tables and runs migrations, and the application's role, which owns nothing. What the
# application may do is granted by `migrate` itself (curation/db_roles.py).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v owner_password="$OWNER_DB_PASSWORD" -v app_password="$APP_DB_PASSWORD" <<'SQL'
CREATE ROLE memoryadmin_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'owner_password';
CREATE ROLE memoryadmin_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'app_password';
ALTER DATABASE memoryadmin OWNER TO memoryadmin_owner;
ALTER SCHEMA public OWNER TO memoryadmin_owner;
REVOKE ALL ON DATABASE memoryadmin FROM PUBLIC;
GRANT CONNECT ON DATABASE memoryadmin TO memoryadmin_owner, memoryadmin_app;
SQL
