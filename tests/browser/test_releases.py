"""A lead publishes a release in real Chromium after acknowledging its warning, then rolls it back."""

import re

import pytest
from playwright.sync_api import expect

from curation.models import Event, EventAction
from curation.selectors import releases as reads
from tests.factories import active, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_lead_publishes_after_acknowledging_a_warning_and_rolls_back(live_server, page):
    lead = make_user("lena", "lead")
    reviewer = make_user("rita", "reviewer")
    entry = active(reviewer, scope="acme/billing-api", boundary="", trigger="Rotating the webhook signing key")

    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Releases").click()
    expect(page).to_have_url(re.compile(r"/releases/$"))
    expect(page.locator("#published-version")).to_contain_text("agents read version 1")
    expect(page.locator(f"#change-entry-{entry.pk}")).to_contain_text("approved by rita")
    expect(page.locator("#checks")).to_contain_text("No boundary (when it does not hold)")

    # Without the acknowledgement the publish is refused, and nothing changes for agents.
    page.get_by_label("Summary").fill("Billing: webhook key rotation")
    page.locator("[data-action=publish]").click()
    expect(page.locator("#publish")).to_contain_text("must be acknowledged")
    assert reads.published_version().number == 1

    page.get_by_label(re.compile("I have read the 1 warning")).check()
    page.locator("[data-action=publish]").click()
    expect(page.locator("#messages")).to_contain_text("Published version 2: 1 added")
    expect(page.locator("#published-version")).to_contain_text("agents read version 2")
    expect(page.locator("#pending")).to_contain_text("Nothing pending")
    version = reads.published_version()
    assert version.number == 2 and version.published_by == lead and version.acknowledged[0]["entry"] == entry.pk

    # Roll back to version 1 with a reason: agents read version 1 again, the approval is pending again.
    row = page.locator("#version-1")
    row.get_by_text("Roll back to 1").click()
    row.get_by_label("Why").fill("The rotation steps are wrong for the EU region")
    row.locator("[data-action=rollback]").click()
    expect(page.locator("#messages")).to_contain_text("Version 1 is the published one again")
    expect(page.locator("#published-version")).to_contain_text("agents read version 1")
    expect(page.locator(f"#change-entry-{entry.pk}")).to_be_visible()
    event = Event.objects.get(action=EventAction.VERSION_ROLLED_BACK)
    assert event.actor == lead and event.reason == "The rotation steps are wrong for the EU region"
