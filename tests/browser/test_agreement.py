"""Two reviewers in Chromium: a lead requires two approvals under a scope, the first reviewer's approval
leaves the card marked "1 of 2", and a second reviewer's approval activates it; axe-core on each page."""

import re

import pytest
from playwright.sync_api import expect

from curation import services
from curation.models import Entry, EventAction, Status
from tests.browser.test_accessibility import violations
from tests.factories import candidate_data, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_two_reviewers_approve_and_the_second_activates(live_server, page):
    make_user("lena", "lead")
    make_user("rita", "reviewer")
    make_user("rob", "reviewer")
    entry = services.create_candidate(
        data=candidate_data(trigger="Two reviewers must agree on me"), actor_label="agent:ci"
    )
    found = {}

    # The lead requires two approvals under acme/billing-api.
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/review/rules/")  # the old page's bookmark: its section of the policies page
    expect(page).to_have_url(f"{live_server.url}/policies/#review")
    rules = page.locator("section#review")
    rules.get_by_label("Scope prefix").fill("acme/billing-api")
    rules.get_by_label("Approvals needed").select_option("2")
    rules.get_by_role("button", name="Save the two-reviewer rule").click()
    expect(page.locator(".flash")).to_contain_text("Candidates under acme/billing-api now need 2 approvals.")
    expect(page.locator("table.rules")).to_contain_text("acme/billing-api")
    found["rules page"] = violations(page)

    # The first reviewer approves with the keyboard: the card says 1 of 2, and it is still waiting.
    page.context.clear_cookies()
    log_in(page, live_server, "rita")
    card = page.locator(f"#card-{entry.pk}")
    expect(card).to_have_class(re.compile("is-current"))
    page.keyboard.press("a")
    expect(card).to_contain_text("Approved, 1 of 2: a second reviewer activates it")
    expect(page.locator("#queue-count")).to_contain_text("1 waiting")
    page.reload()
    # Her own first approval waits for someone else: marked so, and its approve button cannot be pressed.
    expect(card.locator(".badge.approvals")).to_have_text("1 of 2 approvals · yours: waiting for a second reviewer")
    expect(card.get_by_role("button", name="Waiting for a second reviewer")).to_be_disabled()
    found["queue after a first approval"] = violations(page)

    # The second reviewer sees who approved, on the card and in the compact list, and activates it.
    page.context.clear_cookies()
    log_in(page, live_server, "rob")
    expect(card.locator(".badge.approvals")).to_have_text("1 of 2 approvals · rita")
    page.get_by_role("button", name="Show a compact list").click()
    expect(page.locator(f"#card-{entry.pk}.line")).to_contain_text("1 of 2 approvals · rita")
    found["compact list with a first approval"] = violations(page)
    page.get_by_role("button", name=f"Expand #{entry.pk}").click()
    expect(card.locator("[data-action=approve]")).to_contain_text("Approve, 2 of 2")
    card.locator("[data-action=approve]").click()
    expect(card).to_contain_text("Approved")
    expect(page.locator("#queue-count")).to_contain_text("0 waiting")

    stored = Entry.objects.get(pk=entry.pk)
    assert stored.status == Status.ACTIVE
    assert list(stored.events.order_by("id").values_list("action", "actor__username"))[-2:] == [
        (EventAction.FIRST_APPROVAL, "rita"),
        (EventAction.SECOND_APPROVAL, "rob"),
    ]

    # The lead reads the agreement on the reviewers' page.
    page.context.clear_cookies()
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name=re.compile("Reviewers: decisions, agreement")).click()
    expect(page.locator("#reviewers-7")).to_contain_text("100% (1 of 1)")
    found["reviewers page"] = violations(page)
    assert {name: v for name, v in found.items() if v} == {}


def test_a_lead_who_makes_an_automatic_policy_meet_a_two_reviewer_rule_is_told(live_server, page):
    make_user("lena", "lead")
    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Policies", exact=True).click()
    rules = page.locator("section#review")
    rules.get_by_label("Scope prefix").fill("acme")
    rules.get_by_role("button", name="Save the two-reviewer rule").click()
    admission = page.locator("section#admission")
    admission.get_by_label("Scope prefix").fill("acme/ops")
    admission.get_by_label("Name").fill("open")
    admission.get_by_label("Mode").select_option("all")
    admission.get_by_role("button", name="Save the admission policy").click()
    expect(page).to_have_url(f"{live_server.url}/policies/#admission")
    expect(page.locator(".flash.warning")).to_contain_text(
        "Candidates under acme need two reviewers, and admission policy policy:open (all) of acme/ops"
    )
    expect(page.locator(".flash.warning")).to_contain_text("the two-reviewer rule wins")
    expect(page.locator("#precedence .overlap")).to_have_count(1)
    expect(page.locator("#history")).to_contain_text("the two-reviewer rule wins")
    assert violations(page) == []
