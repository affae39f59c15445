"""Issue 14 in real Chromium: the count follows the filters, one current card, undo, bulk by keyboard,
compact mode and progress, filters that persist, the 390 px navigation and accessibility."""

import re

import pytest
from playwright.sync_api import expect

from curation import services
from curation.models import Entry, Status
from tests.factories import candidate_data, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def lessons(count, **fields):
    return [
        services.create_candidate(
            data=candidate_data(trigger=f"Lesson number {i} {fields.get('scope', '')}", **fields),
            actor_label="agent:ci",
        )
        for i in range(count)
    ]


def test_the_count_is_the_count_of_what_the_filters_select(live_server, page):
    make_user("rita", "reviewer")
    web = lessons(3, scope="acme/web")
    lessons(2, scope="acme/billing-api")
    log_in(page, live_server, "rita")
    expect(page.locator("#queue-count")).to_contain_text("5 waiting")

    # Filtering through htmx swaps the list and the count with it.
    page.get_by_label("Scope").first.fill("acme/web")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#queue [data-card]")).to_have_count(3)
    expect(page.locator("#queue-count")).to_contain_text("3 waiting")

    # Rejecting with a reason while filtered: the reason is not a filter, the count stays filtered.
    page.locator(f"#card-{web[0].pk}").click()
    page.keyboard.press("r")
    page.locator(f"#card-{web[0].pk} input[name=reason]").fill("too vague")
    page.keyboard.press("Enter")
    expect(page.locator(f"#card-{web[0].pk}")).to_contain_text("Rejected")
    expect(page.locator("#queue-count")).to_contain_text("2 waiting")

    # Edit, then approve, moving the lesson out of the filtered scope: one fewer under these filters.
    expect(page.locator(f"#card-{web[1].pk}")).to_have_class(re.compile("is-current"))
    page.keyboard.press("e")
    page.locator(f"#card-{web[1].pk} input[name=scope]").fill("acme/billing-api")
    page.keyboard.press("Control+Enter")
    expect(page.locator(f"#card-{web[1].pk}")).to_contain_text("Edited and approved")
    expect(page.locator("#queue-count")).to_contain_text("1 waiting")


def test_focus_moves_the_current_card_and_keys_act_on_it(live_server, page):
    make_user("rita", "reviewer")
    first, second = lessons(2)
    log_in(page, live_server, "rita")
    expect(page.locator(f"#card-{first.pk}")).to_have_class(re.compile("is-current"))

    # Tab onto the second card's Approve button: the second card is now the current one.
    page.locator(f"#card-{second.pk} [data-action=approve]").focus()
    expect(page.locator(f"#card-{second.pk}")).to_have_class(re.compile("is-current"))
    expect(page.locator(f"#card-{first.pk}")).not_to_have_class(re.compile("is-current"))
    page.locator(f"#card-{second.pk}").focus()  # leave the button: a key, not Enter on the button
    page.keyboard.press("a")
    expect(page.locator(f"#card-{second.pk}")).to_contain_text("Approved")
    assert Entry.objects.get(pk=second.pk).status == Status.ACTIVE
    assert Entry.objects.get(pk=first.pk).status == Status.PENDING


def test_undo_a_decision_with_the_button_or_z(live_server, page):
    make_user("rita", "reviewer")
    first, second = lessons(2)
    log_in(page, live_server, "rita")
    page.keyboard.press("a")
    expect(page.locator(f"#card-{first.pk}")).to_contain_text("Approved")
    expect(page.locator("#queue-count")).to_contain_text("1 waiting")
    # z takes the last decision back: the card is open again, current, and counted.
    page.keyboard.press("z")
    expect(page.locator(f"#card-{first.pk}")).to_contain_text("is back in the queue")
    expect(page.locator(f"#card-{first.pk} [data-action=approve]")).to_be_visible()
    settled(page.locator(f"#card-{first.pk}"))
    expect(page.locator(f"#card-{first.pk}")).to_have_class(re.compile("is-current"))
    expect(page.locator("#queue-count")).to_contain_text("2 waiting")
    assert Entry.objects.get(pk=first.pk).status == Status.PENDING

    # The decided card's Undo button does the same.
    page.locator(f"#card-{second.pk} [data-action=defer]").click()
    expect(page.locator(f"#card-{second.pk}")).to_contain_text("Deferred")
    page.locator(f"#card-{second.pk} [data-action=undo]").click()
    expect(page.locator(f"#card-{second.pk}")).to_contain_text("is back in the queue")
    assert Entry.objects.get(pk=second.pk).version == 3


