"""Vacuum after a purge: on PostgreSQL an UPDATE leaves the old row version (with the forgotten text) in
the table's pages as a dead tuple until VACUUM reclaims it. After each forget's purge this sweep VACUUMs
the tables the purge rewrites, so the text is gone from the live pages too (WAL and backups: README,
"Operations").

It runs when a purge has happened since its last run (the `forget_purge` Events past its cursor): queued
when an approval commits, and on the beat schedule to catch one whose message was lost. VACUUM cannot run
inside a transaction: it runs on the sweep's own connection, in autocommit. It needs to own the tables
(PostgreSQL 17: the MAINTAIN privilege, which db_roles grants the application role): a table it may not
vacuum is named on the run and skipped. SQLite has no dead tuples to reclaim this way: nothing to do.

VACUUM removes a dead row version only once no snapshot can still see it: a transaction open since before
the purge (a long report, an idle session in a transaction, a prepared transaction, a replication slot or a
standby's feedback) keeps the forgotten text on disk however often VACUUM runs. The sweep then names what
holds it and keeps its cursor, so the next run (queued by the beat) vacuums again; it never says a table is
clean while the text can still be there. It sees the sessions its role may see (its own role's; every role's
with pg_read_all_stats)."""

from __future__ import annotations

import logging

from django.db import connection
from django.db.models import Max

from curation.infra.db_roles import PURGED_TABLES
from curation.models import Event, EventAction, TaskRun

from .engine import Sweep

logger = logging.getLogger(__name__)

NAME = "vacuum_purged"
DESCRIPTION = "VACUUM the tables a forget's purge rewrote, so no dead row keeps the forgotten text (PostgreSQL)."


def purged_tables() -> list[str]:
    """Every table a forget's purge rewrites (services/forgets.py; db_roles lists them for its grants)."""
    return list(PURGED_TABLES)


def thresholds() -> str:
    return (
        "Runs VACUUM on the tables a forget's purge rewrote, once after each purge, so their dead rows no "
        "longer hold the forgotten text; on SQLite there is nothing to do."
    )


def _cursor() -> int:
    """The last purge Event the previous successful run vacuumed after."""
    last = (
        TaskRun.objects.filter(task=NAME, state=TaskRun.State.SUCCEEDED, dry_run=False, cursor__isnull=False)
        .order_by("-id")
        .values_list("cursor", flat=True)
        .first()
    )
    return int(last.get("after_event", 0)) if isinstance(last, dict) else 0


def may_vacuum(table: str) -> bool:
    """Whether this connection's role may VACUUM `table` (its owner, a member of it, or MAINTAIN on 17+)."""
    with connection.cursor() as cursor:
        if connection.pg_version >= 170000:
            cursor.execute("SELECT has_table_privilege(%s, 'MAINTAIN')", [table])
        else:
            cursor.execute(
                "SELECT pg_has_role(tableowner, 'USAGE') FROM pg_tables "
                "WHERE schemaname = current_schema() AND tablename = %s",
                [table],
            )
        row = cursor.fetchone()
    return bool(row and row[0])


# What holds VACUUM's horizon at or before the purge, so the row versions the purge replaced cannot be
# removed yet: the purge's own Event was written in its transaction, so that row's xmin is the purge's
# transaction id; a session whose snapshot or own transaction is not newer holds them (sessions of other
# databases hold back only the shared catalogues, a walsender's standby feedback holds every database).
HOLDERS_SQL = """
    SELECT 'session ' || a.pid || coalesce(' (' || nullif(a.application_name, '') || ')', '')
           || ', ' || coalesce(a.state, a.backend_type) || ', in a transaction since '
           || to_char(a.xact_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'
    FROM pg_stat_activity a
    WHERE a.pid <> pg_backend_pid() AND greatest(age(a.backend_xmin), age(a.backend_xid)) >= age(%(xid)s::xid)
      AND (a.datname = current_database() OR a.backend_type = 'walsender')
    UNION ALL
    SELECT 'prepared transaction ' || quote_literal(p.gid) || ' since '
           || to_char(p.prepared AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'
    FROM pg_prepared_xacts p
    WHERE p.database = current_database() AND age(p.transaction) >= age(%(xid)s::xid)
    UNION ALL
    SELECT 'replication slot ' || quote_literal(s.slot_name)
    FROM pg_replication_slots s
    WHERE s.xmin IS NOT NULL AND age(s.xmin) >= age(%(xid)s::xid)
    ORDER BY 1
"""


def held_by(purge_event_id: int) -> list[str]:
    """What keeps VACUUM from removing the row versions the purge of `purge_event_id` replaced, described
    for the run (empty when nothing does)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT xmin::text FROM curation_event WHERE id = %s", [purge_event_id])
        (xid,) = cursor.fetchone()
        cursor.execute(HOLDERS_SQL, {"xid": xid})
        return [line for (line,) in cursor.fetchall()]


def run(sweep: Sweep) -> None:
    after = _cursor()
    newest = Event.objects.filter(
        forget_request__isnull=False, action=EventAction.FORGET_PURGE, pk__gt=after
    ).aggregate(n=Max("pk"))["n"]
    if newest is None:
        sweep.batch_done(examined=0, changed=0, last=True)
        return
    tables = purged_tables()
    if connection.vendor != "postgresql":
        sweep.sample("nothing to vacuum: only PostgreSQL keeps dead row versions until VACUUM")
        sweep.heartbeat(cursor=None if sweep.dry_run else {"after_event": newest})
        sweep.batch_done(examined=len(tables), changed=0, last=True)
        return
    if connection.in_atomic_block:  # called inside a caller's transaction (a test's): VACUUM cannot run there
        sweep.sample("not vacuumed: VACUUM cannot run inside a transaction; the next run outside one does it")
        sweep.batch_done(examined=len(tables), changed=0, last=True)
        return
    vacuumed, notes = 0, []
    for table in tables:
        if not may_vacuum(table):
            notes.append(f"{table}: skipped, this role may not vacuum it (run the sweep as the tables' owner)")
            logger.warning("vacuum_purged: the role may not vacuum %s", table)
            continue
        if sweep.dry_run:
            sweep.sample(f"{table}: would VACUUM (ANALYZE)")
            continue
        with connection.cursor() as cursor:
            cursor.execute(f'VACUUM (ANALYZE) "{table}"')
        sweep.sample(f"{table}: vacuumed")
        vacuumed += 1
    holders = held_by(newest) if vacuumed else []
    notes += [
        f"not yet removable: {h} holds back VACUUM from before the purge; the next run vacuums again" for h in holders
    ]
    if holders:
        logger.warning("vacuum_purged: the purged rows stay on disk until these end: %s", "; ".join(holders))
    for note in notes:
        sweep.sample(note)
    if not sweep.dry_run:
        # Done only when every table was vacuumed with nothing holding the purged rows; otherwise the cursor
        # stays where it was, so the next run vacuums this purge again, and the run says why on the
        # Maintenance page.
        done = vacuumed == len(tables) and not holders
        sweep.heartbeat(cursor={"after_event": newest} if done else {"after_event": after, "notes": notes})
    sweep.batch_done(examined=len(tables), changed=vacuumed, last=True)
