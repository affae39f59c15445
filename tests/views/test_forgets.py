"""The Forget queue and the entry page's "Request forget" through the real URLs, middleware and templates,
for every role: reviewers file and read, auditors read, leads decide."""

import pytest
from django.urls import reverse

from curation.models import Entry, ForgetRequest, Status
from curation.services.forgets import file_forget_request
from tests.factories import active, client_for, make_user, publish_pending

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
LESSON = dict(
    scope="acme/payroll",
    trigger="Deploying the payroll service on Fridays",
    content="Always page Marguerite Okonkwo before deploying payroll, she holds the rollback keys.",
)


@pytest.fixture
def lesson(lead):
    entry = active(lead, **LESSON)
    publish_pending()
    return entry


@pytest.fixture
def filed(lesson, reviewer):
    return file_forget_request(entry_id=lesson.pk, reason="The user asked us to forget it", actor=reviewer)


def test_a_reviewer_requests_forget_from_the_entry_page(reviewer, lesson):
    client = client_for(reviewer)
    page = client.get(reverse("curation:entry", args=[lesson.pk])).content.decode()
    assert "Request forget" in page
    response = client.post(reverse("curation:entry-forget", args=[lesson.pk]), {"reason": "user asked"}, follow=True)
    request = ForgetRequest.objects.get()
    assert f"Forget request #{request.pk} filed" in response.content.decode()
    assert (request.entry_id, request.requested_by, request.state) == (lesson.pk, reviewer, "open")


def test_filing_without_a_reason_says_so_and_files_nothing(reviewer, lesson):
    response = client_for(reviewer).post(
        reverse("curation:entry-forget", args=[lesson.pk]), {"reason": " "}, follow=True
    )
    assert "Not filed: Say why" in response.content.decode() and not ForgetRequest.objects.exists()


def test_an_auditor_may_not_file(auditor, lesson):
    client = client_for(auditor)
    assert "Request forget" not in client.get(reverse("curation:entry", args=[lesson.pk])).content.decode()
    assert client.post(reverse("curation:entry-forget", args=[lesson.pk]), {"reason": "r"}).status_code == 403


def test_out_of_scope_answers_404(lesson, filed):
    outsider = make_user("otto", "reviewer", scopes=["acme/web"])
    client = client_for(outsider)
    assert client.post(reverse("curation:entry-forget", args=[lesson.pk]), {"reason": "r"}).status_code == 404
    assert client.get(reverse("curation:forget-card", args=[filed.pk])).status_code == 404
    assert f'id="forget-{filed.pk}"' not in client.get(reverse("curation:forgets")).content.decode()


@pytest.mark.parametrize("role, decides", [("reviewer", False), ("auditor", False), ("lead", True)])
def test_every_role_reads_the_queue_only_a_lead_sees_the_decisions(filed, lesson, role, decides):
    user = make_user(f"{role}-2", role)
    page = client_for(user).get(reverse("curation:forgets")).content.decode()
    assert f'id="forget-{filed.pk}"' in page and "1 open" in page and LESSON["trigger"] in page
    assert 'href="/review/forgets/"' in page  # the nav
    assert ("Approve: forget" in page) is decides and ("Decline" in page) is decides


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_reviewers_and_auditors_cannot_decide(filed, role):
    client = client_for(make_user(f"{role}-2", role))
    assert client.post(reverse("curation:forget-approve", args=[filed.pk])).status_code == 403
    assert client.post(reverse("curation:forget-decline", args=[filed.pk]), {"reason": "no"}).status_code == 403
    assert ForgetRequest.objects.get(pk=filed.pk).state == "open"


