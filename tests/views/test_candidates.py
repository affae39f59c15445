"""The candidates queue as each role sees it, through the real URL, middleware and templates."""

import datetime
import html
import json
import re

import pytest
from django.contrib import admin
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from curation import selectors, services
from curation.rules import clock
from curation.models import Entry, Event, EventAction, SimilarEntry, Status
from curation.services.events import record_event
from curation.views.candidates import QUEUE
from tests.factories import active, client_for

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


ACTIONS = {
    "approve": {},
    "edit": {
        "scope": "acme/billing-api",
        "trigger": "Editing config in the container",
        "content": "Confirm the repo root first.",
        "boundary": "Not on the host.",
        "conditions": "config",
    },
    "reject": {"reason": "too vague"},
    "defer": {},
}
EXPECTED_STATUS = {"approve": Status.ACTIVE, "edit": Status.ACTIVE, "reject": Status.REJECTED, "defer": Status.PENDING}


def action_url(action, entry):
    return reverse(f"curation:candidate-{action}", args=[entry.pk])


def test_anonymous_users_are_sent_to_log_in(client, make_candidate):
    entry = make_candidate()
    for url in (
        reverse("curation:candidates"),
        reverse("curation:entry", args=[entry.pk]),
        action_url("approve", entry),
    ):
        response = client.post(url) if "approve" in url else client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING


@pytest.mark.parametrize("role", ["reviewer", "lead"])
@pytest.mark.parametrize("action", list(ACTIONS))
def test_reviewers_and_leads_decide(request, make_candidate, role, action):
    user = request.getfixturevalue(role)
    entry = make_candidate()
    response = client_for(user).post(action_url(action, entry), {"version": entry.version, **ACTIONS[action]})
    assert response.status_code == 302 and response["Location"] == reverse("curation:candidates")
    fresh = Entry.objects.get(pk=entry.pk)
    assert fresh.status == EXPECTED_STATUS[action] and fresh.version == 2
    assert Event.objects.filter(entry=entry, actor=user).count() == 1


@pytest.mark.parametrize("role", ["auditor", "nobody"])
@pytest.mark.parametrize("action", list(ACTIONS) + ["bulk"])
def test_auditors_and_roleless_users_get_403_on_every_write(request, make_candidate, role, action):
    entry = make_candidate()
    client = client_for(request.getfixturevalue(role))
    if action == "bulk":
        response = client.post(reverse("curation:candidates-bulk"), {"action": "approve", "selected": f"{entry.pk}:1"})
    else:
        response = client.post(action_url(action, entry), {"version": 1, **ACTIONS[action]})
    assert response.status_code == 403
    assert Entry.objects.get(pk=entry.pk).version == 1


def test_auditor_reads_the_queue_without_action_buttons(make_candidate, auditor):
    make_candidate(trigger="Rotating the staging TLS certificate")
    page = client_for(auditor).get(reverse("curation:candidates")).content.decode()
    assert "Rotating the staging TLS certificate" in page
    assert "Approve" not in page and "bulk-form" not in page


def test_roleless_user_cannot_read(nobody, make_candidate):
    assert client_for(nobody).get(reverse("curation:candidates")).status_code == 403
    assert client_for(nobody).get(reverse("curation:entry", args=[make_candidate().pk])).status_code == 403


@pytest.mark.parametrize("action", list(ACTIONS))
def test_scoped_reviewer_gets_404_outside_scope(scoped_reviewer, make_candidate, action):
    outside = make_candidate(scope="acme/web", trigger="Deploying the web frontend")
    client = client_for(scoped_reviewer)
    assert client.post(action_url(action, outside), {"version": 1, **ACTIONS[action]}).status_code == 404
    assert client.get(reverse("curation:entry", args=[outside.pk])).status_code == 404
    assert client.get(reverse("curation:entry-history", args=[outside.pk])).status_code == 404
    assert "Deploying the web frontend" not in client.get(reverse("curation:candidates")).content.decode()
    assert Entry.objects.get(pk=outside.pk).version == 1


