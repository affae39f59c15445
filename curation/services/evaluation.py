"""Holdout evaluation's writes: the tallies of reported outcomes per day, scope and arm, and per entry, that
the learning dashboard reads. (A lead's holdout fraction is a scope policy: services/scope_policies.py.)"""

from __future__ import annotations

from django.db import connection

from curation.models import LessonTally, OutcomeTally, Retrieval


def tally_outcome(retrieval: Retrieval, *, success: bool, at, charged=None) -> None:
    """Count a reported outcome for its day, scope and arm, and for each entry the task was given (and, among
    them, those it is charged to: `charged`, every one given when None); call it in the feedback's
    transaction. One statement each, an insert or an increment."""
    day, won = at.date(), int(success)
    with connection.cursor() as cursor:
        table = OutcomeTally._meta.db_table
        cursor.execute(
            f"INSERT INTO {table} (day, scope, arm, tasks, successes) VALUES (%s, %s, %s, 1, %s) "
            f"ON CONFLICT (day, scope, arm) DO UPDATE SET tasks = {table}.tasks + 1, "
            f"successes = {table}.successes + excluded.successes",
            [day, retrieval.scope, retrieval.arm, won],
        )
        entry_ids = sorted(set(retrieval.entry_ids))
        charged = set(entry_ids if charged is None else charged)
        if entry_ids:
            table = LessonTally._meta.db_table
            rows = ", ".join(["(%s, %s, 1, %s, %s, %s)"] * len(entry_ids))
            cursor.execute(
                f"INSERT INTO {table} (day, entry_id, tasks, successes, charged_tasks, charged_successes) "
                f"VALUES {rows} ON CONFLICT (day, entry_id) DO UPDATE SET tasks = {table}.tasks + 1, "
                f"successes = {table}.successes + excluded.successes, "
                f"charged_tasks = {table}.charged_tasks + excluded.charged_tasks, "
                f"charged_successes = {table}.charged_successes + excluded.charged_successes",
                [value for pk in entry_ids for value in (day, pk, won, int(pk in charged), won * int(pk in charged))],
            )
