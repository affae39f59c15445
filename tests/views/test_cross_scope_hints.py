"""Hints never cross a reviewer's scopes: a card's similar entries and merge targets, a consolidation
proposal's entries and an entry history's conflict partners show only what the reviewer may read (a user
without grants still sees them all)."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from curation import services
from curation.models import ConsolidationProposal, Entry, Status
from curation.services import conflicts
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import CONFIG, NEAR, NO_REBASE, REBASE, active, client_for, make_user, page_text, record_uses

pytestmark = pytest.mark.django_db


@pytest.fixture
def hinted(reviewer, make_candidate):
    """A candidate in acme/billing-api/container near-duplicating an active entry of acme (its ancestor),
    which a reviewer limited to acme/billing-api does not review."""
    above = active(reviewer, scope="acme", **CONFIG)
    candidate = make_candidate(scope="acme/billing-api/container", **NEAR)
    assert list(candidate.similar_links.values_list("similar_id", flat=True)) == [above.pk]
    return candidate, above


def test_a_card_shows_no_similar_entry_outside_the_scopes(hinted, scoped_reviewer, reviewer):
    candidate, above = hinted
    for path in (reverse("curation:candidates"), reverse("curation:candidate-card", args=[candidate.pk])):
        page = client_for(scoped_reviewer).get(path).content.decode()
        assert f'id="card-{candidate.pk}"' in page
        assert "Similar active entries" not in page and f"#{above.pk}" not in page and CONFIG["trigger"] not in page
        assert f"Merge into #{above.pk}" in client_for(reviewer).get(path).content.decode()


def test_merging_into_an_entry_outside_the_scopes_reads_like_a_missing_one(hinted, scoped_reviewer):
    candidate, above = hinted
    refusals = []
    for target in (above.pk, 999999):
        with pytest.raises(ValidationError) as refused:
            services.merge_into(candidate.pk, actor=scoped_reviewer, expected_version=1, target_id=target)
        refusals.append(refused.value.message_dict["target"][0].replace(str(target), "N"))
    assert refusals[0] == refusals[1] == "#N is not an active entry you review."
    assert Entry.objects.get(pk=candidate.pk).status == Status.PENDING


def test_a_proposal_with_an_entry_moved_out_of_the_scopes_is_hidden(reviewer, lead, scoped_reviewer):
    port = dict(
        trigger="Connecting to the billing database from the container",
        content="Probe port 5432 with nc before connecting.",
        conditions=["db"],
    )
    a = active(reviewer, scope="acme/billing-api", confidence=0.6, **port)
    b = active(reviewer, scope="acme/billing-api", confidence=0.8, **{**port, "content": port["content"] + "!"})
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    card = reverse("curation:proposal-card", args=[proposal.pk])
    assert client_for(scoped_reviewer).get(card).status_code == 200
    record_uses(b, ["failure"], confirm_failures=False)  # back in the queue for a recheck: its scope is editable
    services.edit_and_approve(
        b.pk, actor=lead, expected_version=Entry.objects.get(pk=b.pk).version, changes={"scope": "acme/web"}
    )
    client = client_for(scoped_reviewer)
    unknown = client.get(reverse("curation:proposal-card", args=[999999]))
    answer = client.get(card)
    assert (answer.status_code, page_text(answer)) == (404, page_text(unknown))
    assert f'id="proposal-{proposal.pk}"' not in client.get(reverse("curation:consolidation")).content.decode()
    for decision in ("accept", "dismiss"):
        response = client.post(reverse(f"curation:proposal-{decision}", args=[proposal.pk]), {"note": "x"})
        assert response.status_code == 404
    assert ConsolidationProposal.objects.get(pk=proposal.pk).state == ConsolidationProposal.State.OPEN
    assert client_for(reviewer).get(card).status_code == 200 and a


@pytest.fixture
def conflict_above(reviewer):
    """An entry of acme/billing-api in conflict with one of acme, above a billing reviewer's scopes."""
    parent = active(reviewer, scope="acme", **REBASE)
    child = active(reviewer, scope="acme/billing-api", **NO_REBASE)
    [conflict] = conflicts.detect_conflicts_for(child)
    return conflict, parent, child


def test_the_entry_page_does_not_name_a_conflict_partner_outside_the_scopes(conflict_above, reviewer):
    conflict, parent, child = conflict_above
    lead = make_user("bill", "lead", scopes=["acme/billing-api"])
    client = client_for(lead)
    page = client.get(reverse("curation:entry", args=[child.pk]) + "?timeline=all").content.decode()
    history = client.get(reverse("curation:entry-history", args=[child.pk])).content.decode()
    for text in (page, history):
        assert "about a conflict with an entry outside your scopes" in text
        assert f"with #{parent.pk}" not in text and "onto main" not in text and f'"with": {parent.pk}' not in text
    assert f"with #{parent.pk}" in client_for(reviewer).get(reverse("curation:entry", args=[child.pk])).content.decode()


def test_an_entrys_history_does_not_name_an_entry_outside_the_readers_scopes(hinted, reviewer, scoped_reviewer):
    """A candidate in acme/billing-api/container merged (by a reviewer of every scope) into the acme entry: a
    reviewer limited to acme/billing-api reads that it went into another entry, never which one."""
    candidate, above = hinted
    services.merge_into(candidate.pk, actor=reviewer, expected_version=candidate.version, target_id=above.pk)
    url = reverse("curation:entry", args=[candidate.pk])
    scoped = page_text(client_for(scoped_reviewer).get(url))
    assert "merged into an entry outside your scopes" in scoped and f"#{above.pk}" not in scoped
    exported = client_for(scoped_reviewer).get(reverse("curation:entry-history", args=[candidate.pk]))
    assert exported.status_code == 200
    body = exported.content.decode()
    assert "merged into an entry outside your scopes" in body
    assert f"#{above.pk}" not in body and f'"merged_into": {above.pk}' not in body
    assert f"merged into #{above.pk}" in page_text(client_for(reviewer).get(url))
