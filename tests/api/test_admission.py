"""Admission policies per scope prefix: the longest prefix wins, a lead's row replaces the setting of its
prefix, and a new candidate is decided at ingest by `policy:<name>` (an Event with the rule) unless people
decide. The lead's page sets policies, each change an Event."""

import pytest

from curation.rules import admission, clock
from curation.models import Entry, EntryBand, Event, EventAction, ScopePolicy, Status
from curation.rules.scope_policies import ADMISSION
from curation.services.scope_policies import set_scope_policy
from tests.factories import api_candidate, client_for, page_text

pytestmark = pytest.mark.django_db

POLICIES = {
    "acme": {"name": "take-all", "mode": "all"},
    "acme/billing-api": {"name": "strict", "mode": "auto", "evaluator": "abs-error", "threshold": 0.75},
    "acme/billing-api/legacy": {"name": "frozen", "mode": "none"},
    "acme/billing-api/people": {"name": "people", "mode": "manual"},
}


@pytest.fixture
def policies(settings):
    settings.CURATION_ADMISSION = POLICIES


def _scored(score, evaluator="abs-error", polarity="supports"):
    return {
        "kind": "test_result",
        "signal": "independent",
        "excerpt": f"error score {score}",
        "evaluator": evaluator,
        "score": score,
        "polarity": polarity,
    }


def _submit(agent, scope, evidence=(), **fields):
    answer = agent.submit(scope=scope, evidence=list(evidence), **fields)
    assert answer.status_code == 201, answer.json()
    return Entry.objects.get(pk=answer.json()["id"]), answer.json()


def _decision(entry):
    return Event.objects.filter(entry=entry).exclude(action=EventAction.SUBMIT).get()


@pytest.mark.parametrize(
    "scope, evidence, status, actor",
    [
        ("acme/web", [], Status.ACTIVE, "policy:take-all"),
        ("acme/billing-api", [_scored(0.8)], Status.ACTIVE, "policy:strict"),
        ("acme/billing-api/jobs", [_scored(0.75)], Status.ACTIVE, "policy:strict"),  # at the threshold
        ("acme/billing-api", [_scored(0.7)], Status.REJECTED, "policy:strict"),
        ("acme/billing-api", [_scored(0.9, evaluator="vibes")], Status.REJECTED, "policy:strict"),
        ("acme/billing-api", [_scored(0.9, polarity="contradicts")], Status.REJECTED, "policy:strict"),
        ("acme/billing-api", [], Status.REJECTED, "policy:strict"),
        ("acme/billing-api/legacy/x", [_scored(1.0)], Status.REJECTED, "policy:frozen"),
    ],
)
def test_the_longest_prefix_decides_at_ingest(make_agent, policies, scope, evidence, status, actor):
    agent = make_agent(scopes=("acme",))
    entry, answer = _submit(agent, scope, evidence)
    assert entry.status == status and answer["status"] == status and entry.queued_at is None
    event = _decision(entry)
    assert event.actor_label == actor
    assert event.action == (EventAction.APPROVE if status == Status.ACTIVE else EventAction.REJECT)
    assert event.reason.startswith(("auto:", "all:", "none:"))


def test_manual_and_no_policy_leave_it_to_people(make_agent, policies, settings):
    agent = make_agent(scopes=("acme", "other"))
    entry, _ = _submit(agent, "acme/billing-api/people", [_scored(1.0)])
    assert entry.status == Status.PENDING and entry.queued_at is not None
    entry, _ = _submit(agent, "other/thing")
    assert entry.status == Status.PENDING
    assert not Event.objects.filter(actor_label__startswith="policy:").exists()


def test_a_batch_is_decided_item_by_item(make_agent, policies):
    agent = make_agent(scopes=("acme",))
    items = [
        api_candidate(
            scope="acme/billing-api", trigger=f"Lesson {i}", content=f"Advice {i}.", evidence=[_scored(score)]
        )
        for i, score in enumerate((0.9, 0.1))
    ]
    results = agent.post("candidates/batch", {"candidates": items}).json()["results"]
    assert [r["status"] for r in results] == ["active", "rejected"]


def test_the_decision_shows_on_the_entry_page_and_in_the_queue_history(make_agent, policies, reviewer):
    agent = make_agent(scopes=("acme",))
    entry, _ = _submit(agent, "acme/billing-api", [_scored(0.8)])
    text = page_text(client_for(reviewer).get(f"/entries/{entry.pk}/"))
    assert "policy:strict" in text and "auto: approve when abs-error scored at least 0.75" in text


def test_evidence_carries_its_score_and_evaluator(make_agent, policies):
    agent = make_agent(scopes=("acme",))
    entry, _ = _submit(agent, "acme/billing-api", [_scored(0.8)])
    evidence = entry.evidence.get()
    assert (evidence.evaluator, evidence.score) == ("abs-error", 0.8)
    bad = agent.submit(scope="acme/billing-api", evidence=[{**_scored(0.8), "score": "high"}])
    assert bad.status_code == 422 and "evidence[0].score" in bad.json()["errors"]
    unnamed = agent.submit(scope="acme/billing-api", evidence=[{**_scored(0.8), "evaluator": ""}])
    assert unnamed.status_code == 422 and "evidence[0].evaluator" in unnamed.json()["errors"]