def test_a_lead_approves_with_a_ticked_duplicate(lead, filed, lesson):
    duplicate = active(
        lead,
        scope="acme/payroll",
        trigger="Before a payroll deploy on a Friday",
        content="Page Marguerite Okonkwo first; she holds the payroll rollback keys.",
    )
    client = client_for(lead)
    card = client.get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert f'name="duplicates" value="{duplicate.pk}"' in card
    response = client.post(reverse("curation:forget-approve", args=[filed.pk]), {"duplicates": [duplicate.pk]}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and f"Request #{filed.pk}: approved: forgotten" in body and "0 open" in body
    assert "Cannot be undone: its text is purged everywhere" in body and 'data-action="undo"' not in body
    assert "published without them" in body
    assert set(Entry.objects.filter(pk__in=[lesson.pk, duplicate.pk]).values_list("status", flat=True)) == {
        Status.RETIRED
    }
    entry_page = client.get(reverse("curation:entry", args=[lesson.pk])).content.decode()
    assert f"[forgotten: request #{filed.pk}]" in entry_page and "Okonkwo" not in entry_page


def test_a_lead_declines_with_a_reason_and_without_one_is_told(lead, filed):
    client = client_for(lead)
    refused = client.post(reverse("curation:forget-decline", args=[filed.pk]), {"reason": ""}, **HTMX)
    assert refused.status_code == 422 and "Say why the lesson is kept" in refused.content.decode()
    response = client.post(reverse("curation:forget-decline", args=[filed.pk]), {"reason": "a team rule"})
    assert response.status_code == 302 and ForgetRequest.objects.get(pk=filed.pk).state == "declined"
    again = client.post(reverse("curation:forget-approve", args=[filed.pk]), **HTMX)
    assert again.status_code == 409 and "already declined" in again.content.decode()


def test_a_bad_duplicate_is_a_422_naming_it(lead, filed):
    response = client_for(lead).post(reverse("curation:forget-approve", args=[filed.pk]), {"duplicates": ["x"]}, **HTMX)
    assert response.status_code == 422 and "entry ids" in response.content.decode()
    assert ForgetRequest.objects.get(pk=filed.pk).state == "open"


def test_the_dashboard_counts_open_requests(lead, filed):
    page = client_for(lead).get(reverse("curation:home")).content.decode()
    assert 'id="queue-forget"' in page


def test_queue_query_count(lead, reviewer, django_assert_max_num_queries):
    """A fixed number of queries a page, whatever its requests: the page, the cards' near duplicates and
    the tombstones' matches (once for the page; on SQLite the near duplicates once per scope), and where else
    each lesson is quoted (one query per kind of row, for the page). These lessons have no distinctive token;
    each one a lesson has costs a query more on its card (selectors.forgets.tokens_used_elsewhere)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(lead)

    def file(first, last):
        for i in range(first, last):
            entry = active(
                lead,
                scope="acme/payroll",
                trigger=f"Deploying service {i} on Fridays",
                content=f"Page the on-call owner {i} before deploying.",
            )
            file_forget_request(entry_id=entry.pk, reason="user asked", actor=reviewer)
        client.get(reverse("curation:forgets"))
        with CaptureQueriesContext(connection) as queries:
            page = client.get(reverse("curation:forgets")).content.decode()
        assert page.count('class="card forget-card') == last
        return len(queries)

    five, ten = file(0, 5), file(5, 10)
    assert five == ten <= 24, (five, ten)


def test_an_edit_cannot_type_a_forgotten_lesson_back_in(lead, reviewer, filed, make_candidate):
    from curation.services.forgets import approve_forget_request

    approve_forget_request(filed.pk, actor=lead)
    candidate = make_candidate(scope="acme/payroll", trigger="Deploying billing", content="Run the smoke tests.")
    response = client_for(reviewer).post(
        reverse("curation:candidate-edit", args=[candidate.pk]),
        {"version": candidate.version, "trigger": LESSON["trigger"], "content": LESSON["content"]},
        **HTMX,
    )
    assert response.status_code == 409 and f"forget request #{filed.pk}" in response.content.decode()
    assert Entry.objects.get(pk=candidate.pk).content == "Run the smoke tests."


def test_an_auditor_reads_decided_requests_and_what_they_forgot(lead, auditor, filed, lesson):
    from curation.services.forgets import approve_forget_request

    approve_forget_request(filed.pk, actor=lead, note="done")
    client = client_for(auditor)
    assert f'id="forget-{filed.pk}"' not in client.get(reverse("curation:forgets")).content.decode()
    page = client.get(reverse("curation:forgets"), {"f-state": "approved"}).content.decode()
    assert f'id="forget-{filed.pk}"' in page and "1 approved" in page
    card = client.get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert "Decided by lena" in card and f'href="/entries/{lesson.pk}/"' in card and "Okonkwo" not in card
    assert client.get(reverse("curation:forgets"), {"f-state": "gone"}).status_code == 400


def test_the_decided_card_counts_the_submissions_held_since(lead, filed, lesson):
    from curation.services.forgets import approve_forget_request
    from curation.services.submissions import submit_candidate
    from curation.services.tokens import create_agent_token
    from tests.factories import candidate_data

    approve_forget_request(filed.pk, actor=lead)
    token, _ = create_agent_token(name="payroll-agent", scopes=["acme/payroll"])
    for trigger in ("Deploying the payroll service on Fridays", "Deploying payroll on a Friday"):
        submit_candidate(
            data=candidate_data(scope="acme/payroll", trigger=trigger, content=LESSON["content"]), token=token
        )
    submit_candidate(data=candidate_data(scope="acme/payroll"), token=token)  # an unrelated lesson comes in
    card = client_for(lead).get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert "Submissions held since, for repeating it: 2." in card and "Okonkwo" not in card
    queue = client_for(lead).get(reverse("curation:candidates")).content.decode()
    assert "Okonkwo" not in queue and "[forgotten: request" not in queue


def test_the_card_lists_where_else_the_lesson_is_quoted_and_the_ticked_quote_is_purged(lead, filed, lesson):
    from curation import services
    from curation.models import Evidence

    other = active(
        lead, scope="acme/payroll/eu", trigger="Deploying payroll in the EU", content="Follow the EU release checklist."
    )
    quoting = services.add_evidence(
        other.pk,
        actor=lead,
        data={
            "kind": "review",
            "signal": "independent",
            "polarity": "supports",
            "excerpt": f"Copied from the old runbook: {LESSON['content']}",
        },
    )
    client = client_for(lead)
    card = client.get(reverse("curation:forget-card", args=[filed.pk])).content.decode()
    assert "Also found in" in card and f'value="evidence:{quoting.pk}"' in card
    assert f"evidence of entry #{other.pk}" in card
    response = client.post(reverse("curation:forget-approve", args=[filed.pk]), {"quotes": [f"evidence:{quoting.pk}"]})
    assert response.status_code == 302
    assert Evidence.objects.get(pk=quoting.pk).excerpt == f"Copied from the old runbook: {filed.marker}"
    bad = client.post(reverse("curation:forget-approve", args=[filed.pk]), {"quotes": ["evidence:99999"]}, **HTMX)
    assert bad.status_code in (409, 422)  # already decided, or not a listed quote: a clear refusal, never a 500
