"""The console's layout at 1280 and 390 px in real Chromium, measured: what is on one row stays on one row,
figures never wrap inside a word, and a queue opens where its count is."""

import pytest
from django.utils import timezone

from curation import services
from curation.models import TaskRun
from tests.factories import candidate_data, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# How many line boxes an element's text takes: an inline element has one client rect per line.
LINES = "(el) => { const r = document.createRange(); r.selectNodeContents(el); return r.getClientRects().length; }"


def candidates(count, scope="acme/billing-api"):
    for i in range(count):
        services.create_candidate(
            data=candidate_data(scope=scope, trigger=f"Lesson number {i} about {scope}"), actor_label="agent:ci"
        )


def test_at_1280_px_a_leads_header_is_two_rows_and_the_pages_one_line(live_server, page):
    make_user("lena", "lead")
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_server, "lena")
    page.goto(live_server.url + "/")
    brand = page.locator(".topbar .brand").bounding_box()
    who = page.locator(".topbar .who").bounding_box()
    assert abs(who["y"] - brand["y"]) < 4  # who is signed in sits beside the name, not on a row of its own
    tops = {round(box["y"]) for box in (a.bounding_box() for a in page.locator(".topbar nav a").all())}
    assert len(tops) == 1, tops  # every page's link on one line
    assert page.locator(".topbar").bounding_box()["height"] < 80


def test_at_1280_px_the_confidence_bounds_sit_side_by_side(live_server, page):
    make_user("rita", "reviewer")
    candidates(2)
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_server, "rita")
    filters = page.locator("#queue-filters")
    scope = filters.locator("label", has_text="Scope").first.bounding_box()
    confidence = filters.locator("label", has_text="Confidence").first.bounding_box()
    assert confidence["height"] <= scope["height"] + 4  # one row tall, like its neighbours
    low, high = (filters.locator(f"input[name=f-{f}_confidence]").bounding_box() for f in ("min", "max"))
    assert abs(low["y"] - high["y"]) < 2 and high["x"] > low["x"]


def test_at_390_px_a_queue_opens_at_its_count_with_the_first_card_current(live_server, page):
    make_user("rita", "reviewer")
    candidates(3)
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "rita")
    first = page.locator("#queue [data-card]").first
    first.wait_for()
    assert "is-current" in first.get_attribute("class")
    assert page.evaluate("window.scrollY") == 0
    count = page.locator("#queue-count").bounding_box()
    assert 0 <= count["y"] and count["y"] + count["height"] <= 844
    page.keyboard.press("j")  # moving on scrolls to the card
    assert "is-current" in page.locator("#queue [data-card]").nth(1).get_attribute("class")


def test_at_390_px_the_dashboards_task_table_wraps_between_words_only(live_server, page):
    make_user("lena", "lead")
    now = timezone.now()
    for task in ("archive", "consolidation", "skill_nomination", "review_due"):
        TaskRun.objects.create(
            task=task, state="succeeded", as_of=now, started_at=now, finished_at=now, rows_examined=28, rows_changed=1
        )
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "lena")
    page.goto(live_server.url + "/")
    table = page.locator(".panel", has_text="Background tasks").locator("table")
    assert table.evaluate("(t) => t.scrollWidth <= t.clientWidth")  # every column in view
    for badge in table.locator(".badge").all():
        assert badge.evaluate(LINES) == 1, badge.inner_text()  # "succeeded", not "succee / ded"
    for header in table.locator("th:visible").all():
        assert header.evaluate(LINES) == 1, header.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
