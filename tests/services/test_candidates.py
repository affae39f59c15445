"""Each decision writes exactly one Event with the actor, the action, the reason, before and after."""

import datetime

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from curation import services
from curation.models import Entry, Event, Evidence, SimilarEntry, Status
from curation.services import InvalidTransition, StaleDecision
from tests.factories import candidate_data

pytestmark = pytest.mark.django_db


def events(entry):
    return list(Event.objects.filter(entry=entry).order_by("id"))


def test_create_candidate_caps_self_signal_and_writes_submit_event(make_candidate):
    entry = make_candidate(confidence=0.99)
    assert entry.status == Status.PENDING and entry.queued_at is not None and entry.queue_reason == "new"
    assert entry.base_confidence == pytest.approx(0.85)
    [event] = events(entry)
    assert (event.action, event.actor_label, event.before) == ("submit", "agent:ci", None)
    assert event.after["status"] == "pending"
    assert "capped from 0.99" in event.reason


def test_create_candidate_stores_evidence_and_external_support_lifts_cap(make_candidate):
    entry = make_candidate(
        signal="independent",
        confidence=0.9,
        evidence=[
            {
                "kind": "test_result",
                "signal": "external",
                "polarity": "supports",
                "excerpt": "pytest: 48 passed",
                "task_ref": "task-1",
            }
        ],
    )
    assert entry.base_confidence == pytest.approx(0.9)
    [ev] = Evidence.objects.filter(entry=entry)
    assert (ev.signal, ev.excerpt, ev.recorded_by_label) == ("external", "pytest: 48 passed", "agent:ci")


def test_human_correction_starts_at_095(make_candidate):
    assert make_candidate(kind="human_correction", confidence=0.5).base_confidence == pytest.approx(0.95)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("scope", "Acme/Billing", "Illegal scope segment 'Acme', 'Billing'"),
        ("scope", "acme//billing", "Illegal scope segment ''"),
        ("trigger", "   ", "This field is required."),
        ("content", "", "This field is required."),
        ("trigger", "x" * 501, "At most 500 characters"),
        ("kind", "rumour", "One of:"),
        ("kind", ["fact"], "One of:"),  # a list or an object is a value like any other: refused, not raised
        ("signal", {"self": 1}, "One of:"),
        ("confidence", 1.5, "A number from 0 to 1."),
    ],
)
def test_create_candidate_refuses_bad_fields_and_writes_nothing(db, field, value, message):
    with pytest.raises(ValidationError) as exc:
        services.create_candidate(data=candidate_data(**{field: value}), actor_label="agent:ci")
    assert message in exc.value.message_dict[field][0]
    assert not Entry.objects.exists() and not Event.objects.exists()


def test_evidence_whose_choices_are_lists_or_objects_is_refused_field_by_field(db):
    piece = {"kind": ["tool_output"], "signal": {"a": 1}, "polarity": ["supports"], "source": ["own"], "excerpt": "x"}
    with pytest.raises(ValidationError) as exc:
        services.create_candidate(data=candidate_data(), evidence=[piece], actor_label="agent:ci")
    errors = exc.value.message_dict
    assert [errors[f"evidence[0].{name}"][0][:7] for name in ("kind", "signal", "source")] == ["One of:"] * 3
    assert errors["evidence[0].polarity"] == ["supports or contradicts."]
    assert not Entry.objects.exists()


def test_similar_active_entries_are_linked(make_candidate, lead):
    first = make_candidate()
    services.approve_candidate(first.pk, actor=lead, expected_version=first.version)
    near = make_candidate(content=first.content + " Then run the config check.")
    [link] = SimilarEntry.objects.filter(candidate=near)
    assert link.similar_id == first.pk and link.score >= 0.35


def test_approve_candidate(make_candidate, reviewer):
    entry = make_candidate()
    approved = services.approve_candidate(entry.pk, actor=reviewer, expected_version=1, reason="checked the logs")
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.version, fresh.queued_at) == (Status.ACTIVE, 2, None)
    assert fresh.last_verified_at is not None and approved.version == 2
    event = events(entry)[-1]
    assert (event.action, event.actor, event.actor_label, event.reason) == (
        "approve",
        reviewer,
        "rita",
        "checked the logs",
    )
    assert event.before["status"] == "pending" and event.after["status"] == "active"
    assert event.entry_version == 2 and event.entry_label.startswith(f"#{entry.pk} acme/billing-api/container")


def test_edit_and_approve_records_before_and_after(make_candidate, reviewer):
    entry = make_candidate()
    services.edit_and_approve(
        entry.pk,
        actor=reviewer,
        expected_version=1,
        changes={"scope": "acme/billing-api", "boundary": "Not on the host.", "conditions": "container, config, git"},
    )
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.scope, fresh.boundary, fresh.conditions, fresh.status) == (
        "acme/billing-api",
        "Not on the host.",
        ["container", "config", "git"],
        Status.ACTIVE,
    )
    event = events(entry)[-1]
    assert event.action == "edit_approve" and event.reason == "edited scope, boundary, conditions"
    assert event.before["scope"] == "acme/billing-api/container" and event.after["scope"] == "acme/billing-api"


def test_edit_with_illegal_scope_changes_nothing(make_candidate, reviewer):
    entry = make_candidate()
    with pytest.raises(ValidationError) as exc:
        services.edit_and_approve(entry.pk, actor=reviewer, expected_version=1, changes={"scope": "acme/Billing API"})
    assert "Illegal scope segment 'Billing API'" in exc.value.message_dict["scope"][0]
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.scope, fresh.version) == (Status.PENDING, "acme/billing-api/container", 1)
    assert [e.action for e in events(entry)] == ["submit"]


