"""A lead resolves conflicts in real Chromium (Debian's /usr/bin/chromium, driven by Playwright)."""

import re

import pytest
from playwright.sync_api import expect

from curation import services
from curation.models import Conflict, Entry, Event, Status
from curation.services import conflicts
from tests.factories import active, candidate_data, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_lead_splits_a_conflict_by_scope_then_keeps_one_by_key(live_server, page):
    lead = make_user("lena", "lead")
    a = active(
        lead,
        scope="acme/billing-api",
        trigger="Merging a feature branch into main",
        content="Always rebase before merging.",
        conditions=[],
    )
    b = active(
        lead,
        scope="acme/billing-api",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        conditions=[],
    )
    [split_me] = conflicts.detect_conflicts_for(b)
    c = active(lead, scope="acme/web", trigger="Restarting the web worker", content="Restart the worker first.")
    d = active(
        lead,
        scope="acme/web/frontend",
        trigger="Restarting the web worker during deploys",
        content="Do not restart the worker while a deploy runs.",
    )
    [keep_me] = conflicts.detect_conflicts_for(d)

    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Conflicts").click()
    expect(page).to_have_url(re.compile(r"/review/conflicts/$"))
    expect(page.locator("#queue-count")).to_contain_text("2 open")

    card = page.locator(f"#conflict-{split_me.pk}")
    expect(card).to_have_class(re.compile("is-current"))
    expect(card.locator(".side-a")).to_contain_text("Always rebase before merging.")
    expect(card.locator(".side-b")).to_contain_text("Never rebase shared branches.")

    # s opens the split form on the first scope; a split that still overlaps is refused in place.
    page.keyboard.press("s")
    a_scope = card.locator("input[name=a_scope]")
    expect(a_scope).to_be_focused()
    a_scope.fill("acme/billing-api/host")
    card.locator("input[name=b_scope]").fill("acme/billing-api/host/ci")
    page.keyboard.press("Control+Enter")
    expect(card.locator(".field-error")).to_contain_text("Still overlapping")
    assert Conflict.objects.get(pk=split_me.pk).state == "open"

    # The form kept what was typed, and focus is back in its first field once the card settles (typing
    # before then would land wherever focus moves); narrow the second entry to a sibling scope instead.
    expect(card.locator("input[name=a_scope]")).to_have_value("acme/billing-api/host")
    expect(card.locator("input[name=a_scope]")).to_be_focused()
    card.locator("input[name=b_scope]").fill("acme/billing-api/container")
    card.locator("input[name=b_scope]").press("Control+Enter")
    expect(card).to_contain_text("split, both entries narrowed")
    expect(page.locator("#queue-count")).to_contain_text("1 open")

    # The next conflict is current: 2 keeps the right-hand entry.
    other = page.locator(f"#conflict-{keep_me.pk}")
    expect(other).to_have_class(re.compile("is-current"))
    page.keyboard.press("2")
    expect(other).to_contain_text(f"kept #{d.pk}")
    expect(page.locator("#queue-count")).to_contain_text("0 open")

    # Each resolution is on the entries' pages.
    page.goto(f"{live_server.url}/entries/{a.pk}/")
    expect(page.locator("h1")).to_contain_text("acme/billing-api/host")
    expect(page.locator(".timeline")).to_contain_text("conflict_split")
    page.goto(f"{live_server.url}/entries/{c.pk}/")
    expect(page.locator("#entry-status")).to_have_text("superseded")

    assert Entry.objects.get(pk=b.pk).scope == "acme/billing-api/container"
    assert {Entry.objects.get(pk=a.pk).status, Entry.objects.get(pk=b.pk).status} == {Status.ACTIVE}
    assert Entry.objects.get(pk=c.pk).status == Status.SUPERSEDED
    assert Event.objects.filter(actor=lead, action__in=["conflict_split", "conflict_keep", "supersede"]).count() == 4


