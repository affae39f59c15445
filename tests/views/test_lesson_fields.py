"""The fields that edit a lesson's text, as every form that offers them shows them: the candidates' edit
panel, a merge proposal's edit panel and a conflict's merge form."""

import pytest
from django.urls import reverse

from curation.models import Entry
from tests.factories import client_for
from tests.views.test_conflicts import HTMX, open_conflict, url, versions  # noqa: F401 (a fixture)
from tests.views.test_consolidation import proposal  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def shorter_fields(monkeypatch):
    """Entry's scope, trigger and content shortened, as a change to the model would: the forms follow."""
    for name, length in (("scope", 99), ("trigger", 123), ("content", 456)):
        monkeypatch.setattr(Entry._meta.get_field(name), "max_length", length)


def test_every_edit_form_takes_its_lengths_from_the_model(
    reviewer, make_candidate, proposal, open_conflict, shorter_fields
):
    entry = make_candidate()
    proposal()
    open_conflict()
    client = client_for(reviewer)
    cards = client.get(reverse("curation:candidates")).content.decode()
    card = client.get(reverse("curation:candidate-card", args=[entry.pk]), **HTMX).content.decode()
    proposals = client.get(reverse("curation:consolidation")).content.decode()
    conflicts = client.get(reverse("curation:conflicts")).content.decode()
    for page, prefix in ((cards, ""), (card, ""), (proposals, ""), (conflicts, "merge_")):
        assert f'<textarea name="{prefix}trigger" rows="2" maxlength="123" required>' in page
        assert f'<textarea name="{prefix}content" rows="4" maxlength="456" required>' in page
        assert f'<textarea name="{prefix}boundary" rows="2">' in page  # no limit on the model: none here
        assert 'maxlength="500"' not in page and 'maxlength="4000"' not in page
    for page, prefix in ((cards, ""), (card, ""), (conflicts, "merge_")):
        assert f'name="{prefix}scope"' in page and 'maxlength="99" required>' in page
    assert 'name="scope"' not in proposals  # a merge proposal keeps its members' scope


def test_a_refused_merge_shows_what_was_typed_with_each_fields_message(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    response = client_for(reviewer).post(
        url("merge", conflict),
        {
            "merge_kind": "procedure",
            "merge_scope": "Acme",
            "merge_trigger": "",
            "merge_content": "Rebase <only> local",
            "merge_boundary": "on shared branches",
            "merge_conditions": "git, ci",
            **versions(a, b),
        },
        **HTMX,
    )
    body = response.content.decode()
    assert response.status_code == 422
    assert (
        '<input name="merge_scope" value="Acme" maxlength="255" required></label>\n'
        '        <p class="field-error" role="alert">'
        in body
        and "Illegal scope segment" in body
    )
    assert (
        '<textarea name="merge_trigger" rows="2" maxlength="500" required></textarea></label>\n'
        '        <p class="field-error" role="alert">This field is required.</p>' in body
    )
    assert ">Rebase &lt;only&gt; local</textarea>" in body and ">on shared branches</textarea>" in body
    assert 'name="merge_conditions" value="git, ci"' in body
    assert "Do (content): say what holds when" in body