def test_queue_lists_pending_oldest_first_with_card_details(reviewer, make_candidate, lead):
    active = make_candidate(
        trigger="Running migrations in the billing-api container",
        content="Run migrations with the --plan flag first and read the plan.",
    )
    services.approve_candidate(active.pk, actor=lead, expected_version=1)
    older = make_candidate(
        trigger="First in",
        evidence=[
            {"kind": "test_result", "signal": "external", "polarity": "contradicts", "excerpt": "FAILED test_config"}
        ],
    )
    make_candidate(
        trigger="Running migrations in the billing-api container again",
        content="Run migrations with the --plan flag first and read the plan carefully.",
    )
    page = client_for(reviewer).get(reverse("curation:candidates")).content.decode()
    assert page.index("First in") < page.index("container again")
    assert "FAILED test_config" in page and "contradicts" in page
    assert "Similar active entries" in page and f"#{active.pk}" in page
    assert "2 waiting" in page
    assert f'name="version" value="{older.version}"' in page


def test_filters(reviewer, make_candidate):
    make_candidate(scope="acme/web", kind="preference", signal="external", trigger="Web preference A", confidence=0.9)
    make_candidate(scope="acme/billing-api", kind="fact", signal="self", trigger="Billing fact B", confidence=0.4)
    client = client_for(reviewer)

    def shown(**params):
        page = client.get(reverse("curation:candidates"), {f"f-{k}": v for k, v in params.items()}).content.decode()
        return [t for t in ("Web preference A", "Billing fact B") if t in page]

    assert shown(scope="acme/web") == ["Web preference A"]
    assert shown(kind="fact") == ["Billing fact B"]
    assert shown(signal="external") == ["Web preference A"]
    assert shown(min_confidence="0.5") == ["Web preference A"]
    assert shown(max_confidence="0.5") == ["Billing fact B"]
    assert shown(q="billing fact") == ["Billing fact B"]
    assert shown(scope="acme") == ["Web preference A", "Billing fact B"]


def test_bad_filter_is_a_400_with_a_message(reviewer):
    response = client_for(reviewer).get(reverse("curation:candidates"), {"f-min_confidence": "lots", "after": "x"})
    assert response.status_code == 400
    assert "a number from 0 to 1" in response.content.decode()
    response = client_for(reviewer).get(reverse("curation:candidates"), {"after": "garbage"})
    assert response.status_code == 400 and "page link is broken" in response.content.decode()


def test_keyset_pagination_walks_every_entry_once(reviewer, make_candidate, settings):
    settings.CURATION = {**settings.CURATION, "QUEUE_PAGE_SIZE": 3}
    made = [make_candidate(trigger=f"Lesson number {i:02d}") for i in range(8)]
    client, url, seen = client_for(reviewer), reverse("curation:candidates"), []
    while url:
        response = client.get(url)
        page = response.context["page"]
        seen += [e.pk for e in page.items]
        url = reverse("curation:candidates") + f"?after={page.next_cursor}" if page.next_cursor else None
    assert seen == [e.pk for e in made]


