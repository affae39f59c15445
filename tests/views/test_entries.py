"""The entry page: a long history and a long supersedes chain cost the same few queries as a short one."""

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from curation import selectors
from curation.models import Entry, Event
from curation.selectors.entries import TIMELINE_LIMIT
from tests.factories import active, client_for, make_user

pytestmark = pytest.mark.django_db


def add_history(entry: Entry, n: int) -> None:
    """`n` more Events for the entry, copies of its first one (whatever fields an Event has), a minute apart."""
    first = Event.objects.filter(entry=entry).order_by("id").first()
    fields = {f.attname: getattr(first, f.attname) for f in Event._meta.concrete_fields if not f.primary_key}
    Event.objects.bulk_create(
        Event(
            **{**fields, "reason": f"history {i}", "created_at": first.created_at + datetime.timedelta(minutes=i + 1)}
        )
        for i in range(n)
    )


def chain(reviewer, length: int) -> list[Entry]:
    """`length` active entries, each replacing the one before it, oldest first."""
    entries = [active(reviewer, trigger=f"Way {i} of running migrations") for i in range(length)]
    for older, newer in zip(entries, entries[1:]):
        Entry.objects.filter(pk=newer.pk).update(supersedes=older)
    return [Entry.objects.get(pk=e.pk) for e in entries]


def page_queries(client, entry, **params):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("curation:entry", args=[entry.pk]), params)
    assert response.status_code == 200
    return len(queries), response.content.decode()


def test_the_entry_page_is_bounded_by_neither_its_history_nor_its_chain(reviewer, auditor):
    short = chain(reviewer, 2)
    long = chain(reviewer, 12)
    client = client_for(auditor)
    client.get(reverse("curation:entry", args=[short[-1].pk]))  # warm the session and the permission cache
    few, _ = page_queries(client, short[-1])
    add_history(long[-1], 500)
    many, html = page_queries(client, long[-1])
    assert many == few <= 14  # the same count whatever the history; its skills are looked up before their Events,
    # and its trust level's strongest confirmation (one query)
    assert html.count('<li class="event') == TIMELINE_LIMIT and "history 499" in html and "history 0" not in html
    assert 'id="timeline-older"' in html and "?timeline=all" in html
    for older in long[:-1]:
        assert f'href="/entries/{older.pk}/"' in html  # the whole chain, read in one query


def test_show_all_lists_the_whole_history(reviewer, auditor):
    entry = active(reviewer)
    add_history(entry, 150)
    _, html = page_queries(client_for(auditor), entry, timeline="all")
    assert html.count('<li class="event') == 152 and "history 0" in html and 'id="timeline-older"' not in html
    _, short = page_queries(client_for(auditor), active(reviewer, trigger="A short history"))
    assert 'id="timeline-older"' not in short


def test_the_supersedes_chain_is_two_queries_and_stops_outside_the_scopes(reviewer, django_assert_num_queries):
    entries = chain(reviewer, 6)
    middle, user = entries[3], make_user("una", "reviewer")
    with django_assert_num_queries(3):  # the user's scope grants, the chain's ids, the visible entries
        older, newer = selectors.supersedes_chain(user, middle)
    assert [e.pk for e in older] == [e.pk for e in entries[:3]] and [e.pk for e in newer] == [e.pk for e in entries[4:]]
    Entry.objects.filter(pk=entries[1].pk).update(scope="acme/web")
    scoped = make_user("sam", "reviewer", scopes=["acme/billing-api"])
    older, newer = selectors.supersedes_chain(scoped, middle)
    assert [e.pk for e in older] == [entries[2].pk]  # the walk stops at the entry outside the scopes
