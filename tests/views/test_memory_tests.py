"""The memory tests page (leads only, within their scopes) and what the releases page shows of the tests."""

import pytest

from curation.models import Event, EventAction, MemoryTest
from curation.selectors import releases as reads
from curation.services.memory_tests import create_memory_test
from curation.services.releases import publish_version
from tests.factories import active, client_for, make_user, page_text

SCOPE = "acme/billing-api"


def form(**overrides):
    data = {
        "scope": SCOPE,
        "name": "config lesson",
        "query": "Editing config files in the container",
        "k": "5",
        "budget_tokens": "500",
        "expectations": "top #1",
    }
    data.update(overrides)
    return data


def made(lead, **overrides):
    return create_memory_test(data=form(**overrides), actor=lead)


def test_a_lead_creates_a_test_on_the_page_and_sees_it_listed(lead):
    client = client_for(lead)
    response = client.post("/memory-tests/new/", form(expectations="top #1\nunder 300 tokens"), follow=True)
    test = MemoryTest.objects.get()
    text = page_text(response)
    assert f"Memory test #{test.pk} created: it runs at every publish of {SCOPE}." in text
    assert f"#{test.pk} config lesson" in text and "under 300 tokens" in text and "not run yet" in text
    assert Event.objects.get(memory_test=test).actor == lead


def test_bad_input_comes_back_with_the_fields_errors_and_nothing_written(lead):
    response = client_for(lead).post("/memory-tests/new/", form(expectations="must mention rebase", k="99"))
    text = page_text(response)
    assert response.status_code == 422
    assert "is not an expectation: write one of top #12" in text and "From 1 to 50 lessons asked for." in text
    assert 'value="Editing config files in the container"' in text  # what was typed stays
    assert not MemoryTest.objects.exists()


def test_a_lead_edits_and_retires_a_test(lead):
    test = made(lead)
    client = client_for(lead)
    page = page_text(client.get(f"/memory-tests/{test.pk}/"))
    assert "top #1</textarea>" in page and "memory test created" in page

    saved = client.post(
        f"/memory-tests/{test.pk}/edit/", {**form(expectations="absent #1"), "version": "1"}, follow=True
    )
    assert "saved" in page_text(saved) and "memory test changed" in page_text(saved)
    assert MemoryTest.objects.get(pk=test.pk).expectations == [{"kind": "absent", "entry": 1}]

    stale = client.post(f"/memory-tests/{test.pk}/edit/", {**form(), "version": "1"})
    assert stale.status_code == 422 and "changed since you opened it" in page_text(stale)

    retired = client.post(f"/memory-tests/{test.pk}/retire/", {"version": "2", "reason": "gone"}, follow=True)
    assert f"Memory test #{test.pk} retired" in page_text(retired)
    assert MemoryTest.objects.get(pk=test.pk).retired_at is not None


def test_reviewers_are_refused_and_a_scoped_lead_sees_only_their_scopes(lead, reviewer):
    test = made(lead)
    assert client_for(reviewer).get("/memory-tests/").status_code == 403
    assert client_for(reviewer).post("/memory-tests/new/", form()).status_code == 403
    assert client_for(reviewer).post(f"/memory-tests/{test.pk}/retire/", {"version": "1"}).status_code == 403

    scoped = make_user("lea", "lead", scopes=["acme/web"])
    client = client_for(scoped)
    assert f"#{test.pk} config lesson" not in page_text(client.get("/memory-tests/"))
    assert client.get(f"/memory-tests/{test.pk}/").status_code == 404
    assert client.post(f"/memory-tests/{test.pk}/edit/", {**form(), "version": "1"}).status_code == 404
    assert client.post(f"/memory-tests/{test.pk}/retire/", {"version": "1"}).status_code == 404
    refused = client.post("/memory-tests/new/", form())
    assert refused.status_code == 403 and "outside them" in page_text(refused)
    assert MemoryTest.objects.get(pk=test.pk).retired_at is None and MemoryTest.objects.count() == 1


@pytest.fixture
def entry(reviewer):
    return active(reviewer, scope=SCOPE, trigger="Rotating the webhook signing key")


def test_the_releases_page_shows_a_failing_test_to_acknowledge_and_the_runs_per_version(lead, entry):
    test = made(
        lead, query="Rotating the webhook signing key", expectations=f"absent #{entry.pk}", name="no key lesson"
    )
    client = client_for(lead)
    text = page_text(client.get("/releases/"))
    assert "A memory test fails on this release" in text
    assert f"memory test #{test.pk} (no key lesson) at {SCOPE}: #{entry.pk} is received, at rank 1." in text
    assert "I have read the 1 warning above and publish anyway" in text

    refused = client.post("/releases/publish/", {"summary": "keys"})
    assert refused.status_code == 422 and reads.published_version().number == 1

    client.post("/releases/publish/", {"summary": "keys", "acknowledge": "yes"})
    assert reads.published_version().number == 2
    text = page_text(client.get("/releases/"))
    assert "memory tests: 0 passed, 1 failed (1 acknowledged)" in text
    assert Event.objects.filter(memory_test=test, action=EventAction.MEMORY_TEST_ACKNOWLEDGED).count() == 1


def test_a_passing_test_is_listed_and_counted_for_its_version(lead, entry):
    test = made(lead, query="Rotating the webhook signing key", expectations=f"top #{entry.pk}")
    text = page_text(client_for(lead).get("/releases/"))
    assert f"<strong>passed</strong>: #{test.pk} config lesson" in text
    publish_version(actor=lead, summary="keys")
    text = page_text(client_for(lead).get("/releases/"))
    assert "memory tests: 1 passed, 0 failed" in text


def test_a_reader_sees_only_the_tests_of_their_scopes_on_the_releases_page(lead, entry):
    made(lead, query="Rotating the webhook signing key", expectations=f"absent #{entry.pk}", name="secret test")
    scoped = make_user("sue", "reviewer", scopes=["acme/web"])
    text = page_text(client_for(scoped).get("/releases/"))
    assert "secret test" not in text and "A memory test fails" not in text


def test_a_candidates_card_fills_in_its_impact(lead, reviewer, auditor, entry):
    from curation import services
    from tests.factories import candidate_data

    publish_version(actor=lead, summary="v2")
    candidate = services.create_candidate(
        data=candidate_data(scope=SCOPE, trigger="Rotating the webhook signing key twice"), actor_label="agent:ci"
    )
    page = page_text(client_for(reviewer).get("/review/candidates/"))
    url = f"/review/candidates/{candidate.pk}/impact/"
    assert f'hx-get="{url}" hx-trigger="revealed"' in page and "Impact being computed" in page

    fragment = client_for(reviewer).get(url)
    assert fragment.status_code == 200
    assert "No recent retrieval at this scope to replay" in page_text(fragment)
    assert client_for(auditor).get(url).status_code == 403
    assert client_for(make_user("sid", "reviewer", scopes=["acme/web"])).get(url).status_code == 404
