"""Partitions ahead: the partitioned history (PostgreSQL, infra/partitions.py) gets each table's partitions
for this month and the next few before any row needs them, so a month's rows land in their own partition
rather than in DEFAULT. Made by the database function the tables' owner owns (the application role may not
create tables), each with the table's append-only trigger where it has one (inherited) and the table's
grants. Rows that a replayed clock wrote into DEFAULT for a month that gets its partition move there (a
retrieval's with the retrieved entries and the feedback that refer to it). Running it again
changes nothing. SQLite has no partitions: nothing to do."""

from __future__ import annotations

from curation.infra import partitions

from .engine import Sweep

NAME = "partitions"
DESCRIPTION = "Create the partitioned history's monthly partitions ahead of time (PostgreSQL)."
MONTHS_AHEAD = 3


def thresholds() -> str:
    return (
        f"Makes the Events', retrieved entries', retrievals' and feedback's partitions for this month and the "
        f"next {MONTHS_AHEAD} "
        "(by the product's clock), moving any row already written for those months out of the DEFAULT "
        "partition; on SQLite there is nothing to do."
    )


def run(sweep: Sweep) -> None:
    tables = [table for table in partitions.PARTITIONED_TABLES if partitions.is_partitioned(table)]
    if not tables:
        sweep.sample("nothing to do: the history is partitioned on PostgreSQL only")
        sweep.batch_done(examined=0, changed=0, last=True)
        return
    months = partitions.months_from(sweep.as_of.date(), MONTHS_AHEAD)
    examined = created = 0
    for table in tables:
        existing = set(partitions.partitions(table))
        for month in months:
            name = partitions.partition_name(table, month)
            examined += 1
            if name in existing:
                continue
            if sweep.dry_run:
                sweep.sample(f"{name}: would be created")
                continue
            if partitions.create_partition(table, month):
                created += 1
                sweep.sample(f"{name}: created")
    sweep.batch_done(examined=examined, changed=created, last=True)
