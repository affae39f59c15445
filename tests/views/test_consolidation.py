"""The consolidation queue through the real URLs, middleware and templates."""

import pytest
from django.urls import reverse

from curation.models import ConsolidationProposal, Entry, Status
from curation.services import consolidation
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active, client_for, make_user

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PORT = dict(
    trigger="Connecting to the billing database from the container",
    content="Probe port 5432 with nc before connecting.",
    conditions=["db"],
)


@pytest.fixture
def proposal(reviewer):
    def make(scope="acme/billing-api"):
        a = active(reviewer, scope=scope, confidence=0.6, **PORT)
        b = active(reviewer, scope=scope, confidence=0.8, **{**PORT, "content": PORT["content"] + "!"})
        [p] = consolidation_sweep.sweep_consolidation().proposed
        return p, a, b

    return make


def url(name, p):
    return reverse(f"curation:proposal-{name}", args=[p.pk])


def test_the_queue_shows_members_and_the_merged_text(proposal, reviewer):
    p, a, b = proposal()
    page = client_for(reviewer).get(reverse("curation:consolidation")).content.decode()
    assert f'id="proposal-{p.pk}"' in page and "1 open" in page and "merge duplicates" in page
    assert f'href="/entries/{a.pk}/"' in page and f'href="/entries/{b.pk}/"' in page
    assert "Merged: when" in page and "Save and accept" in page


def test_queue_query_count(reviewer, django_assert_max_num_queries):
    for i in range(5):
        a = active(reviewer, scope=f"acme/p{i}", **PORT)
        active(reviewer, scope=f"acme/p{i}", **{**PORT, "content": PORT["content"] + "!"})
    consolidation_sweep.sweep_consolidation()
    client = client_for(reviewer)
    client.get(reverse("curation:consolidation"))
    # session, user, permissions, grants, the reviewer's queue preference, then 4: page, members, evidence, count
    with django_assert_max_num_queries(11):
        page = client.get(reverse("curation:consolidation")).content.decode()
    assert page.count('class="card proposal-card') == 5 and a


def test_accept_with_htmx(proposal, reviewer):
    p, a, b = proposal()
    response = client_for(reviewer).post(url("accept", p), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and f"Proposal #{p.pk}: accepted" in body and "0 open" in body
    merged = Entry.objects.get(supersedes=b)
    assert merged.status == Status.ACTIVE and f"/entries/{merged.pk}/" in body
    assert f"Cannot be undone: the merge wrote new entry #{merged.pk}" in body and 'data-action="undo"' not in body


def test_accept_after_editing_and_bad_edits(proposal, reviewer):
    p, a, b = proposal()
    client = client_for(reviewer)
    bad = client.post(
        url("accept", p),
        {"edited": "1", "trigger": "", "content": "Probe the port.", "boundary": "", "conditions": ""},
        **HTMX,
    )
    assert bad.status_code == 422 and "This field is required." in bad.content.decode()
    assert 'data-panel="edit" data-key="e" open' in bad.content.decode()
    ok = client.post(
        url("accept", p),
        {
            "edited": "1",
            "trigger": "Connecting to the billing DB",
            "content": "Probe the port.",
            "boundary": "",
            "conditions": "db",
            "next": "/review/consolidation/?kind=merge",
        },
    )
    assert ok.status_code == 302 and ok["Location"] == "/review/consolidation/?kind=merge"
    assert Entry.objects.get(supersedes=b).content == "Probe the port."


def test_dismiss_and_stale(proposal, reviewer, second_reviewer):
    p, a, b = proposal()
    consolidation.dismiss_proposal(p.pk, actor=second_reviewer)
    response = client_for(reviewer).post(url("accept", p), **HTMX)
    assert response.status_code == 409 and "already dismissed by rob" in response.content.decode()


def test_roles(proposal, auditor, nobody):
    p, a, b = proposal()
    page = client_for(auditor).get(reverse("curation:consolidation")).content.decode()
    assert f'id="proposal-{p.pk}"' in page and "Accept" not in page
    assert client_for(auditor).post(url("accept", p)).status_code == 403
    assert client_for(auditor).post(url("dismiss", p)).status_code == 403
    assert client_for(nobody).get(reverse("curation:consolidation")).status_code == 403
    outsider = make_user("wes", "reviewer", scopes=["acme/web"])
    assert client_for(outsider).post(url("accept", p)).status_code == 404
    assert client_for(outsider).get(url("card", p)).status_code == 404
    assert ConsolidationProposal.objects.get(pk=p.pk).state == "open"


def test_filters(proposal, reviewer):
    p, a, b = proposal()
    client = client_for(reviewer)
    assert (
        f'id="proposal-{p.pk}"'
        not in client.get(reverse("curation:consolidation"), {"f-kind": "supersede"}).content.decode()
    )
    assert (
        f'id="proposal-{p.pk}"' in client.get(reverse("curation:consolidation"), {"f-scope": "acme"}).content.decode()
    )
    assert client.get(reverse("curation:consolidation"), {"f-kind": "nope"}).status_code == 400
    assert client.get(reverse("curation:consolidation"), {"after": "nope"}).status_code == 400


def test_bulk_accept_and_dismiss(proposal, reviewer, auditor):
    first, a, b = proposal()
    second, c, d = proposal(scope="acme/web")
    client = client_for(reviewer)
    assert 'id="bulk-form"' in client.get(reverse("curation:consolidation")).content.decode()
    response = client.post(
        reverse("curation:consolidation-bulk"), {"selected": [first.pk], "action": "accept"}, follow=True
    )
    assert "Accepted 1 of 1." in response.content.decode()
    response = client.post(
        reverse("curation:consolidation-bulk"), {"selected": [first.pk, second.pk], "action": "dismiss"}, follow=True
    )
    assert "Dismissed 1 of 2." in response.content.decode() and "already accepted" in response.content.decode()
    assert ConsolidationProposal.objects.get(pk=second.pk).state == "dismissed"
    assert (
        "Bulk actions are accept or dismiss."
        in client.post(
            reverse("curation:consolidation-bulk"), {"selected": [first.pk], "action": "zap"}, follow=True
        ).content.decode()
    )
    assert (
        client_for(auditor)
        .post(reverse("curation:consolidation-bulk"), {"selected": [first.pk], "action": "accept"})
        .status_code
        == 403
    )


def test_undo_a_dismissal_from_the_decided_card(proposal, reviewer):
    p, a, b = proposal()
    client = client_for(reviewer)
    body = client.post(url("dismiss", p), **HTMX).content.decode()
    assert "0 open" in body and f'action="{url("undo", p)}"' in body and "Undo <kbd>z</kbd>" in body
    body = client.post(url("undo", p), **HTMX).content.decode()
    assert f"Undone: Proposal #{p.pk} is back in the queue." in body and "1 open" in body
    assert ConsolidationProposal.objects.get(pk=p.pk).state == ConsolidationProposal.State.OPEN
    # Without JavaScript: back to the queue, with what happened.
    client.post(url("dismiss", p))
    response = client.post(url("undo", p), follow=True)
    assert f"Proposal #{p.pk}: undone." in response.content.decode()
    assert ConsolidationProposal.objects.get(pk=p.pk).state == ConsolidationProposal.State.OPEN
