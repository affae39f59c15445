"""A skill outside a user's scopes answers exactly like one that does not exist, for every verb; no
message, list or timeline names it."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from curation.models import SkillProposal
from curation.services import skills
from tests.factories import client_for, make_entry, make_user, nominated, page_text, report

pytestmark = pytest.mark.django_db

UNKNOWN_SLUG, UNKNOWN_PK = "no-such-skill", 999999


@pytest.fixture
def billing_lead(db):
    return make_user("bill", "lead", scopes=["acme/billing-api"])


@pytest.fixture
def web_skills(lead):
    """In acme/web, outside the billing lead's scopes: one nominated, one approved."""
    waiting = nominated(scope="acme/web", trigger="Running the web migrations in the container")
    approved = nominated(scope="acme/web/api", trigger="Running the api migrations in the container")
    report(approved, ["success"] * 5)
    skills.approve_skill(approved.pk, actor=lead, expected_version=1)
    return waiting, SkillProposal.objects.get(pk=approved.pk)


def _requests(slug, pk):
    return [
        ("get", reverse("curation:skill", args=[slug]), {}),
        ("get", reverse("curation:skill-md", args=[slug]), {}),
        ("post", reverse("curation:skill-retire", args=[slug]), {"version": 1, "reason": "old"}),
        ("get", reverse("curation:skill-card", args=[pk]), {}),
        ("post", reverse("curation:skill-edit", args=[pk]), {"version": 1, "pitfalls": "x"}),
        ("post", reverse("curation:skill-approve", args=[pk]), {"version": 1}),
        ("post", reverse("curation:skill-reject", args=[pk]), {"version": 1, "reason": "no"}),
        ("post", reverse("curation:skill-reject", args=[pk]), {"version": 1, "reason": ""}),
        ("post", reverse("curation:skill-edit", args=[pk]), {}),
    ]


@pytest.mark.parametrize("htmx", [{}, {"HTTP_HX_REQUEST": "true"}])
def test_every_verb_on_a_skill_outside_the_scopes_answers_like_an_unknown_one(billing_lead, web_skills, htmx):
    client = client_for(billing_lead)
    for skill in web_skills:
        hidden, unknown = _requests(skill.slug, skill.pk), _requests(UNKNOWN_SLUG, UNKNOWN_PK)
        for (method, path, data), (_, unknown_path, _) in zip(hidden, unknown):
            answer = getattr(client, method)(path, data, **htmx)
            expected = getattr(client, method)(unknown_path, data, **htmx)
            assert (answer.status_code, page_text(answer)) == (expected.status_code, page_text(expected)), path
            assert answer.status_code == 404 and skill.slug not in page_text(answer)
    assert [SkillProposal.objects.get(pk=s.pk).version for s in web_skills] == [1, 2]


def test_lists_and_the_export_leave_them_out(billing_lead, web_skills):
    client = client_for(billing_lead)
    for path in ("/skills/", "/skills/?status=retired", "/review/skills/", "/skills/export.zip"):
        body = client.get(path).content
        assert not any(s.slug.encode() in body for s in web_skills), path


def test_renaming_onto_a_hidden_skill_does_not_say_which_it_is(billing_lead, web_skills):
    own = nominated(scope="acme/billing-api")
    with pytest.raises(ValidationError) as refused:
        skills.edit_skill_draft(own.pk, actor=billing_lead, expected_version=1, changes={"slug": web_skills[0].slug})
    [message] = refused.value.message_dict["slug"]
    assert message == "This name is not available; choose another."


def test_a_source_held_by_a_hidden_skill_is_not_named_and_its_history_stays_hidden(lead, billing_lead):
    wide = nominated(scope="acme", trigger="Running every migration in the container")
    shared = make_entry(scope="acme/billing-api/container/ci", trigger="Migrations on CI")
    skills.edit_skill_draft(
        wide.pk,
        actor=lead,
        expected_version=1,
        changes={"sources": [wide.nominated_entry_id, shared.pk], "pitfalls": "Not on hosts."},
    )
    own = nominated(scope="acme/billing-api/container", trigger="Running the billing migrations on CI")
    with pytest.raises(ValidationError) as refused:
        skills.edit_skill_draft(
            own.pk, actor=billing_lead, expected_version=1, changes={"sources": [own.nominated_entry_id, shared.pk]}
        )
    assert refused.value.message_dict["sources"] == [f"#{shared.pk} is already a source of another skill"]
    page = client_for(billing_lead).get(reverse("curation:entry", args=[shared.pk]) + "?timeline=all")
    assert page.status_code == 200 and wide.slug not in page.content.decode()
    assert wide.slug in client_for(lead).get(reverse("curation:entry", args=[shared.pk])).content.decode()
    history = client_for(billing_lead).get(reverse("curation:entry-history", args=[shared.pk])).content.decode()
    assert wide.slug not in history
