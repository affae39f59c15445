"""What the four queues share: one URL answers a page or a fragment, so every answer says
`Vary: HX-Request` (a cache must not serve the fragment to a full load, or the page to htmx)."""

import pytest
from django.urls import reverse
from django.utils.cache import has_vary_header

from curation import services
from curation.services import conflicts
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active, candidate_data, client_for, page_text
from tests.factories import nominated

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def a_candidate(reviewer):
    return services.create_candidate(data=candidate_data(), actor_label="agent:ci").pk


def a_conflict(reviewer):
    a = active(
        reviewer, trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[]
    )
    b = active(
        reviewer,
        scope="acme/billing-api",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        conditions=[],
    )
    [conflict] = [c for c in conflicts.detect_conflicts_for(b) if c.entry_a_id == a.pk]
    return conflict.pk


def a_proposal(reviewer):
    port = dict(
        trigger="Connecting to the billing database", content="Probe port 5432 with nc first.", conditions=["db"]
    )
    active(reviewer, confidence=0.6, **port)
    active(reviewer, confidence=0.8, **{**port, "content": port["content"] + "!"})
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    return proposal.pk


def a_skill_proposal(reviewer):
    return nominated().pk


QUEUES = {
    "candidates": ("candidate-card", a_candidate, 'id="card-'),
    "conflicts": ("conflict-card", a_conflict, 'id="conflict-'),
    "consolidation": ("proposal-card", a_proposal, 'id="proposal-'),
    "skills-queue": ("skill-card", a_skill_proposal, 'id="skill-'),
}


@pytest.mark.parametrize("queue", list(QUEUES))
def test_the_page_and_a_card_vary_with_htmx(reviewer, queue):
    card_name, make, card_id = QUEUES[queue]
    pk = make(reviewer)
    client = client_for(reviewer)
    card_url = reverse(f"curation:{card_name}", args=[pk])
    page, fragment = client.get(card_url), client.get(card_url, **HTMX)
    assert page.content.decode().lstrip().startswith("<!doctype html>")
    assert fragment.content.decode().lstrip().startswith("<article") and card_id in fragment.content.decode()
    for response in (
        page,
        fragment,
        client.get(reverse(f"curation:{queue}")),
        client.get(reverse(f"curation:{queue}"), HTTP_HX_TARGET="queue", **HTMX),
    ):
        assert response.status_code == 200 and has_vary_header(response, "HX-Request")


@pytest.mark.parametrize("extra", [HTMX, {}])
def test_a_decision_varies_with_htmx(reviewer, extra):
    pk = a_candidate(reviewer)
    refused = client_for(reviewer).post(reverse("curation:candidate-approve", args=[pk]), {}, **extra)
    decided = client_for(reviewer).post(reverse("curation:candidate-approve", args=[pk]), {"version": 1}, **extra)
    assert refused.status_code == 422 and decided.status_code == (200 if extra else 302)
    assert has_vary_header(refused, "HX-Request") and has_vary_header(decided, "HX-Request")


def test_each_queue_lists_its_cards_and_says_when_nothing_matches(reviewer):
    for queue, (_, make, card_id) in QUEUES.items():
        make(reviewer)
        client = client_for(reviewer)
        assert card_id in client.get(reverse(f"curation:{queue}")).content.decode()
        empty = client.get(reverse(f"curation:{queue}"), {"f-scope": "nowhere"}).content.decode()
        assert card_id not in empty and "with these filters." in empty


def test_a_queue_remembers_its_filters_and_view_per_reviewer(reviewer, second_reviewer):
    from curation.models import QueuePreference

    url = reverse("curation:candidates")
    client = client_for(reviewer)
    assert client.get(url, {"f-scope": "acme/web", "f-kind": ""}).status_code == 200
    assert QueuePreference.objects.get(user=reviewer, queue="candidates").filters == "f-scope=acme%2Fweb"
    back = client.get(url)
    assert back.status_code == 302 and back["Location"] == f"{url}?f-scope=acme%2Fweb"
    # The page says the filters came back from the last visit, once, with a way to the whole queue.
    restored = page_text(client.get(back["Location"]))
    assert "Showing the filters you last used on this queue" in restored and "Show the whole queue" in restored
    assert "Showing the filters you last used" not in page_text(client.get(back["Location"]))
    assert client_for(second_reviewer).get(url).status_code == 200  # per reviewer
    assert client.get(url, {"f-kind": "rumour"}).status_code == 400  # a refused filter is not remembered
    assert client.get(url).status_code == 302
    client.get(url, {"f-scope": ""})  # Clear
    assert client.get(url).status_code == 200

    switched = client.post(reverse("curation:candidates-view"), {"view": "compact", "next": f"{url}?f-scope="})
    assert switched.status_code == 302 and switched["Location"] == f"{url}?f-scope="
    assert QueuePreference.objects.get(user=reviewer, queue="candidates").compact
    assert client.get(reverse("curation:candidates-view")).status_code == 405