def test_bulk_by_keyboard_answers_in_place(live_server, page):
    make_user("rita", "reviewer")
    other = make_user("rob", "reviewer")
    cards = lessons(5)
    log_in(page, live_server, "rita")
    # x selects the current card, Shift+j extends the selection down.
    page.keyboard.press("x")
    page.keyboard.press("Shift+J")
    page.keyboard.press("Shift+J")
    expect(page.locator("[data-selected-count]")).to_have_text("3")
    services.approve_candidate(cards[1].pk, actor=other, expected_version=1)  # someone else got there first

    page.keyboard.press("Shift+A")
    result = page.locator("#bulk-result")
    expect(result).to_contain_text("Approved 2 of 3.")
    expect(result).to_contain_text(f"#{cards[0].pk}: approved")
    expect(result).to_contain_text(f"#{cards[1].pk}: not changed")
    expect(page.locator(f"#card-{cards[0].pk}")).to_contain_text("Approved")
    expect(page.locator(f"#card-{cards[2].pk}")).to_contain_text("Approved")
    expect(page.locator("#queue-count")).to_contain_text("2 waiting")
    assert page.url.endswith("/review/candidates/")  # no reload: the page is the same one

    # R asks the reason; Enter rejects the selection.
    page.locator(f"#card-{cards[3].pk}").click()
    page.keyboard.press("x")
    page.keyboard.press("Shift+J")
    page.keyboard.press("Shift+R")
    expect(page.get_by_label("Reason to reject the selection")).to_be_focused()
    page.keyboard.type("duplicates of an older lesson")
    page.keyboard.press("Enter")
    expect(result).to_contain_text("Rejected 2 of 2.")
    expect(page.locator(f"#card-{cards[4].pk}")).to_contain_text("Rejected")
    expect(page.locator("#queue-count")).to_contain_text("0 waiting")
    # Rejected as approved: each decided card stays as its stub, with the entry's link and its own Undo.
    for card, verb in ((cards[0], "Approved"), (cards[2], "Approved"), (cards[3], "Rejected"), (cards[4], "Rejected")):
        stub = page.locator(f"#card-{card.pk}")
        expect(stub).to_contain_text(f"{verb} #{card.pk}")
        expect(stub.get_by_role("link", name=f"#{card.pk}")).to_have_attribute("href", f"/entries/{card.pk}/")
        expect(stub.locator("[data-action=undo]")).to_be_visible()
    assert Entry.objects.filter(status=Status.REJECTED).count() == 2


def test_z_right_after_a_bulk_action_takes_the_whole_bulk_back(live_server, page):
    """Two cards rejected by bulk: z restores both (each with its own undo Event), not only the last."""
    make_user("rita", "reviewer")
    cards = lessons(3)
    log_in(page, live_server, "rita")
    page.keyboard.press("x")
    page.keyboard.press("Shift+J")
    page.keyboard.press("Shift+R")
    page.keyboard.type("duplicates of an older lesson")
    page.keyboard.press("Enter")
    result = page.locator("#bulk-result")
    expect(result).to_contain_text("Rejected 2 of 2.")
    expect(result.get_by_role("button", name="Undo all")).to_be_visible()
    expect(page.locator("#queue-count")).to_contain_text("1 waiting")

    page.keyboard.press("z")
    expect(result).to_contain_text("Undone 2 of 2.")
    for card in cards[:2]:
        expect(page.locator(f"#card-{card.pk}")).to_contain_text(f"Undone: #{card.pk} is back in the queue.")
        expect(page.locator(f"#card-{card.pk} [data-action=approve]")).to_be_visible()
    expect(page.locator("#queue-count")).to_contain_text("3 waiting")
    assert Entry.objects.filter(status=Status.PENDING).count() == 3
    assert [e.events.latest("id").action for e in cards[:2]] == ["undo", "undo"]

    # The reopened cards are open like any other: the current one is decided with a key again.
    current = page.locator("#queue .is-current")
    settled(current)
    current.focus()
    page.keyboard.press("a")
    expect(page.locator("#queue-count")).to_contain_text("2 waiting")


def settled(card):
    """htmx binds a swapped-in card's buttons when the swap settles; a key pressed before that would post the
    form without htmx (a full page load, as with scripts off)."""
    expect(card).not_to_have_class(re.compile(r"htmx-(added|settling|swapping)"))


