"""The one keyset pager and the one capped count behind every list of the console.

A page is read oldest first on (time, id) and continues from a cursor, so it costs an index range scan
whatever the page's depth; a count stops at a cap, so it never becomes a COUNT(*) of a large table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from curation.rules import config


class BadCursor(ValueError):
    pass


@dataclass
class Page:
    items: list
    next_cursor: str = ""
    count: int = 0
    count_is_capped: bool = False
    filters: Any = None

    @property
    def count_label(self) -> str:
        return capped_label(self.count, self.count_is_capped)


def capped_label(count: int, capped: bool) -> str:
    """The count in words: "more than 1,000" once it reached its cap, not a figure that looks exact."""
    return f"more than {count:,}" if capped else f"{count:,}"


def capped_count(qs: QuerySet, cap: int | None = None) -> tuple[int, bool]:
    """How many rows match, counted up to a cap: a bounded index scan, never a COUNT(*) of the table."""
    cap = cap if cap is not None else config.QUEUE_COUNT_CAP.value
    n = qs.order_by().values("pk")[: cap + 1].count()
    return min(n, cap), n > cap


def encode_keyset(moment: datetime.datetime, pk: int) -> str:
    """A keyset page cursor (time, id), URL-safe as it is: UTC with a Z, no '+' to be read back as a space."""
    stamp = moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp}~{pk}"


def decode_cursor(cursor: str) -> tuple[datetime.datetime, int]:
    try:
        stamp, _, pk = cursor.rpartition("~")
        moment = datetime.datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            raise ValueError
        return moment, int(pk)
    except ValueError as exc:
        raise BadCursor("This page link is broken; start again from the first page.") from exc


def keyset_page(qs: QuerySet, *, stamp: str, cursor: str, page_size: int) -> tuple[list, str]:
    """One page of `qs` ordered by (`stamp`, id) after `cursor`, and the cursor of the next page ("" on
    the last): one query, plus what `qs` prefetches."""
    if cursor:
        moment, pk = decode_cursor(cursor)
        # The `>=` bound lets the index range-scan from the cursor; the OR only sorts out ties.
        qs = qs.filter(Q(**{f"{stamp}__gte": moment}), Q(**{f"{stamp}__gt": moment}) | Q(pk__gt=pk))
    rows = list(qs.order_by(stamp, "id")[: page_size + 1])
    if len(rows) <= page_size:
        return rows, ""
    last = rows[page_size - 1]
    return rows[:page_size], encode_keyset(getattr(last, stamp), last.pk)


def read_page(
    qs: QuerySet, count_qs: QuerySet, *, stamp: str, cursor: str, page_size: int, filters=None, prepare=None
) -> Page:
    """A queue's page: the keyset page of `qs` (its rows passed through `prepare`, which may prefetch what
    the cards show) and the capped count of `count_qs`."""
    rows, next_cursor = keyset_page(qs, stamp=stamp, cursor=cursor, page_size=page_size)
    count, capped = capped_count(count_qs)
    return Page(prepare(rows) if prepare else rows, next_cursor, count, capped, filters)
