"""Several statements in one round trip to PostgreSQL (a run record's start and end, a look at the tombstones
under the forgetting lock): each statement still takes its own snapshot, as separate statements do."""

from __future__ import annotations

import psycopg
from django.db import DatabaseError, connection


def one_round_trip(statements: list[tuple[str, list]], *, unflushed_first: int = 0) -> list[list[tuple] | None]:
    """PostgreSQL: `statements` ((sql, params) each) sent to the server as one query string, run in order, each
    with its own snapshot as separate statements have. Answers each statement's rows (None for one that
    answers none). A run's start and end were each four or five round trips of a few tenths of a millisecond,
    each a wait for the server's turn on a busy machine. With server-side binding, which takes one statement
    a query, they are sent one by one.

    The first `unflushed_first` of them (a run record's own write: its start, its end) commit on their own,
    without waiting for the write-ahead log to reach the disk (not inside a caller's transaction): every other
    session sees them at once, and the log is written in order, so the next durable commit (the run's first
    batch) makes them durable too. Only a crash of the database server itself, within a fraction of a second,
    can lose one: a lost start is a run that had written nothing yet, a lost end leaves the run "running" on
    its record, which the next run closes as lost, its batches' work durable and not done again. Each wait
    for the disk was a fixed cost of every run (1 to 8 ms a commit here), twice a run."""
    head, tail = list(statements[:unflushed_first]), list(statements[unflushed_first:])
    opened = bool(head) and not connection.in_atomic_block
    if opened:
        head = [("BEGIN", []), ("SET LOCAL synchronous_commit TO OFF", []), *head, ("COMMIT", [])]
    sent = head + tail
    mine = [i for i, statement in enumerate(sent) if statement in statements]  # not the BEGIN, SET, COMMIT
    with connection.cursor() as cursor:
        results = []
        if isinstance(cursor.cursor, psycopg.ClientCursor):
            try:
                cursor.execute("; ".join(sql for sql, _ in sent), [p for _, params in sent for p in params])
            except DatabaseError:
                # A failed statement leaves the transaction this string opened (its BEGIN) aborted: end it, or the
                # connection's next query fails. A caller's own transaction is the caller's to roll back (its
                # atomic block does, to its savepoint); without either, the server ended the string's own.
                if opened and cursor.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    cursor.execute("ROLLBACK")
                raise
            while True:
                results.append(cursor.cursor.fetchall() if cursor.cursor.description else None)
                if not cursor.cursor.nextset():
                    break
        else:
            for sql, params in sent:
                cursor.execute(sql, params)
                results.append(cursor.fetchall() if cursor.description else None)
    return [results[i] for i in mine]
