"""A reviewer triages the queue in real Chromium (Debian's /usr/bin/chromium, driven by Playwright)."""

import re

import pytest
from playwright.sync_api import expect

from curation import services
from curation.models import Entry, Event, Status
from tests.factories import candidate_data, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reviewer_triages_with_the_keyboard(live_server, page):
    make_user("rita", "reviewer")
    first = services.create_candidate(data=candidate_data(trigger="Approve me by keyboard"), actor_label="agent:ci")
    second = services.create_candidate(data=candidate_data(trigger="Narrow my scope"), actor_label="agent:ci")
    third = services.create_candidate(data=candidate_data(trigger="Reject me with a reason"), actor_label="agent:ci")

    log_in(page, live_server, "rita")
    expect(page.locator("#queue-count")).to_contain_text("3 waiting")
    expect(page.locator(f"#card-{first.pk}")).to_have_class(re.compile("is-current"))

    # a: approve the current card; the queue moves on to the next one.
    page.keyboard.press("a")
    expect(page.locator(f"#card-{first.pk}")).to_contain_text("Approved")
    expect(page.locator("#queue-count")).to_contain_text("2 waiting")
    expect(page.locator(f"#card-{second.pk}")).to_have_class(re.compile("is-current"))

    # e: edit the scope, then Ctrl+Enter saves and approves.
    page.keyboard.press("e")
    scope = page.locator(f"#card-{second.pk} input[name=scope]")
    expect(scope).to_be_focused()
    scope.fill("acme/billing-api")
    page.keyboard.press("Control+Enter")
    expect(page.locator(f"#card-{second.pk}")).to_contain_text("Edited and approved")

    # r: reject with a reason; Enter sends it.
    expect(page.locator(f"#card-{third.pk}")).to_have_class(re.compile("is-current"))
    page.keyboard.press("r")
    reason = page.locator(f"#card-{third.pk} input[name=reason]")
    expect(reason).to_be_focused()
    reason.fill("only true for the staging container")
    page.keyboard.press("Enter")
    expect(page.locator(f"#card-{third.pk}")).to_contain_text("Rejected")
    expect(page.locator("#queue-count")).to_contain_text("0 waiting")

    # ? shows the keys.
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")

    # Each decision is on its entry page.
    for entry, status, text in [
        (first, "active", "approve"),
        (second, "active", "edit_approve"),
        (third, "rejected", "only true for the staging container"),
    ]:
        page.goto(f"{live_server.url}/entries/{entry.pk}/")
        expect(page.locator("#entry-status")).to_have_text(status)
        expect(page.locator(".timeline")).to_contain_text(text)
    page.goto(f"{live_server.url}/entries/{second.pk}/")
    expect(page.locator("h1")).to_contain_text("acme/billing-api")
    expect(page.locator(".timeline .diff")).to_contain_text("acme/billing-api/container")

    assert Entry.objects.get(pk=second.pk).scope == "acme/billing-api"
    assert Entry.objects.get(pk=third.pk).status == Status.REJECTED
    assert Event.objects.filter(actor__username="rita").count() == 3


def test_stale_decision_in_the_browser(live_server, page):
    make_user("rita", "reviewer")
    other = make_user("rob", "reviewer")
    entry = services.create_candidate(data=candidate_data(trigger="Someone else decides first"), actor_label="agent:ci")
    log_in(page, live_server, "rita")
    services.reject_candidate(entry.pk, actor=other, expected_version=1, reason="duplicate of #1")
    page.locator(f"#card-{entry.pk} [data-action=approve]").click()
    card = page.locator(f"#card-{entry.pk}")
    expect(card.locator(".conflict")).to_contain_text("changed since you loaded it")
    expect(card.locator(".conflict")).to_contain_text("duplicate of #1")
    assert Entry.objects.get(pk=entry.pk).status == Status.REJECTED
