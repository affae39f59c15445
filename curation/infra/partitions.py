"""The partitioned history (PostgreSQL), one partition a month plus a DEFAULT one that catches a row no month
holds (the replayed clock may write far in the past or future):

- the Events and the retrieved entries by `created_at` (migration 0048);
- the retrievals by `id` and the feedback by `retrieval_id` (0054): a retrieval's id is time-ordered (its
  first 48 bits are its read's Unix milliseconds), so a month is the range of ids from the month's first
  millisecond to the next month's. Ids made before that are random and mostly sit in DEFAULT.

A month's partition is made by the database function `curation_create_partition`, which the tables' owner
owns: it moves that month's rows out of DEFAULT (a retrieval's with the rows that refer to it) and gives
the partition its table's grants; the append-only trigger comes with the table."""

from __future__ import annotations

import datetime

from django.db import connection

PARTITIONED_TABLES = ("curation_event", "curation_retrievedentry", "curation_retrieval", "curation_feedback")


def month_start(day: datetime.date) -> datetime.date:
    return day.replace(day=1)


def months_from(day: datetime.date, count: int) -> list[datetime.date]:
    """The first day of `day`'s month and of the `count` months after it."""
    first = month_start(day)
    return [
        datetime.date(first.year + (first.month - 1 + n) // 12, (first.month - 1 + n) % 12 + 1, 1)
        for n in range(count + 1)
    ]


def partition_name(table: str, month: datetime.date) -> str:
    return f"{table}_y{month:%Y}m{month:%m}"


def is_partitioned(table: str) -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(%s))", [table])
        return cursor.fetchone()[0]


def partitions(table: str) -> list[str]:
    """The names of `table`'s partitions, the DEFAULT one among them (none on SQLite or a plain table)."""
    if not is_partitioned(table):
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT relid::regclass::text FROM pg_partition_tree(%s) WHERE isleaf ORDER BY 1", [table])
        return [name for (name,) in cursor.fetchall()]


def create_partition(table: str, month: datetime.date) -> bool:
    """Make `table`'s partition for `month` (with its trigger and grants); False when it already exists."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT curation_create_partition(%s, %s)", [table, month_start(month)])
        return cursor.fetchone()[0]


def partition_of_row(table: str, pk) -> str | None:
    """Which partition holds the row `pk` of `table` (tests and the Maintenance view of a month)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {table} WHERE id = %s", [pk])
        row = cursor.fetchone()
    return row[0] if row else None
