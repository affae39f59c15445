"""Every console page, checked with axe-core in Chromium: no serious or critical violation. axe-core comes
bundled in the axe-playwright-python wheel (a dev dependency): nothing to fetch at test time."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from curation import services
from curation.models import Entry
from curation.services.forgets import file_forget_request
from tests.factories import active, candidate_data, log_in, make_user, nominated

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BLOCKING = ("serious", "critical")


def violations(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in BLOCKING
    ]


def test_every_page_has_no_serious_or_critical_violation(live_server, page):
    lead = make_user("lena", "lead")
    entry = services.create_candidate(
        data=candidate_data(trigger="A lesson to check the pages with"), actor_label="agent:ci"
    )
    kept = active(lead, scope="acme/billing-api", trigger="An active lesson")
    nominated(scope="acme/billing-api/host", trigger="Rotating the billing-api webhook key")
    active(lead, scope="acme/billing-api", trigger="An active lesson to forget", content="Forget me, please.")
    forget = file_forget_request(entry_id=kept.pk, reason="The user asked", actor=lead)
    page.goto(f"{live_server.url}/accounts/login/")
    found = {"login": violations(page)}
    log_in(page, live_server, "lena")
    pages = {
        "candidates": "/review/candidates/",
        "conflicts": "/review/conflicts/",
        "consolidation": "/review/consolidation/",
        "skill promotions": "/review/skills/",
        "dashboard": "/",
        "skills": "/skills/",
        "entry": f"/entries/{entry.pk}/",
        "active entry": f"/entries/{kept.pk}/",
        "tokens": "/agents/tokens/",
        "api docs": "/api/v1/docs",
        "maintenance": "/maintenance/",
        "forget requests": "/review/forgets/",
        "forget request": f"/review/forgets/{forget.pk}/",
        "scope policies": "/policies/",
    }
    for name, path in pages.items():
        page.goto(live_server.url + path)
        expect(page.locator("main")).to_be_visible()
        found[name] = violations(page)
    page.goto(live_server.url + "/review/candidates/")
    page.get_by_role("button", name="Show a compact list").click()
    expect(page.locator(".card.line")).to_have_count(Entry.objects.filter(status="pending").count())
    found["compact list"] = violations(page)
    assert {name: v for name, v in found.items() if v} == {}


def test_skip_link_focus_ring_labels_and_announcements(live_server, page):
    make_user("rita", "reviewer")
    first = services.create_candidate(data=candidate_data(trigger="Announce my approval"), actor_label="agent:ci")
    services.create_candidate(data=candidate_data(trigger="Another one"), actor_label="agent:ci")
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/")  # a page without cards: the queue focuses its first card
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    # The focus ring: 2 px, solid, dark blue on white.
    page.goto(f"{live_server.url}/review/candidates/")
    page.get_by_label("Kind").first.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    ring = page.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineWidth, s.outlineStyle, s.outlineColor]; })()"
    )
    assert ring == ["2px", "solid", "rgb(11, 61, 145)"]
    for name in ("Minimum confidence", "Maximum confidence", "Reason to reject the selection"):
        expect(page.get_by_label(name)).to_have_count(1)
    page.locator(f"#card-{first.pk}").focus()
    page.keyboard.press("a")
    expect(page.locator("#announce")).to_have_text(re.compile(r"Approved .*Announce my approval.* 1 waiting"))
    # The next card's impact, loaded by the page on its own after the decision, does not silence it.
    with page.expect_response(re.compile(r"/impact/$")):
        page.evaluate("htmx.trigger(document.querySelector('#queue [data-background]'), 'revealed')")
    page.wait_for_timeout(100)  # its settle, and the announcement that would follow it
    expect(page.locator("#announce")).to_have_text(re.compile(r"Approved .*Announce my approval.* 1 waiting"))
    page.get_by_label("Scope").first.fill("nowhere")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#announce")).to_have_text("0 waiting")
