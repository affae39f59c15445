"""The console's forms and filters: a NUL character in a field is a 422 naming it, on both databases."""

import pytest
from django.urls import reverse

from curation.models import Entry, Event, Status
from tests.factories import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "action, data, field",
    [
        ("reject", {"reason": "too\x00vague"}, "reason"),
        ("edit", {"scope": "acme/web", "trigger": "t\x00", "content": "c"}, "trigger"),
        ("edit", {"scope": "acme/web", "trigger": "t", "content": "c", "boundary": "\x00"}, "boundary"),
    ],
)
def test_a_decision_with_a_nul_is_a_422_naming_the_field(reviewer, make_candidate, action, data, field):
    entry = make_candidate()
    for extra in ({"HTTP_HX_REQUEST": "true"}, {}):
        response = client_for(reviewer).post(
            reverse(f"curation:candidate-{action}", args=[entry.pk]), {"version": 1, **data}, **extra
        )
        assert response.status_code == 422
        assert f"{field}: Must not contain NUL characters." in response.content.decode()
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.version) == (Status.PENDING, 1)
    assert Event.objects.filter(entry=entry).count() == 1


@pytest.mark.parametrize("params, field", [({"q": "a\x00b"}, "q"), ({"scope": "acme\x00"}, "scope")])
def test_a_filter_with_a_nul_is_a_422_naming_it(reviewer, params, field):
    queue_params = {f"f-{k}": v for k, v in params.items()}  # a queue's filters have their own namespace
    for url, sent in (
        (reverse("curation:candidates"), queue_params),
        (reverse("curation:conflicts"), queue_params),
        (reverse("curation:skills"), params),
    ):
        response = client_for(reviewer).get(url, sent)
        assert response.status_code == 422
        assert f"{field}: Must not contain NUL characters." in response.content.decode()