def test_htmx_approve_returns_decided_card_and_count(reviewer, make_candidate):
    entry, _other = make_candidate(), make_candidate(trigger="Another trigger waiting in the queue")
    response = client_for(reviewer).post(action_url("approve", entry), {"version": 1}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert f'id="card-{entry.pk}"' in body and "Approved" in body
    assert 'id="queue-count"' in body and 'hx-swap-oob="true"' in body and "1 waiting" in body


def test_htmx_count_respects_the_filters_the_action_carries(reviewer, make_candidate):
    entry = make_candidate(scope="acme/web")
    make_candidate(scope="acme/web", trigger="Another trigger waiting in the web queue")
    make_candidate(scope="acme/billing-api")
    body = (
        client_for(reviewer)
        .post(action_url("approve", entry), {"version": 1, "f-scope": "acme/web"}, **HTMX)
        .content.decode()
    )
    assert "1 waiting" in body


def test_an_actions_own_fields_never_read_as_filters(reviewer, make_candidate):
    """A reject's `reason` and an edit's `scope` sit next to the filters the action carries (hx-include):
    the count is still the count of what the filters select."""
    web = [make_candidate(scope="acme/web", trigger=f"Web lesson number {i}") for i in range(3)]
    make_candidate(scope="acme/billing-api")
    client = client_for(reviewer)
    filters = {"f-scope": "acme/web", "f-reason": "", "f-kind": ""}
    body = client.post(action_url("reject", web[0]), {"version": 1, "reason": "too vague", **filters}, **HTMX)
    assert "2 waiting" in body.content.decode()
    edit = {**ACTIONS["edit"], "scope": "acme/billing-api/container"}
    body = client.post(action_url("edit", web[1]), {"version": 1, **edit, **filters}, **HTMX).content.decode()
    assert "Edited and approved" in body and "1 waiting" in body


def test_filtering_with_htmx_updates_the_count(reviewer, make_candidate):
    make_candidate(scope="acme/web")
    make_candidate(scope="acme/billing-api")
    fragment = (
        client_for(reviewer)
        .get(reverse("curation:candidates"), {"f-scope": "acme/web"}, HTTP_HX_TARGET="queue", **HTMX)
        .content.decode()
    )
    assert fragment.lstrip().startswith('<section id="queue"')
    assert '<span id="queue-count" class="count" hx-swap-oob="true">1 waiting' in fragment


def test_stale_decision_shows_conflict_inside_the_card(reviewer, second_reviewer, make_candidate):
    entry = make_candidate()
    services.reject_candidate(entry.pk, actor=second_reviewer, expected_version=1, reason="duplicate")
    for extra in (HTMX, {}):
        response = client_for(reviewer).post(action_url("approve", entry), {"version": 1}, **extra)
        body = response.content.decode()
        assert response.status_code == 409
        assert f'id="card-{entry.pk}"' in body and "changed since you loaded it" in body
        assert "rob" in body and "duplicate" in body and "rejected" in body
    assert Entry.objects.get(pk=entry.pk).status == Status.REJECTED


@pytest.mark.parametrize(
    "action, data, field, message",
    [
        ("reject", {"reason": ""}, "reason", "Say why it is rejected"),
        ("edit", {"scope": "acme/Billing", "trigger": "t", "content": "c"}, "scope", "Illegal scope segment"),
        ("edit", {"scope": "acme/web", "trigger": "", "content": "c"}, "trigger", "This field is required."),
        ("edit", {"scope": "acme/web", "trigger": "t", "content": ""}, "content", "This field is required."),
    ],
)
def test_bad_input_gets_422_with_the_message_in_the_card(reviewer, make_candidate, action, data, field, message):
    entry = make_candidate()
    for extra in (HTMX, {}):
        response = client_for(reviewer).post(action_url(action, entry), {"version": 1, **data}, **extra)
        assert response.status_code == 422
        assert message in response.content.decode()
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.version, fresh.scope) == (Status.PENDING, 1, "acme/billing-api/container")
    assert Event.objects.filter(entry=entry).count() == 1


def test_missing_version_is_a_422(reviewer, make_candidate):
    entry = make_candidate()
    response = client_for(reviewer).post(action_url("approve", entry), {}, **HTMX)
    assert response.status_code == 422 and "missing the entry&#x27;s version" in response.content.decode()


def test_csrf_is_enforced(reviewer, make_candidate):
    entry = make_candidate()
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(action_url("approve", entry), {"version": 1}).status_code == 403
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING


def test_bulk_approve_and_reject(reviewer, second_reviewer, make_candidate):
    a, b, c = (make_candidate(trigger=f"Editing config files, case {i}") for i in "abc")
    services.approve_candidate(c.pk, actor=second_reviewer, expected_version=1)
    client = client_for(reviewer)
    response = client.post(
        reverse("curation:candidates-bulk"), {"action": "reject", "reason": "", "selected": [f"{a.pk}:1"]}
    )
    assert response.status_code == 422 and "Say why they are rejected" in response.content.decode()
    response = client.post(
        reverse("curation:candidates-bulk"),
        {"action": "approve", "selected": [f"{a.pk}:1", f"{b.pk}:1", f"{c.pk}:1"]},
        follow=True,
    )
    body = response.content.decode()
    assert "Approved 2 of 3." in body and f"#{c.pk}" in body
    assert Entry.objects.get(pk=a.pk).status == Entry.objects.get(pk=b.pk).status == Status.ACTIVE
    response = client.post(reverse("curation:candidates-bulk"), {"action": "approve"})
    assert response.status_code == 422 and "Select at least one card" in response.content.decode()
    d, e = (make_candidate(trigger=f"Editing config files, case {i}") for i in "de")
    body = client.post(
        reverse("curation:candidates-bulk"),
        {"action": "reject", "reason": "too vague", "selected": [f"{d.pk}:1", f"{e.pk}:1"]},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert f"#{d.pk}</a>: rejected" in body and "rejectd" not in body


def _queue_queries(django_assert_max_num_queries, client):

    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("curation:candidates"))
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_queue_query_count_does_not_grow_with_the_queue(reviewer, lead, make_candidate, django_assert_max_num_queries):
    active = make_candidate(trigger="Shared trigger words for similarity", content="Shared content words here")
    services.approve_candidate(active.pk, actor=lead, expected_version=1)

    def fill(start, n):
        for i in range(start, start + n):
            make_candidate(
                trigger=f"Shared trigger words for similarity {i}",
                content="Shared content words here",
                evidence=[{"kind": "tool_output", "signal": "self", "excerpt": f"log {i}"}],
            )

    client = client_for(reviewer)
    fill(0, 10)
    with_10 = _queue_queries(django_assert_max_num_queries, client)
    fill(10, 190)
    with_200 = _queue_queries(django_assert_max_num_queries, client)
    assert with_10 == with_200 <= 12


