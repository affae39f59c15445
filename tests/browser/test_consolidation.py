"""A reviewer accepts a merge proposal in real Chromium, after editing its text."""

import re

import pytest
from playwright.sync_api import expect

from curation.models import ConsolidationProposal, Entry, Status
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reviewer_accepts_a_merge_proposal_after_editing(live_server, page):
    rita = make_user("rita", "reviewer")
    port = dict(
        scope="acme/billing-api", trigger="Connecting to the billing database from the container", conditions=["db"]
    )
    a = active(rita, content="Probe port 5432 with nc before connecting.", confidence=0.6, **port)
    b = active(rita, content="Probe port 5432 with nc before connecting!", confidence=0.8, **port)
    [proposal] = consolidation_sweep.sweep_consolidation().proposed

    log_in(page, live_server, "rita")
    page.get_by_role("link", name="Consolidation").click()
    expect(page).to_have_url(re.compile(r"/review/consolidation/$"))
    expect(page.locator("#queue-count")).to_contain_text("1 open")
    card = page.locator(f"#proposal-{proposal.pk}")
    expect(card).to_have_class(re.compile("is-current"))

    page.keyboard.press("e")
    trigger = card.locator("textarea[name=trigger]")
    expect(trigger).to_be_focused()
    content = card.locator("textarea[name=content]")
    content.fill("Probe port 5432 with nc; connect only once it answers.")
    content.press("Control+Enter")
    expect(card).to_contain_text("accepted after editing")
    expect(page.locator("#queue-count")).to_contain_text("0 open")

    merged = Entry.objects.get(supersedes=b)
    page.goto(f"{live_server.url}/entries/{merged.pk}/")
    expect(page.locator("#entry-status")).to_have_text("active")
    expect(page.locator(".timeline")).to_contain_text("consolidation_merge")
    assert merged.content == "Probe port 5432 with nc; connect only once it answers."
    assert {Entry.objects.get(pk=a.pk).status, Entry.objects.get(pk=b.pk).status} == {Status.SUPERSEDED}
    assert ConsolidationProposal.objects.get(pk=proposal.pk).state == "accepted"
