"""Two-reviewer scopes as each role sees them: the card and the compact line marked "1 of 2", the second
reviewer's approval, a disagreement shown to leads only, the leads' rules page and the reviewers' page."""

import pytest
from django.urls import reverse

from curation.models import Entry, EventAction, ScopePolicy, Status
from curation.rules.scope_policies import REVIEW
from curation.services.scope_policies import set_scope_policy
from tests.factories import client_for

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
QUEUE = "/review/candidates/"


RULES_PAGE = "/policies/"  # the two-reviewer rules are its section #review
SET_RULE = "/policies/review/"


def set_review_rule(prefix, *, approvals, actor, reason=""):
    return set_scope_policy(REVIEW, data={"prefix": prefix, "approvals": approvals}, actor=actor, reason=reason).policy


@pytest.fixture
def entry(lead, make_candidate):
    set_review_rule("acme/billing-api", approvals=2, actor=lead)
    return make_candidate()


def approve(user, entry, version, **extra):
    return client_for(user).post(reverse("curation:candidate-approve", args=[entry.pk]), {"version": version}, **extra)


def test_first_approval_says_1_of_2_and_the_second_reviewer_activates(entry, reviewer, second_reviewer):
    answer = approve(reviewer, entry, 1, **HTMX).content.decode()
    assert "Approved, 1 of 2: a second reviewer activates it" in answer and "1 waiting" in answer
    page = client_for(second_reviewer).get(QUEUE).content.decode()
    assert "1 of 2 approvals · rita" in page and "Approve, 2 of 2" in page
    client_for(second_reviewer).post(reverse("curation:candidates-view"), {"view": "compact"})
    compact = client_for(second_reviewer).get(QUEUE).content.decode()
    assert 'class="card line"' in compact and "1 of 2 approvals · rita" in compact

    refused = approve(reviewer, entry, 2, **HTMX)
    assert refused.status_code == 409 and "a second reviewer approves it" in refused.content.decode()
    approve(second_reviewer, entry, 2, **HTMX)
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE


def test_your_own_first_approvals_wait_for_someone_else_and_are_counted_apart(
    entry, reviewer, second_reviewer, make_candidate
):
    make_candidate(trigger="Another candidate of the scope")
    approve(reviewer, entry, 1)
    mine = client_for(reviewer).get(QUEUE).content.decode()
    assert "1 of 2 approvals · yours: waiting for a second reviewer" in mine
    assert '<button type="button" class="primary" disabled title="you gave it its first approval">' in mine
    assert mine.count('data-action="approve"') == 1  # only the other candidate can be approved here
    assert "2 waiting <span class=\"count-note\">(1 for you, 1 waiting for a second reviewer)</span>" in mine
    theirs = client_for(second_reviewer).get(QUEUE).content.decode()
    assert "Approve, 2 of 2" in theirs and "count-note" not in theirs


def test_without_htmx_the_message_says_what_the_approval_did(entry, reviewer):
    response = client_for(reviewer).post(
        reverse("curation:candidate-approve", args=[entry.pk]), {"version": 1}, follow=True
    )
    assert "Approved, 1 of 2: a second reviewer activates it" in response.content.decode()


def test_a_disagreement_is_shown_to_leads_only(entry, reviewer, second_reviewer, lead):
    approve(reviewer, entry, 1)
    client_for(second_reviewer).post(
        reverse("curation:candidate-reject", args=[entry.pk]), {"version": 2, "reason": "too broad"}
    )
    assert "0 waiting" in client_for(reviewer).get(f"{QUEUE}?f-scope=").content.decode()
    lead_page = client_for(lead).get(f"{QUEUE}?f-reason=lead").content.decode()
    assert f'id="card-{entry.pk}"' in lead_page and "reviewers disagree: a lead decides" in lead_page
    assert "approved by rita, rejected by another" in lead_page
    refused = approve(second_reviewer, entry, 3, **HTMX)
    assert refused.status_code == 409 and "a lead decides it now" in refused.content.decode()
    approve(lead, entry, 3, **HTMX)
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE


def test_bulk_approve_says_first_approval_per_card(entry, reviewer, make_candidate):
    other = make_candidate(scope="globex/web")
    body = (
        client_for(reviewer)
        .post(
            reverse("curation:candidates-bulk"),
            {"action": "approve", "selected": [f"{entry.pk}:1", f"{other.pk}:1"]},
            **HTMX,
        )
        .content.decode()
    )
    assert f"#{entry.pk}</a>: approved, 1 of 2: a second reviewer activates it" in body
    assert f"#{other.pk}</a>: approved" in body


@pytest.mark.parametrize("role, status", [("lead", 200), ("auditor", 200), ("reviewer", 403), ("nobody", 403)])
def test_the_reviewers_page_is_for_leads_and_auditors(request, role, status):
    response = client_for(request.getfixturevalue(role)).get(reverse("curation:reviewers"))
    assert response.status_code == status