def test_entry_page_and_history_export(auditor, reviewer, make_candidate):
    old = make_candidate(trigger="Old way of running migrations")
    services.approve_candidate(old.pk, actor=reviewer, expected_version=1)
    new = make_candidate(trigger="New way of running migrations")
    Entry.objects.filter(pk=new.pk).update(supersedes=old)
    services.edit_and_approve(
        new.pk,
        actor=reviewer,
        expected_version=1,
        changes={"scope": "acme/billing-api"},
        reason="it holds for the whole service",
    )
    client = client_for(auditor)
    page = client.get(reverse("curation:entry", args=[new.pk])).content.decode()
    assert "edit_approve" in page and "it holds for the whole service" in page
    assert "acme/billing-api/container" in page  # before → after
    assert f"#{old.pk}" in page and "Old way of running migrations" in page
    assert "Add evidence" not in page  # auditors read, never write
    old_page = client.get(reverse("curation:entry", args=[old.pk])).content.decode()
    assert f"#{new.pk}" in old_page and f"replaces #{old.pk}" in old_page
    response = client.get(reverse("curation:entry-history", args=[new.pk]))
    data = json.loads(response.content)
    assert response["Content-Disposition"].startswith("attachment")
    assert [t["action"] for t in data["timeline"] if t["type"] == "event"] == ["submit", "edit_approve"]
    assert data["timeline"][-1]["before"]["scope"] == "acme/billing-api/container"
    assert data["supersedes_chain"] == {"older": [old.pk], "newer": []}


def test_entry_page_add_evidence(reviewer, auditor, make_candidate):
    entry = make_candidate()
    url = reverse("curation:entry-evidence", args=[entry.pk])
    data = {"kind": "test_result", "signal": "external", "polarity": "supports", "excerpt": "CI green on main"}
    assert client_for(auditor).post(url, data).status_code == 403
    response = client_for(reviewer).post(url, {**data, "excerpt": ""})
    assert response.status_code == 422 and "This field is required." in response.content.decode()
    response = client_for(reviewer).post(url, data, follow=True)
    assert "CI green on main" in response.content.decode()


def test_nothing_is_editable_through_admin(lead):

    assert Entry not in admin.site._registry and Event not in admin.site._registry


def test_undo_from_the_decided_card(reviewer, second_reviewer, make_candidate):
    entry = make_candidate()
    client = client_for(reviewer)
    decided = client.post(action_url("reject", entry), {"version": 1, "reason": "too vague"}, **HTMX).content.decode()
    assert "Undo" in decided and f'action="/review/candidates/{entry.pk}/undo/"' in decided
    assert "0 waiting" in decided
    back = client.post(action_url("undo", entry), {"version": 2}, **HTMX)
    body = back.content.decode()
    assert back.status_code == 200 and "is back in the queue" in body and 'data-action="approve"' in body
    assert "1 waiting" in body
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING

    services.approve_candidate(entry.pk, actor=second_reviewer, expected_version=3)
    refused = client.post(action_url("undo", entry), {"version": 3}, **HTMX)
    assert refused.status_code == 409 and "changed since you loaded it" in refused.content.decode()
    assert client_for(second_reviewer).post(action_url("undo", entry), {"version": 4}).status_code == 302
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING


