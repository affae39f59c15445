"""The learning dashboard in Chromium: a lead sets a holdout, reads the verdict, the chart and the lessons,
and sends a lesson that hurts back for a recheck with one click; axe-core finds nothing serious."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from curation.models import Entry, QueueReason
from curation.services.tokens import create_agent_token
from curation.services.usage import record_feedback, record_retrieval
from tests.factories import active, log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCOPE = "acme/billing-api"


def violations(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def run_tasks(token, *, arm, entries=(), successes=0, failures=0, prefix):
    for i, outcome in enumerate(["success"] * successes + ["failure"] * failures):
        retrieval = record_retrieval(
            token=token, scope=SCOPE, query="", task_ref=f"{prefix}-{i}", entries=list(entries), arm=arm
        )
        record_feedback(token=token, retrieval_id=retrieval.pk, outcome=outcome)


def test_a_lead_reads_the_dashboard_and_sends_a_lesson_back(live_server, page, settings):
    settings.CURATION_EVALUATION = {
        **settings.CURATION_EVALUATION,
        "LESSON_MIN_RETRIEVALS": 3,
        "RECURRING_MIN_FAILURES": 3,
    }
    lead = make_user("lena", "lead")
    token = create_agent_token(name="sim", scopes=["acme"])[0]
    harmful = active(lead, scope=SCOPE, trigger="Skip the migration check", signal="external", confidence=0.95)
    run_tasks(token, arm="holdout", successes=30, failures=30, prefix="h")
    run_tasks(token, arm="memory", successes=35, failures=5, prefix="m")
    run_tasks(token, arm="memory", entries=[harmful], successes=1, failures=3, prefix="bad")
    Entry.objects.filter(pk=harmful.pk).update(queued_at=None, queue_reason="")  # kept by a reviewer meanwhile

    log_in(page, live_server, "lena")
    page.get_by_role("link", name="Learning").click()
    expect(page.get_by_role("heading", name="Is memory helping?")).to_be_visible()
    expect(page.locator("#verdict-30")).to_contain_text("memory helps: +31.8 points")
    expect(page.locator("svg.weekly-chart circle")).to_have_count(2)  # this week, one dot per arm
    assert violations(page) == []

    hurt = page.locator("#lessons-hurt")
    expect(hurt).to_contain_text("Skip the migration check")
    hurt.get_by_role("button", name=f"Send entry #{harmful.pk} back for recheck").click()
    expect(page.locator(".flash.success")).to_contain_text(f"Entry #{harmful.pk} is back in the candidates queue")
    expect(page.locator("#lessons-hurt")).to_contain_text("in the queue")
    assert Entry.objects.get(pk=harmful.pk).queue_reason == QueueReason.RECHECK_REQUESTED

    page.get_by_role("link", name="Holdout settings").click()
    holdout = page.locator("section#holdout")
    holdout.get_by_label("Scope prefix").fill("acme/web")
    holdout.get_by_label(re.compile("Fraction")).fill("0.8")
    holdout.get_by_role("button", name="Save the holdout").click()
    expect(page.locator("#holdout-fraction-error")).to_contain_text("at most half")
    holdout.get_by_label(re.compile("Fraction")).fill("10%")
    holdout.get_by_role("button", name="Save the holdout").click()
    expect(page).to_have_url(re.compile(r"/policies/#holdout$"))
    expect(page.locator("#holdouts")).to_contain_text("acme/web")
    expect(page.locator("#holdouts")).to_contain_text("10%")
    assert violations(page) == []