def test_reject_needs_a_reason(make_candidate, reviewer):
    entry = make_candidate()
    with pytest.raises(ValidationError) as exc:
        services.reject_candidate(entry.pk, actor=reviewer, expected_version=1, reason="  ")
    assert "reason" in exc.value.message_dict
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING
    services.reject_candidate(entry.pk, actor=reviewer, expected_version=1, reason="too broad")
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.queued_at) == (Status.REJECTED, None)
    event = events(entry)[-1]
    assert (event.action, event.reason, event.after["status"]) == ("reject", "too broad", "rejected")


def test_defer_moves_it_out_of_the_ready_queue(make_candidate, reviewer):
    entry = make_candidate()
    before = timezone.now()
    services.defer_candidate(entry.pk, actor=reviewer, expected_version=1, hours=48)
    fresh = Entry.objects.get(pk=entry.pk)
    assert fresh.status == Status.PENDING and fresh.queued_at > before + datetime.timedelta(hours=47)
    event = events(entry)[-1]
    assert event.action == "defer" and event.reason.startswith("deferred until")


def test_stale_decision_changes_nothing_and_says_who_acted(make_candidate, reviewer, second_reviewer):
    entry = make_candidate()
    services.reject_candidate(entry.pk, actor=second_reviewer, expected_version=1, reason="duplicate of #3")
    with pytest.raises(StaleDecision) as exc:
        services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    assert "rob (reject)" in str(exc.value)
    assert [e.reason for e in exc.value.changes] == ["duplicate of #3"]
    fresh = Entry.objects.get(pk=entry.pk)
    assert (fresh.status, fresh.version) == (Status.REJECTED, 2)
    assert [e.action for e in events(entry)] == ["submit", "reject"]


def test_decided_entry_cannot_be_decided_again(make_candidate, reviewer):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    with pytest.raises(InvalidTransition):
        services.reject_candidate(entry.pk, actor=reviewer, expected_version=2, reason="changed my mind")


def test_auditor_and_roleless_users_cannot_decide(make_candidate, auditor, nobody):
    entry = make_candidate()
    for user in (auditor, nobody):
        with pytest.raises(PermissionDenied):
            services.approve_candidate(entry.pk, actor=user, expected_version=1)
    assert Entry.objects.get(pk=entry.pk).status == Status.PENDING


def test_scoped_reviewer_cannot_reach_other_scopes(make_candidate, scoped_reviewer):
    outside = make_candidate(scope="acme/web")
    lookalike = make_candidate(scope="acme/billing-api-v2")  # a prefix of the name, not of the path
    inside = make_candidate(scope="acme/billing-api/container")
    for entry in (outside, lookalike):
        with pytest.raises(Entry.DoesNotExist):
            services.approve_candidate(entry.pk, actor=scoped_reviewer, expected_version=1)
    services.approve_candidate(inside.pk, actor=scoped_reviewer, expected_version=1)
    with pytest.raises(ValidationError):
        services.edit_and_approve(
            make_candidate().pk, actor=scoped_reviewer, expected_version=1, changes={"scope": "acme/web"}
        )


def test_active_recheck_confirm_and_retire(make_candidate, reviewer):
    entry = make_candidate()
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1)
    # a recheck puts the active entry back in the queue (the lifecycle issue's sweeps do this)
    Entry.objects.filter(pk=entry.pk).update(queued_at=timezone.now(), queue_reason="recheck_failure", version=3)
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=3)
    assert events(entry)[-1].action == "confirm"
    Entry.objects.filter(pk=entry.pk).update(queued_at=timezone.now(), queue_reason="recheck_review_due", version=5)
    services.reject_candidate(entry.pk, actor=reviewer, expected_version=5, reason="no longer true after v2")
    fresh = Entry.objects.get(pk=entry.pk)
    assert fresh.status == Status.RETIRED and events(entry)[-1].action == "retire"


def test_bulk_decide_reports_each_item(make_candidate, reviewer, second_reviewer):
    a, b, c = (make_candidate(trigger=f"Editing config files, case {i}") for i in "abc")
    services.approve_candidate(b.pk, actor=second_reviewer, expected_version=1)
    outcomes = services.bulk_decide(
        [(a.pk, 1), (b.pk, 1), (c.pk, 1), (999999, 1)], actor=reviewer, action="reject", reason="not specific enough"
    )
    assert [o.ok for o in outcomes] == [True, False, True, False]
    assert "rob (approve)" in outcomes[1].message and outcomes[3].message == "not found"
    assert Entry.objects.get(pk=a.pk).status == Entry.objects.get(pk=c.pk).status == Status.REJECTED
    assert Entry.objects.get(pk=b.pk).status == Status.ACTIVE


def test_add_evidence_appends_with_event(make_candidate, reviewer):
    entry = make_candidate()
    services.add_evidence(
        entry.pk,
        actor=reviewer,
        data={
            "kind": "user_statement",
            "signal": "external",
            "polarity": "contradicts",
            "excerpt": "Not on prod hosts.",
        },
    )
    ev = Evidence.objects.get(entry=entry)
    assert (ev.polarity, ev.recorded_by, ev.recorded_by_label) == ("contradicts", reviewer, "rita")
    event = events(entry)[-1]
    assert event.action == "add_evidence" and event.after["evidence_id"] == ev.pk
    with pytest.raises(ValidationError):
        services.add_evidence(entry.pk, actor=reviewer, data={"kind": "gossip", "signal": "self", "excerpt": ""})
    assert Evidence.objects.filter(entry=entry).count() == 1
