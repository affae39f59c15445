"""A lead approves a skill with 5 successful trials in real Chromium, then downloads its SKILL.md."""

import re

import pytest
import yaml
from playwright.sync_api import expect

from curation import selectors
from curation.models import Entry, Event, SkillProposal
from tests.factories import log_in, make_user, nominated, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_lead_approves_a_skill_with_five_successful_trials(live_server, page):
    make_user("lena", "lead")
    waiting = nominated(scope="acme/billing-api/host", trigger="Rotating the billing-api webhook key")
    report(waiting, ["success"] * 2, prefix="early")
    proposal = nominated()
    report(proposal, ["success"] * 5)

    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Skill promotions").click()
    expect(page).to_have_url(re.compile(r"/review/skills/$"))
    expect(page.locator("#queue-count")).to_contain_text("2 nominated")

    # The first card (nominated first) still needs trials: its approve button is disabled, and says why.
    first = page.locator(f"#skill-{waiting.pk}")
    expect(first).to_have_class(re.compile("is-current"))
    expect(first.locator(".trial-progress")).to_contain_text("2 of 5 trials succeeded")
    expect(first.locator("[data-action=approve]")).to_be_disabled()
    expect(first.locator(".blockers")).to_contain_text("3 more needed")
    page.keyboard.press("a")  # nothing happens on a disabled button
    expect(first.locator("[data-action=approve]")).to_be_disabled()

    # j moves to the ready one; a approves it.
    page.keyboard.press("j")
    card = page.locator(f"#skill-{proposal.pk}")
    expect(card).to_have_class(re.compile("is-current"))
    expect(card.locator(".trial-progress")).to_contain_text("5 of 5 trials succeeded")
    expect(card.locator(".sources")).to_contain_text(f"#{proposal.nominated_entry_id}")
    expect(card.locator("[data-action=approve]")).to_be_enabled()
    page.keyboard.press("a")
    expect(card).to_contain_text(f"Skill {proposal.slug}: approved and published")
    expect(page.locator("#queue-count")).to_contain_text("1 nominated")

    # The skill is listed, and its SKILL.md downloads with the front matter coding agents read.
    page.get_by_role("link", name="Skills", exact=True).click()
    listed = page.locator(f"#skill-{proposal.slug}")
    expect(listed).to_contain_text("5 of 5 trials succeeded")
    with page.expect_download() as download:
        listed.get_by_role("link", name="Download SKILL.md").click()
    assert download.value.suggested_filename == f"{proposal.slug}-SKILL.md"  # several downloads never collide
    text = open(download.value.path(), encoding="utf-8").read()
    assert yaml.safe_load(text.split("---\n")[1]) == {"name": proposal.slug, "description": proposal.description}
    assert "## Rollback" in text and "approved by lena" in text

    # The decision is on the entry's history, and the entry left retrieval.
    page.goto(f"{live_server.url}/entries/{proposal.nominated_entry_id}/")
    expect(page.locator(".timeline")).to_contain_text("skill_approved")
    assert SkillProposal.objects.get(pk=proposal.pk).status == "approved"
    assert SkillProposal.objects.get(pk=waiting.pk).status == "nominated"
    assert Event.objects.filter(action="skill_approved", actor__username="lena").count() == 1
    entry = Entry.objects.get(pk=proposal.nominated_entry_id)
    ranked = selectors.retrieve_memory(
        scopes=["acme/billing-api/container"], q="running migrations", k=5, min_confidence=0.5
    )
    assert entry.pk not in [r.entry.pk for r in ranked]