def test_bulk_with_htmx_answers_in_place(reviewer, make_candidate):
    a, b = make_candidate(), make_candidate(trigger="A second lesson in the queue")
    client = client_for(reviewer)
    url = reverse("curation:candidates-bulk")
    body = client.post(url, {"action": "approve", "selected": [f"{a.pk}:1", f"{b.pk}:1"]}, **HTMX).content.decode()
    assert "Approved 2 of 2." in body and f"#{b.pk}</a>: approved" in body
    assert body.count('hx-swap-oob="true"') == 5  # two decided cards, the count, the progress, the end state
    assert f'id="card-{a.pk}"' in body and "Undo" in body and "0 waiting" in body
    refused = client.post(url, {"action": "reject", "reason": "", "selected": [f"{a.pk}:2"]}, **HTMX)
    assert refused.status_code == 422 and "Say why they are rejected." in refused.content.decode()
    assert Entry.objects.get(pk=a.pk).status == Status.ACTIVE


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_a_bulk_decision_leaves_each_card_its_decided_stub(reviewer, make_candidate, action):
    """Bulk reject as bulk approve: each decided card becomes the decided stub a single decision leaves, with
    the entry's link and its own Undo, which comes back to the queue with its filters."""
    a, b = make_candidate(), make_candidate(trigger="A second lesson in the queue")
    body = (
        client_for(reviewer)
        .post(
            reverse("curation:candidates-bulk"),
            {
                "action": action,
                "reason": "too vague",
                "selected": [f"{a.pk}:1", f"{b.pk}:1"],
                "next": "/review/candidates/?f-scope=acme",
            },
            **HTMX,
        )
        .content.decode()
    )
    stubs = dict(re.findall(r'<article class="card decided" id="card-(\d+)"(.*?)</article>', body, re.S))
    assert set(stubs) == {str(a.pk), str(b.pk)}
    for entry in (a, b):
        stub = stubs[str(entry.pk)]
        assert (
            'hx-swap-oob="true"' in stub
            and {"approve": "<strong>Approved", "reject": "<strong>Rejected"}[action] in stub
        )
        assert f'<a href="{reverse("curation:entry", args=[entry.pk])}">#{entry.pk}</a>' in stub
        assert f'action="{action_url("undo", entry)}"' in stub and 'name="version" value="2"' in stub
        assert 'name="next" value="/review/candidates/?f-scope=acme"' in stub


def test_undo_all_takes_a_bulk_action_back(reviewer, second_reviewer, make_candidate):
    """The bulk's answer offers "Undo all" for what it decided; the undo reopens each card in place, says
    what was not undone (changed since), and counts them waiting again."""
    a, b, c = (make_candidate(trigger=f"Bulk lesson {i}") for i in "abc")
    client = client_for(reviewer)
    selected = [f"{e.pk}:1" for e in (a, b, c)]
    body = client.post(
        reverse("curation:candidates-bulk"), {"action": "reject", "reason": "dupes", "selected": selected}, **HTMX
    ).content.decode()
    undo_all = re.search(r'<form[^>]*data-undo-all>(.*?)</form>', body, re.S)
    assert undo_all and "Undo all" in undo_all.group(1)
    assert re.findall(r'name="selected" value="([\d:]+)"', undo_all.group(1)) == [f"{e.pk}:2" for e in (a, b, c)]
    assert f'action="{reverse("curation:candidates-bulk-undo")}"' in body
    client.post(action_url("undo", c), {"version": 2})  # c taken back on its own first

    url = reverse("curation:candidates-bulk-undo")
    body = client.post(url, {"selected": [f"{e.pk}:2" for e in (a, b, c)]}, **HTMX).content.decode()
    assert "Undone 2 of 3." in body and f"#{c.pk}</a>: not undone, already undone" in body
    for entry in (a, b):
        assert re.search(
            rf'<article class="card" id="card-{entry.pk}" data-card tabindex="-1" hx-swap-oob="true"', body
        )
        assert f"Undone: #{entry.pk} is back in the queue." in body
        assert Entry.objects.get(pk=entry.pk).status == Status.PENDING
    assert body.count('id="queue-count"') == 1 and "3 waiting" in body and "data-undo-all" not in body
    assert Event.objects.filter(action="undo", actor=reviewer).count() == 3

    # Without htmx: back to the queue, with what happened; a malformed selection is a 422, never a 500.
    services.bulk_decide([(a.pk, 3)], actor=reviewer, action="approve")
    response = client.post(url, {"selected": [f"{a.pk}:4", f"{b.pk}:2"]}, follow=True)
    page = response.content.decode()
    assert "Undone 1 of 2. Not undone: " in page and Entry.objects.get(pk=a.pk).status == Status.PENDING
    assert client.post(url, {"selected": "x:1"}, **HTMX).status_code == 422
    assert client_for(second_reviewer).post(url, {"selected": f"{a.pk}:5"}, follow=True).status_code == 200
    assert Entry.objects.get(pk=a.pk).version == 5


