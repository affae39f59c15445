"""Two reviewers click at the same instant, by real threads on their own connections: one decision is
written, the other answers the 409 card that says who got there first, on SQLite as on PostgreSQL."""

import pytest
from django.urls import reverse

from curation import services
from curation.models import Entry, Event, Status
from tests.factories import candidate_data, client_for, make_user, run_together

pytestmark = pytest.mark.django_db(transaction=True)


def test_approve_against_reject_one_wins_the_other_gets_the_409_card():
    first, second = make_user("one", "reviewer"), make_user("two", "reviewer")
    entry = services.create_candidate(data=candidate_data(), actor_label="agent:ci")
    approve, reject = (
        (client_for(first), reverse("curation:candidate-approve", args=[entry.pk])),
        (client_for(second), reverse("curation:candidate-reject", args=[entry.pk])),
    )
    responses = run_together(
        [
            lambda: approve[0].post(approve[1], {"version": 1}, HTTP_HX_REQUEST="true"),
            lambda: reject[0].post(reject[1], {"version": 1, "reason": "not general"}, HTTP_HX_REQUEST="true"),
        ]
    )
    assert sorted(str(getattr(r, "status_code", r)) for r in responses) == ["200", "409"]
    won, lost = sorted(responses, key=lambda r: r.status_code)
    winner = "one" if won is responses[0] else "two"
    body = lost.content.decode()
    assert f'id="card-{entry.pk}"' in body and "changed since you loaded it" in body and winner in body
    fresh = Entry.objects.get(pk=entry.pk)
    assert fresh.version == 2 and fresh.status == (Status.ACTIVE if winner == "one" else Status.REJECTED)
    assert Event.objects.filter(entry=entry).count() == 2