def test_compact_list_progress_and_the_end_state(live_server, page):
    make_user("rita", "reviewer")
    first, second = lessons(2, scope="acme/web")
    log_in(page, live_server, "rita")
    page.get_by_role("button", name="Show a compact list").click()
    line = page.locator(f"#card-{first.pk}")
    expect(line).to_have_class(re.compile(r"\bline\b"))
    expect(line).to_contain_text("acme/web")
    expect(line).to_contain_text("Lesson number 0")
    box = line.bounding_box()
    assert box and box["height"] < 60, box  # one line per lesson
    expect(line.locator("[data-action=approve]")).to_have_count(0)

    # The mode is remembered: a new visit is compact too.
    page.goto(f"{live_server.url}/review/candidates/")
    expect(page.locator(f"#card-{first.pk}")).to_have_class(re.compile(r"\bline\b"))

    # Enter expands the current line in place into the full card; then a decides as usual.
    expect(page.locator(f"#card-{first.pk}")).to_have_class(re.compile("is-current"))
    page.keyboard.press("Enter")
    expect(page.locator(f"#card-{first.pk} [data-action=approve]")).to_be_visible()
    expect(page.locator(f"#card-{first.pk}")).to_contain_text("Evidence")
    page.locator(f"#card-{first.pk}").focus()
    page.keyboard.press("a")
    expect(page.locator("#queue-progress")).to_contain_text("1 decided this session · 1 left under these filters")
    expect(page.locator("#queue-end")).to_be_hidden()

    # Space expands too; the last decision on the page shows the end state instead of a list of grey cards.
    expect(page.locator(f"#card-{second.pk}")).to_have_class(re.compile("is-current"))
    page.keyboard.press(" ")
    expect(page.locator(f"#card-{second.pk} [data-action=approve]")).to_be_visible()
    settled(page.locator(f"#card-{second.pk}"))
    page.locator(f"#card-{second.pk}").focus()
    page.keyboard.press("a")
    expect(page.locator("#queue-end")).to_be_visible()
    expect(page.locator("#queue-end")).to_contain_text("All done")
    expect(page.locator("#queue-progress")).to_contain_text("2 decided this session · 0 left")

    page.get_by_role("button", name="Show full cards").click()
    expect(page.locator(".card.line")).to_have_count(0)


def test_filters_and_position_persist(live_server, page):
    make_user("rita", "reviewer")
    web = lessons(3, scope="acme/web")
    lessons(1, scope="acme/billing-api")
    log_in(page, live_server, "rita")
    page.get_by_label("Scope").first.fill("acme/web")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"f-scope=acme%2Fweb"))

    # Leave for the dashboard and come back: the filters are in the URL again, and applied.
    page.get_by_role("link", name="Dashboard").click()
    page.get_by_role("link", name="Candidates", exact=True).click()
    expect(page).to_have_url(re.compile(r"f-scope=acme%2Fweb"))
    expect(page.get_by_label("Scope").first).to_have_value("acme/web")
    expect(page.locator("#queue-count")).to_contain_text("3 waiting")

    # o opens the current card's entry; Back returns to the same card.
    page.locator(f"#card-{web[2].pk}").click()
    page.keyboard.press("o")
    expect(page).to_have_url(re.compile(rf"/entries/{web[2].pk}/$"))
    page.go_back()
    expect(page.locator(f"#card-{web[2].pk}")).to_have_class(re.compile("is-current"))

    # Clear forgets them.
    page.get_by_role("link", name="Clear").click()
    expect(page.locator("#queue-count")).to_contain_text("4 waiting")
    page.goto(f"{live_server.url}/review/candidates/")
    expect(page.locator("#queue-count")).to_contain_text("4 waiting")


@pytest.mark.parametrize(
    "path", ["/", "/review/candidates/", "/review/conflicts/", "/skills/", "/agents/tokens/", "/maintenance/"]
)
def test_at_390_px_the_navigation_wraps_and_nothing_leaves_the_screen(live_server, page, path):
    make_user("lena", "lead")
    lessons(2, scope="acme/billing-api/container/a-rather-long-scope-name-that-could-push-the-page-wide")
    log_in(page, live_server, "lena")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + path)
    for link in ("Dashboard", "Candidates", "Maintenance"):
        box = page.locator(".topbar nav").get_by_role("link", name=link, exact=True).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (link, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