def test_a_leads_row_replaces_the_setting_of_its_prefix_with_an_event(make_agent, policies, lead):
    row = set_scope_policy(
        ADMISSION, data={"prefix": "acme/billing-api", "name": "open", "mode": "all"}, actor=lead, at=clock.now()
    ).policy
    event = Event.objects.get(scope_policy=row)
    assert (event.action, event.actor_label, event.before, event.after["mode"]) == (
        EventAction.ADMISSION_POLICY_SET,
        lead.username,
        None,
        "all",
    )
    entry, _ = _submit(make_agent(scopes=("acme",)), "acme/billing-api")
    assert entry.status == Status.ACTIVE and _decision(entry).actor_label == "policy:open"
    set_scope_policy(
        ADMISSION, data={"prefix": "acme/billing-api", "name": "open", "mode": "manual"}, actor=lead, at=clock.now()
    )
    second = Event.objects.filter(scope_policy=row).order_by("pk").last()
    assert (second.before["mode"], second.after["mode"], second.after["version"]) == ("all", "manual", 2)


def test_the_lead_page_lists_and_sets_policies(policies, lead, reviewer):
    client = client_for(lead)
    text = page_text(client.get("/policies/"))
    assert "policy:strict" in text and "acme/billing-api/legacy" in text
    moved = client.get("/admission/")  # the old page's address, bookmarked
    assert (moved.status_code, moved["Location"]) == (301, "/policies/#admission")
    answer = client.post(
        "/policies/admission/",
        {"prefix": "acme/ops", "name": "ops-gate", "mode": "auto", "evaluator": "ci", "threshold": "0.8"},
    )
    assert (answer.status_code, answer["Location"]) == (302, "/policies/#admission")
    assert ScopePolicy.objects.get(kind=ADMISSION, prefix="acme/ops").value["threshold"] == 0.8
    assert "policy:ops-gate" in page_text(client.get("/policies/"))
    refused = client.post(
        "/policies/admission/",
        {"prefix": "acme/ops", "name": "ops-gate", "mode": "auto", "evaluator": "ci", "threshold": "high"},
    )
    assert refused.status_code == 422 and "A number" in page_text(refused)
    for not_a_number in ("nan", "NaN", "inf", "-inf", "1e400"):  # parsed as floats, stored nowhere
        refused = client.post(
            "/policies/admission/",
            {"prefix": "acme/ops", "name": "ops-gate", "mode": "auto", "evaluator": "ci", "threshold": not_a_number},
        )
        assert refused.status_code == 422 and "no NaN or infinity" in page_text(refused), not_a_number
    assert ScopePolicy.objects.get(kind=ADMISSION, prefix="acme/ops").version == 1
    assert client_for(reviewer).get("/policies/").status_code == 403
    assert (
        client_for(reviewer).post("/policies/admission/", {"prefix": "acme/x", "name": "x", "mode": "all"}).status_code
        == 403
    )


@pytest.mark.parametrize(
    "data, field",
    [
        ({"prefix": "acme/../x", "name": "a", "mode": "all"}, "prefix"),
        ({"prefix": "acme", "name": "Bad Name", "mode": "all"}, "name"),
        ({"prefix": "acme", "name": "a", "mode": "some"}, "mode"),
        ({"prefix": "acme", "name": "a", "mode": "auto", "threshold": 0.5}, "evaluator"),
        ({"prefix": "acme", "name": "a", "mode": "auto", "evaluator": "ci"}, "threshold"),
    ],
)
def test_a_bad_policy_names_the_field(data, field):
    with pytest.raises(Exception) as caught:
        admission.clean_policy(data)
    assert field in caught.value.message_dict


@pytest.mark.parametrize("batch", [False, True])
def test_a_candidate_the_policy_decides_is_written_once(make_agent, policies, batch):
    """The policy decides before the insert: the insert is the decision, one Event at version 1, never a
    pending row updated a moment later."""
    agent = make_agent(scopes=("acme",))
    items = [
        api_candidate(scope="acme/web", trigger="Lesson one", content="Advice one."),
        api_candidate(scope="acme/billing-api/legacy/x", trigger="Lesson two", content="Advice two."),
    ]
    if batch:
        results = agent.post("candidates/batch", {"candidates": items}).json()["results"]
    else:
        results = [agent.post("candidates", item).json() for item in items]
    assert [r["status"] for r in results] == [Status.ACTIVE, Status.REJECTED]
    for result, action, actor in zip(
        results, (EventAction.APPROVE, EventAction.REJECT), ("policy:take-all", "policy:frozen")
    ):
        entry = Entry.objects.get(pk=result["id"])
        events = list(Event.objects.filter(entry=entry).values_list("action", "actor_label", "entry_version"))
        assert events == [(action, actor, 1)]
        assert entry.version == 1 and entry.queued_at is None
        assert Event.objects.get(entry=entry).after["status"] == result["status"]
    approved = Entry.objects.get(pk=results[0]["id"])
    assert approved.last_verified_at is not None and EntryBand.objects.filter(entry=approved).exists()