def test_labels_say_what_happens(reviewer, auditor, make_candidate):
    from django.utils import timezone

    entry = make_candidate()
    client = client_for(reviewer)
    page = client.get(reverse("curation:candidates")).content.decode()
    assert "Reason queued" in page and "Why" not in page and 'placeholder="any scope"' in page
    assert ">Reject</button>" in page
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    Entry.objects.filter(pk=entry.pk).update(queued_at=timezone.now(), queue_reason="recheck_review_due", version=3)
    page = client.get(reverse("curation:candidates")).content.decode()
    assert "Retire (no longer served)</button>" in page and ">Reject</button>" not in page
    refused = client_for(auditor).post(action_url("approve", entry), {"version": 3})
    assert refused.status_code == 403
    assert "Your role does not allow you to decide on review queues" in refused.content.decode()


def _cards(html: str) -> dict[int, str]:
    """Each card of a page by its id, as markup to compare: no CSRF token (masked afresh each time) and no
    white space between tags or before a tag's closing bracket."""
    html = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1", html)
    cards = re.findall(r'(<article class="card[^"]*" id="card-(\d+)".*?</article>)', html, re.S)
    normal = lambda card: re.sub(r"\s+>", ">", re.sub(r">\s+<", "><", re.sub(r"\s+", " ", card))).strip()
    return {int(pk): normal(card) for card, pk in cards}


@pytest.mark.parametrize("role", ["reviewer", "lead", "auditor"])
def test_a_page_of_cards_shows_every_part_a_card_can_show(request, role, lead, second_reviewer, make_candidate):
    """Every part a card can show, for every role; a card on its own (card.html, read by the card's own
    selector) is the page's card to the character."""
    user = request.getfixturevalue(role)
    alike = active(lead, trigger="Editing config files inside the billing-api container, always")
    full = make_candidate(
        content="First line <b>bold</b> & \"quoted\"\nsecond line",
        conditions=["a&b", "<c>"],
        recheck_when="when the container image changes",
        evidence=[
            {"kind": "tool_output", "signal": "self", "excerpt": "x" * 450, "task_ref": "task-9"},
            {"kind": "test_result", "signal": "external", "polarity": "contradicts", "excerpt": "passes on the host"},
        ],
    )
    bare = make_candidate(
        trigger="Rotating the signing key",
        content="Rotate it on Mondays.",
        boundary="",
        conditions=[],
        kind="preference",
    )
    halfway = make_candidate(trigger="Draining the worker queue", content="Drain it before a deploy.")
    disputed = make_candidate(trigger="Pinning the base image", content="Pin it by digest.")
    Entry.objects.filter(pk=full.pk).update(flags=[{"kind": "aws_key", "detail": "1 redacted"}])
    # PostgreSQL's ranking may have linked the two at submission already, at a score of its own.
    SimilarEntry.objects.update_or_create(candidate=full, similar=alike, defaults={"score": 0.875})
    Entry.objects.filter(pk=halfway.pk).update(first_approval_by=second_reviewer)
    Entry.objects.filter(pk=disputed.pk).update(first_approval_by=second_reviewer, queue_reason="needs_lead")
    recheck = active(lead, trigger="Restarting the search cluster", content="One node at a time.", conditions=[])
    queued = clock.now() - datetime.timedelta(hours=1)
    Entry.objects.filter(pk=recheck.pk).update(queued_at=queued, queue_reason="recheck_requested")
    record_event(
        recheck,
        actor=lead,
        action=EventAction.QUEUE_RECHECK,
        at=queued,
        reason="sent back: 0/12 tasks with it succeeded <b>against</b> 70/100 & more",
    )
    # Three days old, so "3 days ago" reads the same in both renderings whenever the test runs.
    Entry.objects.update(created_at=clock.now() - datetime.timedelta(days=3, hours=1))

    page = client_for(user).get(reverse("curation:candidates"))
    built = _cards(page.content.decode())
    listed = selectors.candidate_queue(user, selectors.QueueFilters()).items
    shown = {full.pk, bare.pk, halfway.pk, recheck.pk} | ({disputed.pk} if role == "lead" else set())
    assert set(built) == {item.pk for item in listed} == shown
    factory = RequestFactory().get(reverse("curation:candidates"))
    factory.user = user
    for item in listed:
        single = selectors.queue_card(user, item.pk)
        assert (
            built[item.pk]
            == _cards(render_to_string(QUEUE.card_template, {"queue": QUEUE, "item": single}, request=factory))[item.pk]
        ), item.pk
    text = page.content.decode()
    assert (
        "Why it is back: sent back: 0/12 tasks with it succeeded &lt;b&gt;against&lt;/b&gt; 70/100 &amp; more" in text
    )
    assert "⚑ aws_key: 1 redacted" in text and "<strong>contradicts</strong>" in text
    assert "First line &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;<br>second line" in text
    assert ("1 of 2 approvals · rob" in text) and ("Retire (no longer served)" in text) == (role != "auditor")
    assert f"#{alike.pk}</a>" in text and "(0.88 alike)" in text
    assert (f"Merge into #{alike.pk}" in text) == ('data-action="approve"' in text) == (role != "auditor")


