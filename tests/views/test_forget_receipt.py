"""The receipt on the Forget queue: the decided card and the request's page say how many places were
checked and where residues were found; a reopened request waits in the queue until a lead closes it."""

import pytest
from django.urls import reverse

from curation.models import Event, EventAction, Evidence, ForgetRequest
from curation.services.forgets import approve_forget_request, file_forget_request
from tests.factories import active, client_for, publish_pending

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
TOKEN = "FORGETMEAXOLOTL-4242"
LESSON = dict(
    scope="acme/payroll",
    trigger="Rotating the payroll signing key",
    content=f"Run rotate-keys with {TOKEN} and then restart the signer before noon.",
)


@pytest.fixture
def filed(lead, reviewer):
    entry = active(lead, **LESSON)
    publish_pending()
    return file_forget_request(entry_id=entry.pk, reason="The user asked us to forget it", actor=reviewer)


def _residue(lead) -> Evidence:
    other = active(
        lead,
        scope="globex/web",
        trigger="Caching the landing page",
        content="Purge the CDN after a deploy.",
        boundary="Only for the public site.",
    )
    return Evidence.objects.create(
        entry=other,
        kind="task_outcome",
        signal="external",
        excerpt="worked",
        task_ref=f"ticket {TOKEN}",
        observed_at=other.created_at,
    )


def test_the_decided_card_and_the_request_page_show_the_receipt(lead, filed):
    client = client_for(lead)
    decided = client.post(reverse("curation:forget-approve", args=[filed.pk]), **HTMX).content.decode()
    places = Event.objects.get(forget_request=filed, action=EventAction.FORGET_RECEIPT).after["places"]
    assert f"Receipt: 0 residues in {places:,} places checked" in decided

    page = client.get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert f"<strong>Receipt:</strong> 0 residues in {places:,} places checked" in page
    assert "stored columns" in page and "exports rendered" in page
    approved = client.get(reverse("curation:forgets"), {"f-state": "approved"}).content.decode()
    assert "0 residues in" in approved


def test_a_residue_reopens_the_request_the_queue_shows_it_and_a_lead_closes_it(lead, reviewer, filed):
    evidence = _residue(lead)
    client = client_for(lead)
    decided = client.post(reverse("curation:forget-approve", args=[filed.pk]), **HTMX).content.decode()
    assert "the receipt found residues: reopened for a lead" in decided and "1 open" in decided

    queue = client.get(reverse("curation:forgets")).content.decode()  # the default view: what waits for a lead
    assert f"Request #{filed.pk}" in queue and "reopened" in queue
    assert "1 residue found in" in queue and "curation_evidence.task_ref" in queue and str(evidence.pk) in queue
    assert TOKEN not in queue
    assert "Close: residues dealt with" in queue
    reviewer_view = client_for(reviewer).get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert "curation_evidence.task_ref" in reviewer_view and "Close: residues dealt with" not in reviewer_view

    refused = client.post(reverse("curation:forget-close", args=[filed.pk]), {"note": " "}, **HTMX)
    assert refused.status_code == 422 and "Say what was done about each residue" in refused.content.decode()
    closed = client.post(reverse("curation:forget-close", args=[filed.pk]), {"note": "ticket renamed"}, **HTMX)
    assert closed.status_code == 200 and f"Request #{filed.pk}: closed: residues dealt with" in closed.content.decode()
    assert ForgetRequest.objects.get(pk=filed.pk).state == "approved"
    page = client.get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert "Found then, dealt with since" in page and "Close: residues dealt with" not in page
    assert (
        client_for(reviewer).post(reverse("curation:forget-close", args=[filed.pk]), {"note": "x"}).status_code == 403
    )


def test_closing_a_request_that_is_not_reopened_is_a_409(lead, filed):
    approve_forget_request(filed.pk, actor=lead)
    response = client_for(lead).post(reverse("curation:forget-close", args=[filed.pk]), {"note": "done"}, **HTMX)
    assert response.status_code == 409 and "not reopened" in response.content.decode()
