"""A reviewer asks to forget a lesson from its page; a lead approves the request in the Forget queue in real
Chromium, ticking a near duplicate, and sees both forgotten and a version published without them."""

import re

import pytest
from playwright.sync_api import expect

from curation.models import Entry, ForgetRequest, Status
from curation.selectors.releases import published_number, released_entries
from tests.factories import active, log_in, make_user, publish_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_approves_a_forget_request_in_the_forget_queue(live_server, page):
    make_user("rita", "reviewer")
    lena = make_user("lena", "lead")
    lesson = active(
        lena,
        scope="acme/payroll",
        trigger="Deploying the payroll service on Fridays",
        content="Always page Marguerite Okonkwo before deploying payroll, she holds the rollback keys.",
    )
    duplicate = active(
        lena,
        scope="acme/payroll",
        trigger="Before a payroll deploy on a Friday",
        content="Page Marguerite Okonkwo first; she holds the payroll rollback keys.",
    )
    publish_pending()

    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/entries/{lesson.pk}/")
    page.get_by_label("Reason").fill("The user asked us to forget their colleague's name")
    page.get_by_role("button", name="Request forget").click()
    expect(page.locator(".messages")).to_contain_text("filed: a lead decides in the Forget queue")
    request = ForgetRequest.objects.get()
    page.get_by_role("button", name="Log out").click()

    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Forget", exact=True).click()
    expect(page).to_have_url(re.compile(r"/review/forgets/$"))
    expect(page.locator("#queue-count")).to_contain_text("1 open")
    card = page.locator(f"#forget-{request.pk}")
    expect(card).to_contain_text("The user asked us to forget their colleague's name")
    card.locator(f"input[name=duplicates][value='{duplicate.pk}']").check()
    card.get_by_role("button", name=re.compile("Approve: forget")).click()
    expect(card).to_contain_text(f"Request #{request.pk}: approved: forgotten")
    expect(card).to_contain_text(f"#{duplicate.pk} retired and purged")
    expect(card).to_contain_text("published without them")
    expect(page.locator("#queue-count")).to_contain_text("0 open")

    page.goto(f"{live_server.url}/entries/{lesson.pk}/")
    expect(page.locator("#entry-status")).to_have_text("retired")
    expect(page.locator("main")).to_contain_text(f"[forgotten: request #{request.pk}]")
    expect(page.locator("main")).not_to_contain_text("Okonkwo")
    assert set(Entry.objects.filter(pk__in=[lesson.pk, duplicate.pk]).values_list("status", flat=True)) == {
        Status.RETIRED
    }
    assert not released_entries(published_number()).filter(entry_id__in=[lesson.pk, duplicate.pk]).exists()