@pytest.mark.parametrize("compact", [False, True])
def test_a_deep_page_costs_the_queries_of_the_first(reviewer, make_candidate, settings, compact):
    """Reached by following "Next page", the fourth page runs the same queries as the first, as full cards
    and as the compact list: keyset paging has no offset to grow."""
    settings.CURATION = {**settings.CURATION, "QUEUE_PAGE_SIZE": 3}
    for i in range(13):
        make_candidate(
            trigger=f"Lesson number {i:02d}",
            evidence=[{"kind": "tool_output", "signal": "self", "excerpt": f"log {i}"}] * (i % 3),
        )
    services.remember_queue(reviewer, "candidates", compact=compact, filters="")
    client, url = client_for(reviewer), reverse("curation:candidates")
    client.get(url)  # the session and the permissions, as a reviewer's later requests find them

    def page(url):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200
        link = re.search(r'<a href="\?([^"]*after=[^"]*)" rel="next"', response.content.decode())
        return captured, response, url.split("?")[0] + "?" + html.unescape(link.group(1)) if link else None

    first, response, url = page(url)
    assert response.content.decode().count('class="card line"' if compact else 'class="card"') == 3
    for _ in range(3):
        deep, response, url = page(url)
    assert "Lesson number 09" in response.content.decode() and url  # the fourth of five pages
    assert [q["sql"].split(" FROM ")[1].split()[0] for q in deep.captured_queries] == [
        q["sql"].split(" FROM ")[1].split()[0] for q in first.captured_queries
    ]
    # 12 / 10: one of them counts the reader's own first approvals, which wait for another reviewer.
    assert len(deep) == len(first) <= (12 if not compact else 10)
    assert not any(" OFFSET " in q["sql"] for q in deep.captured_queries)
    assert not any('"embedding"' in q["sql"] for q in deep.captured_queries)  # no card shows it


def test_past_its_cap_the_count_says_more_than(reviewer, make_candidate, settings):
    settings.CURATION = {**settings.CURATION, "QUEUE_COUNT_CAP": 3}
    for i in range(3):
        make_candidate(trigger=f"Lesson number {i:02d}")
    client = client_for(reviewer)
    assert re.search(r'id="queue-count">\s*3 waiting', client.get(reverse("curation:candidates")).content.decode())
    make_candidate(trigger="Lesson number 03")
    body = client.get(reverse("curation:candidates")).content.decode()
    assert (
        re.search(r'id="queue-count">\s*more than 3 waiting', body) and "more than 3 left under these filters" in body
    )
