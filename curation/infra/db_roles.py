"""The least-privilege database role (PostgreSQL). Migrations run as the role that owns the tables; the
web server, the workers and beat connect as an application role that owns nothing. What it may do is
granted here, again after every `migrate`, so a table a later migration adds is never forgotten:

- read and write the working tables (entries, queues, sessions, ...);
- only read and append the history (events, evidence, skill trials): no UPDATE or DELETE grant, beside
  the trigger that refuses them to everyone;
- run `curation_forget_purge` and `curation_forget_skill`, the only ways the history's text changes: a
  forget's purge (migrations 0024, 0032) and the withdrawal of the skills made of what it forgot (0033);
  and `curation_create_partition`, so the `partitions` sweep can add a month to the partitioned history;
- a partition has its partitioned table's rights (grants are not inherited on PostgreSQL): a month of
  the Events is append-only like the Events;
- on PostgreSQL 17 and later, MAINTAIN on the tables a purge rewrites, so the `vacuum_purged` sweep can
  VACUUM them (before 17 only their owner can: run that sweep as the owner, README "Operations");
- no TRUNCATE, no TRIGGER, no REFERENCES anywhere, and no ownership, so it cannot `ALTER TABLE ...
  DISABLE TRIGGER`, drop a table or create one; and not a superuser, so it cannot set
  `session_replication_role` (which would silence the triggers)."""

from __future__ import annotations

from django.conf import settings
from django.db import connections

APPEND_ONLY_TABLES = (
    "curation_event",
    "curation_evidence",
    "curation_skilltrial",
    "curation_tombstone",
    "curation_importrecord",  # what an import landed: only ever added to
)
# The tables a forget's purge rewrites, which the vacuum_purged sweep VACUUMs afterwards.
PURGED_TABLES = (
    "curation_entry",
    "curation_evidence",
    "curation_event",
    "curation_releasedentry",
    "curation_retrieval",
    "curation_consolidationproposal",
    "curation_skillproposal",
    "curation_memoryversion",
    "curation_conflict",
    "curation_forgetrequest",
)
# Functions the role may execute (owned by the tables' owner, SECURITY DEFINER), when they exist.
APP_FUNCTIONS = (
    "curation_forget_purge(bigint, text[], bigint[], bigint[])",
    "curation_forget_skill(bigint, bigint, text[], text[])",
    "curation_create_partition(text, date)",
)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def grant_statements(
    role: str, tables: list[str], functions=(), *, maintain: bool = False, parents: dict[str, str] | None = None
) -> list[str]:
    """The SQL that leaves `role` with exactly the application's rights on `tables` (the public schema's).
    `parents` names the partitioned table of each partition among them: a partition has its table's rights."""
    who = _ident(role)
    parents = parents or {}
    statements = [
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {who}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {who}",
        f"GRANT USAGE ON SCHEMA public TO {who}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {who}",
    ]
    for table in sorted(tables):
        append_only = parents.get(table, table) in APPEND_ONLY_TABLES
        rights = "SELECT, INSERT" if append_only else "SELECT, INSERT, UPDATE, DELETE"
        statements.append(f"GRANT {rights} ON {_ident(table)} TO {who}")
    for function in functions:
        statements.append(f"GRANT EXECUTE ON FUNCTION {function} TO {who}")
    if maintain:  # PostgreSQL 17+: VACUUM without owning the table
        statements += [
            f"GRANT MAINTAIN ON {_ident(t)} TO {who}" for t in sorted(tables) if parents.get(t, t) in PURGED_TABLES
        ]
    return statements


def grant_to_app_role(connection, role: str) -> None:
    """Apply the grants, as the tables' owner, on this connection's database."""
    with connection.cursor() as cursor:
        # Every table and partition, with the partitioned table each partition belongs to.
        cursor.execute(
            "SELECT c.relname, r.relname FROM pg_class c "
            "JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid) "
            "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')"
        )
        parents = dict(cursor.fetchall())
        tables = list(parents)
        functions = []
        for function in APP_FUNCTIONS:
            cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [function])
            if cursor.fetchone()[0]:
                functions.append(function)
        for statement in grant_statements(
            role, tables, functions, maintain=connection.pg_version >= 170000, parents=parents
        ):
            cursor.execute(statement)


def grant_after_migrate(sender, using="default", **kwargs) -> None:
    """post_migrate: when MEMORYADMIN_APP_DB_ROLE names the application's role, grant it its rights."""
    role = settings.APP_DB_ROLE
    connection = connections[using]
    if role and connection.vendor == "postgresql":
        grant_to_app_role(connection, role)
