"""A retrieval's id is time-ordered: the read's time in its first 48 bits, the rest random."""

import datetime

import pytest

from curation.models import Retrieval
from curation.services.usage import record_retrieval, time_ordered_id
from tests.factories import agent_token, make_entry

pytestmark = pytest.mark.django_db

UTC = datetime.timezone.utc


def test_an_id_holds_its_time_in_milliseconds_and_is_a_version_7_uuid():
    at = datetime.datetime(2026, 12, 5, 7, 30, 1, 234567, tzinfo=UTC)
    made = time_ordered_id(at)
    assert made.version == 7 and made.variant == "specified in RFC 4122"
    assert made.int >> 80 == int(at.timestamp() * 1000)
    assert time_ordered_id(at) != made  # the other 74 bits are random


def test_ids_sort_as_their_times_do_even_within_a_millisecond_apart():
    times = [datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=n) for n in range(50)]
    ids = [time_ordered_id(t) for t in times]
    assert sorted(ids) == ids


def test_a_time_before_1970_has_no_such_id():
    with pytest.raises(ValueError):
        time_ordered_id(datetime.datetime(1969, 12, 31, tzinfo=UTC))


def test_a_read_is_stored_under_an_id_made_from_its_own_time():
    token = agent_token(scopes=("acme",))
    entry = make_entry(scope="acme", trigger="Drain the queue first")
    first = record_retrieval(token=token, scope="acme", query="drain", task_ref="t-1", entries=[entry])
    later = record_retrieval(
        token=token,
        scope="acme",
        query="drain",
        task_ref="t-2",
        entries=[entry],
        at=first.created_at + datetime.timedelta(seconds=1),
    )
    stored = Retrieval.objects.get(pk=first.pk)
    assert stored.pk.int >> 80 == int(stored.created_at.timestamp() * 1000)
    assert list(Retrieval.objects.order_by("pk").values_list("pk", flat=True)) == [first.pk, later.pk]