def test_the_reviewers_page_shows_decisions_and_agreement(entry, reviewer, second_reviewer, auditor, make_candidate):
    approve(reviewer, entry, 1)
    approve(second_reviewer, entry, 2)
    disputed = make_candidate(trigger="Another lesson for the two reviewers to weigh")
    approve(second_reviewer, disputed, 1)
    client_for(reviewer).post(
        reverse("curation:candidate-reject", args=[disputed.pk]), {"version": 2, "reason": "wrong"}
    )
    page = client_for(auditor).get(reverse("curation:reviewers")).content.decode()
    assert "Last 7 days" in page and "Last 30 days" in page
    assert '<th scope="row">rita</th><td>2</td>' in page and "50% (1 of 2)" in page
    assert "approved (1 of 2) 1" in page and "rejected against an approval: sent to a lead 1" in page
    assert "<code class=\"scope\">acme/billing-api</code></td><td>2</td>" in page
    assert "Set how many reviewers a scope needs" not in page  # auditors read the rules, leads set them


@pytest.mark.parametrize("role", ["reviewer", "auditor", "nobody"])
def test_only_leads_open_the_rules_page(request, role):
    client = client_for(request.getfixturevalue(role))
    assert client.get(RULES_PAGE).status_code == 403
    assert client.post(SET_RULE, {"prefix": "acme", "approvals": "2"}).status_code == 403
    assert not ScopePolicy.objects.exists()


def test_a_lead_sets_a_rule_on_the_page(lead):
    client = client_for(lead)
    response = client.post(SET_RULE, {"prefix": "acme/web", "approvals": "2", "reason": "customer facing"}, follow=True)
    assert response.redirect_chain[-1][0] == "/policies/#review"
    assert "Candidates under acme/web now need 2 approvals." in response.content.decode()
    rule = ScopePolicy.objects.get()
    assert (rule.kind, rule.prefix, rule.value["approvals"], rule.events.get().action) == (
        REVIEW,
        "acme/web",
        2,
        EventAction.REVIEW_RULE_SET,
    )
    assert rule.events.get().reason == "customer facing"
    bad = client.post(SET_RULE, {"prefix": "Acme Web", "approvals": "3"})
    body = bad.content.decode()
    assert bad.status_code == 422 and "Illegal scope segment" in body and "1 or 2 approvals." in body
    assert ScopePolicy.objects.count() == 1


def test_the_old_rules_page_leads_to_its_section(lead):
    response = client_for(lead).get("/review/rules/")
    assert (response.status_code, response["Location"]) == (301, "/policies/#review")


def test_a_scoped_reader_sees_only_the_rules_that_concern_its_scopes(lead, auditor):
    from tests.factories import make_user

    for prefix in ("acme/web", "acme", "globex/secret-project"):
        set_review_rule(prefix, approvals=2, actor=lead, reason="r")
    scoped_lead = make_user("lou", "lead", scopes=["acme/web/frontend"])
    scoped_auditor = make_user("aud", "auditor", scopes=["acme/web"])
    for user, url in (
        (scoped_lead, "curation:scope-policies"),
        (scoped_lead, "curation:reviewers"),
        (scoped_auditor, "curation:reviewers"),
    ):
        page = client_for(user).get(reverse(url)).content.decode()
        assert "acme/web" in page and "globex/secret-project" not in page, (user, url)
    assert "globex/secret-project" in client_for(lead).get(RULES_PAGE).content.decode()


def test_the_dashboard_links_the_reviewers_page(lead, reviewer):
    assert reverse("curation:reviewers") in client_for(lead).get("/").content.decode()
    assert reverse("curation:reviewers") not in client_for(reviewer).get("/").content.decode()


def test_only_leads_are_offered_the_needs_a_lead_filter(reviewer, lead):
    assert '<option value="lead">needs a lead</option>' in client_for(lead).get(f"{QUEUE}?f-scope=").content.decode()
    page = client_for(reviewer).get(f"{QUEUE}?f-scope=").content.decode()
    assert 'value="lead"' not in page and '<option value="recheck">recheck</option>' in page


def test_a_deferred_first_approval_says_deferred(entry, reviewer, second_reviewer):
    approve(reviewer, entry, 1)
    answer = (
        client_for(second_reviewer)
        .post(reverse("curation:candidate-defer", args=[entry.pk]), {"version": 2}, **HTMX)
        .content.decode()
    )
    assert "<strong>Deferred</strong>" in answer and "1 of 2" not in answer


def test_bulk_reject_against_an_approval_says_it_went_to_a_lead(entry, reviewer, second_reviewer):
    approve(reviewer, entry, 1)
    body = (
        client_for(second_reviewer)
        .post(
            reverse("curation:candidates-bulk"),
            {"action": "reject", "reason": "too broad", "selected": [f"{entry.pk}:2"]},
            **HTMX,
        )
        .content.decode()
    )
    assert f"#{entry.pk}</a>: sent to a lead: another reviewer approved it" in body
    assert "<strong>Sent to a lead: another reviewer approved it</strong>" in body