def test_z_takes_back_a_keep_and_a_split_says_it_cannot_be(live_server, page):
    lead = make_user("lena", "lead")
    a = active(lead, scope="acme/web", trigger="Restarting the web worker", content="Restart the worker first.")
    b = active(
        lead,
        scope="acme/web/frontend",
        trigger="Restarting the web worker during deploys",
        content="Do not restart the worker while a deploy runs.",
    )
    [conflict] = conflicts.detect_conflicts_for(b)
    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Conflicts").click()
    card = page.locator(f"#conflict-{conflict.pk}")
    expect(card).to_have_class(re.compile("is-current"))

    page.keyboard.press("2")
    expect(card).to_contain_text(f"kept #{b.pk}")
    expect(page.locator("#queue-count")).to_contain_text("0 open")
    assert Entry.objects.get(pk=a.pk).status == Status.SUPERSEDED

    # z: the conflict is open again, both entries live as before, each with an undo Event.
    page.keyboard.press("z")
    expect(card).to_contain_text(f"Undone: Conflict #{conflict.pk} is back in the queue.")
    expect(page.locator("#queue-count")).to_contain_text("1 open")
    expect(card.locator("[data-key='2']")).to_be_visible()
    assert Conflict.objects.get(pk=conflict.pk).state == "open"
    assert Entry.objects.get(pk=a.pk).status == Entry.objects.get(pk=b.pk).status == Status.ACTIVE
    assert Event.objects.filter(actor=lead, action="undo").count() == 2

    # A split is not taken back: its decided card says why instead of offering Undo.
    page.keyboard.press("s")
    card.locator("input[name=a_scope]").fill("acme/web/backend")
    page.keyboard.press("Control+Enter")
    expect(card).to_contain_text("Cannot be undone: a split rewrote the entries' scopes or conditions")
    expect(card.locator("[data-action=undo]")).to_have_count(0)


def test_a_candidate_contradicting_several_lessons_is_one_card_kept_by_key_and_undone_by_z(live_server, page):
    lead = make_user("lena", "lead")
    existing = [
        active(
            lead,
            scope=f"acme/billing-api/p{i}",
            trigger="Merging a feature branch into main",
            content="Always rebase before merging.",
            conditions=[],
        )
        for i in range(4)
    ]
    new = services.create_candidate(
        data=candidate_data(
            scope="acme/billing-api",
            trigger="Merging feature branches into main",
            content="Never rebase shared branches.",
            conditions=[],
        ),
        actor_label="agent:ci",
    )
    opened = conflicts.detect_conflicts_for(new)
    assert len(opened) == 4

    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Conflicts").click()
    expect(page.locator("#queue-count")).to_contain_text("4 open")
    expect(page.locator("article.conflict-card")).to_have_count(1)  # one card, not four
    card = page.locator(f"#conflict-{opened[0].pk}")
    expect(card).to_have_class(re.compile("is-current"))
    expect(card).to_contain_text(f"#{new.pk} contradicts 4 lessons")
    expect(card.locator(".group-others li")).to_have_count(4)

    # 1 keeps the candidate over all four at once.
    page.keyboard.press("1")
    expect(card).to_contain_text("kept the lesson they share, the others superseded")
    expect(page.locator("#queue-count")).to_contain_text("0 open")
    assert Entry.objects.get(pk=new.pk).status == Status.ACTIVE
    assert {Entry.objects.get(pk=e.pk).status for e in existing} == {Status.SUPERSEDED}

    # z takes the whole card back: four conflicts open, the candidate pending, the lessons active.
    page.keyboard.press("z")
    expect(card).to_contain_text(f"Undone: Conflict #{opened[0].pk} is back in the queue.")
    expect(page.locator("#queue-count")).to_contain_text("4 open")
    expect(card.locator(".group-others li")).to_have_count(4)
    assert Entry.objects.get(pk=new.pk).status == Status.PENDING
    assert {Entry.objects.get(pk=e.pk).status for e in existing} == {Status.ACTIVE}

    # n opens "dismiss all"; Enter sends it.
    page.keyboard.press("n")
    card.locator("input[name=reason]").fill("different branches")
    card.locator("input[name=reason]").press("Enter")
    expect(card).to_contain_text("all dismissed, never raised again")
    expect(page.locator("#queue-count")).to_contain_text("0 open")
    assert set(Conflict.objects.filter(pk__in=[c.pk for c in opened]).values_list("state", flat=True)) == {"dismissed"}
