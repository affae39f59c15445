"""A forgotten lesson through the console's real URLs: the forget card lists the pending paraphrase ticked; an
approval of it, a conflict's merge with the forgotten text and a consolidation's accept are refused on their
cards (409, saying which request, never the text); the releases page and its publish refuse a release that
would give it back."""

import pytest
from django.urls import reverse

from curation import services
from curation.models import Conflict, Entry, Status
from curation.services import conflicts
from curation.sweeps import consolidation as consolidation_sweep
from curation.services.forgets import approve_forget_request, file_forget_request
from tests.factories import PAYROLL_LESSON as LESSON
from tests.factories import PAYROLL_PARAPHRASE as PARAPHRASE
from tests.factories import active, candidate_data, client_for, make_user, publish_pending

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
SCOPE = "acme/payroll"
REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])


@pytest.fixture
def lesson(lead):
    entry = active(lead, scope=SCOPE, **LESSON)
    publish_pending()
    return entry


@pytest.fixture
def paraphrase(lesson):
    return services.create_candidate(data=candidate_data(scope=SCOPE, **PARAPHRASE), actor_label="agent:ci")


def test_the_forget_card_lists_the_pending_paraphrase_ticked_and_its_approval_is_refused(
    lead, reviewer, lesson, paraphrase
):
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    card = client_for(lead).get(reverse("curation:forget-card", args=[request.pk])).content.decode()
    assert "No near duplicates found" not in card
    assert (
        f'<input type="checkbox" name="duplicates" value="{paraphrase.pk}" form="forget-approve-{request.pk}" checked>'
    ) in card
    assert "the same lesson: left unticked, it can never be approved" in card

    # The lead unticks it (the form posts no duplicates): forgotten, the paraphrase left pending.
    response = client_for(lead).post(reverse("curation:forget-approve", args=[request.pk]), {}, **HTMX)
    assert response.status_code == 200
    response = client_for(reviewer).post(
        reverse("curation:candidate-approve", args=[paraphrase.pk]), {"version": paraphrase.version}, **HTMX
    )
    page = response.content.decode()
    assert response.status_code == 409
    assert f"This repeats a lesson forgotten by forget request #{request.pk}" in page
    assert Entry.objects.get(pk=paraphrase.pk).status == Status.PENDING


def test_approving_a_forget_with_an_active_match_unticked_says_to_tick_it(lead, reviewer, lesson):
    twin = active(lead, scope=SCOPE, **PARAPHRASE)
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    response = client_for(lead).post(reverse("curation:forget-approve", args=[request.pk]), {}, **HTMX)
    assert response.status_code == 422
    assert f"Still active and the same lesson: #{twin.pk}. Tick them" in response.content.decode()
    assert Entry.objects.get(pk=lesson.pk).status == Status.ACTIVE


def test_a_conflict_merge_with_the_forgotten_text_is_refused_on_its_card(lead, reviewer, lesson):
    a = active(reviewer, scope="acme/payroll", **REBASE)
    b = active(reviewer, scope="acme/payroll/eu", **NO_REBASE)
    [conflict] = conflicts.detect_conflicts_for(b)
    approve_forget_request(file_forget_request(entry_id=lesson.pk, reason="asked", actor=reviewer).pk, actor=lead)
    response = client_for(reviewer).post(
        reverse("curation:conflict-merge", args=[conflict.pk]),
        {
            "merge_kind": "procedure",
            "merge_scope": SCOPE,
            "merge_trigger": LESSON["trigger"],
            "merge_content": LESSON["content"],
            "merge_boundary": "",
            "merge_conditions": "",
            "version_a": a.version,
            "version_b": b.version,
        },
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 409 and "repeats a lesson forgotten by forget request" in page
    assert Conflict.objects.get(pk=conflict.pk).state == Conflict.State.OPEN
    assert not Entry.objects.filter(status=Status.ACTIVE, trigger=LESSON["trigger"]).exists()


def test_a_consolidation_accept_with_the_forgotten_text_is_refused_on_its_card(lead, reviewer, lesson):
    port = dict(trigger="Connecting to the billing database from the container", conditions=["db"])
    for content in ("Probe port 5432 with nc before connecting.", "Probe port 5432 with nc before connecting!"):
        active(reviewer, scope=SCOPE, content=content, **port)
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    approve_forget_request(file_forget_request(entry_id=lesson.pk, reason="asked", actor=reviewer).pk, actor=lead)
    response = client_for(reviewer).post(
        reverse("curation:proposal-accept", args=[proposal.pk]),
        {"edited": "1", "trigger": LESSON["trigger"], "content": LESSON["content"]},
        **HTMX,
    )
    assert response.status_code == 409
    assert "repeats a lesson forgotten by forget request" in response.content.decode()
    assert not Entry.objects.filter(status=Status.ACTIVE, trigger=LESSON["trigger"]).exists()


def test_the_releases_page_and_its_publish_refuse_a_kept_forgotten_lesson(lead, reviewer, lesson):
    above = active(lead, scope="acme", **PARAPHRASE)  # outside the approving lead's scopes: left active
    publish_pending()
    payroll_lead = make_user("paula", "lead", scopes=[SCOPE])
    request = file_forget_request(entry_id=lesson.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=payroll_lead)
    active(lead, scope="acme/web", trigger="Deploying the web app", content="Run the smoke tests first.")
    client = client_for(lead)
    page = client.get(reverse("curation:releases")).content.decode()
    assert "Publishing is refused while these entries repeat a forgotten lesson" in page
    assert f"#{above.pk} repeats a lesson forgotten by forget request #{request.pk}" in page
    response = client.post(reverse("curation:release-publish"), {"summary": "weekly", "acknowledge": "yes"})
    assert response.status_code == 422
    assert f"#{above.pk} repeats a lesson forgotten by forget request #{request.pk}" in response.content.decode()
    assert "Marguerite" not in response.content.decode().split("Pre-publish checks")[1].split("History")[0]
