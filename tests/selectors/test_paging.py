"""The one keyset pager and the one capped count: every row once across pages, ties on the time broken
by the id, a broken cursor refused, a count that stops at its cap."""

import datetime

import pytest
from django.utils import timezone

from curation import selectors, services
from curation.models import Entry
from curation.selectors.paging import capped_count, keyset_page
from tests.factories import candidate_data

pytestmark = pytest.mark.django_db


def test_pages_walk_every_row_once_even_when_times_tie():
    at = timezone.now() - datetime.timedelta(hours=1)
    made = [
        services.create_candidate(data=candidate_data(trigger=f"Lesson {i}"), actor_label="agent:ci", at=at)
        for i in range(7)
    ]
    Entry.objects.update(queued_at=at)  # all at one moment: only the id orders them
    seen, cursor = [], ""
    while True:
        rows, cursor = keyset_page(Entry.objects.all(), stamp="queued_at", cursor=cursor, page_size=3)
        seen += [e.pk for e in rows]
        if not cursor:
            break
    assert seen == [e.pk for e in made]


def test_a_broken_cursor_is_refused():
    for cursor in ("garbage", "2026-01-01T00:00:00~1", "2026-01-01T00:00:00Z~x"):
        with pytest.raises(selectors.BadCursor):
            keyset_page(Entry.objects.all(), stamp="queued_at", cursor=cursor, page_size=3)


def test_the_count_stops_at_its_cap(settings):
    for i in range(4):
        services.create_candidate(data=candidate_data(trigger=f"Lesson {i}"), actor_label="agent:ci")
    assert capped_count(Entry.objects.all(), cap=3) == (3, True)
    assert capped_count(Entry.objects.all(), cap=4) == (4, False)
    settings.CURATION = {**settings.CURATION, "QUEUE_COUNT_CAP": 2}
    assert capped_count(Entry.objects.all()) == (2, True)
    page = selectors.Page([], count=1000, count_is_capped=True)
    assert page.count_label == "more than 1,000"
