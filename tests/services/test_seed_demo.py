"""`manage.py seed_demo`: a demo set in every state, made through the services, loaded once."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db.models import Count, Min
from django.test import RequestFactory

from curation import selectors
from curation.rules import lifecycle
from curation.management.commands.seed_demo import DEFAULT_PASSWORD, DEMO_TASK_PREFIX
from curation.models import (
    AgentToken,
    Conflict,
    ConsolidationProposal,
    Entry,
    Event,
    Evidence,
    QueueReason,
    ScopeGrant,
    SimilarEntry,
    SkillProposal,
    Status,
    TaskRun,
)
from curation.selectors import skills as skill_reads
from curation.sweeps.skill_nomination import recent_outcomes
from tests.factories import active

PASSWORD = "demo-pass-123"

pytestmark = pytest.mark.django_db


def seed(**options):
    out = StringIO()
    call_command("seed_demo", stdout=out, **options)
    return out.getvalue()


@pytest.fixture
def seeded():
    return seed(password=PASSWORD)


def test_loads_a_demo_set_in_every_state(seeded):
    assert Entry.objects.count() >= 60
    assert not Entry.objects.exclude(source_task__startswith=DEMO_TASK_PREFIX).exists()
    present = set(Entry.objects.values_list("status", flat=True))
    assert present == set(Status.values)
    pending = Entry.objects.filter(status=Status.PENDING).count()
    assert pending > Entry.objects.count() / 3
    assert set(Entry.objects.values_list("signal", flat=True)) == {"self", "independent", "external"}
    assert Entry.objects.filter(status=Status.PENDING, boundary="").exists()
    assert Entry.objects.filter(status=Status.PENDING, evidence__polarity="contradicts").exists()
    assert Entry.objects.values("scope").distinct().count() >= 7


def test_rechecks_are_active_entries_in_the_queue(seeded):
    rechecks = Entry.objects.filter(queue_reason__in=[QueueReason.RECHECK_FAILURE, QueueReason.RECHECK_REVIEW_DUE])
    assert {e.queue_reason for e in rechecks} == {QueueReason.RECHECK_FAILURE, QueueReason.RECHECK_REVIEW_DUE}
    # sent back the way the product does it: an agent's failed task, or the review_due sweep
    sent_back_by = {QueueReason.RECHECK_FAILURE: "outcome_failure", QueueReason.RECHECK_REVIEW_DUE: "queue_recheck"}
    for entry in rechecks:
        assert entry.status == Status.ACTIVE and entry.queued_at is not None
        assert entry.events.filter(action=sent_back_by[entry.queue_reason]).exists()


def test_a_review_due_recheck_is_the_sweeps_event(seeded):
    assert not Event.objects.filter(action="recheck").exists()
    rechecked = Event.objects.filter(action="queue_recheck")
    assert rechecked.exists()
    assert set(rechecked.values_list("actor_label", flat=True)) == {"lifecycle:review_due"}
    assert all(e.reason.startswith("review date ") for e in rechecked)


def test_failed_tasks_send_entries_back_for_a_recheck(seeded):
    failed = Event.objects.filter(action="outcome_failure")
    assert failed.count() >= 2
    for event in failed:
        assert "sent back to the candidates queue for a recheck" in event.reason
        assert event.actor is None and event.actor_label.startswith("agent:")


def test_retired_entries_were_back_in_the_queue_when_the_lead_rejected_them(seeded):
    retired = Entry.objects.filter(status=Status.RETIRED)
    assert retired.count() >= 3
    for entry in retired:
        actions = [e.action for e in entry.events.order_by("created_at", "id")]
        assert actions[-2:] in (["queue_recheck", "retire"], ["outcome_failure", "retire"]), actions


def test_every_entry_has_a_history_that_starts_with_its_submission(seeded):
    assert not Entry.objects.annotate(n=Count("events")).filter(n=0).exists()
    for entry in Entry.objects.prefetch_related("events"):
        events = sorted(entry.events.all(), key=lambda e: (e.created_at, e.pk))
        assert events[0].action == "submit" and events[0].actor is None
        assert events[0].actor_label.startswith("agent:")
        assert [e.pk for e in events] == sorted(e.pk for e in events), f"#{entry.pk}: history out of order"
        assert [e.entry_version for e in events if e.action != "add_evidence"] == sorted(
            e.entry_version for e in events if e.action != "add_evidence"
        )
        assert events[-1].entry_version == entry.version
        assert events[0].created_at == entry.created_at
        if entry.status != Status.PENDING:
            assert len(events) >= 2 and events[-1].created_at > events[0].created_at


def test_history_is_spread_over_about_ninety_days(seeded):
    oldest = Event.objects.aggregate(first=Min("created_at"))["first"]
    newest = Event.objects.latest("created_at").created_at
    assert 60 <= (newest - oldest).days <= 95


def test_decisions_are_the_leads(seeded):
    lead = User.objects.get(username="lead")
    decisions = Event.objects.filter(action__in=["approve", "edit_approve", "reject", "defer", "supersede", "retire"])
    assert decisions.exists()
    assert set(decisions.values_list("actor", flat=True)) == {lead.pk}
    assert Event.objects.filter(action="edit_approve").exists()
    assert Event.objects.filter(action="defer").exists()


def test_superseded_entries_are_replaced_by_a_newer_entry(seeded):
    superseded = Entry.objects.filter(status=Status.SUPERSEDED)
    assert superseded.count() >= 3
    for old in superseded:
        newer = Entry.objects.get(supersedes=old)
        assert newer.created_at > old.created_at
        # the lead accepted the consolidation sweep's proposal to replace the older entry by the newer one
        proposal = old.consolidation_proposals.get(state="accepted", kind="supersede", target=newer)
        assert old.events.filter(
            action="supersede", reason=f"consolidation #{proposal.pk}: outdated, replaced by #{newer.pk}"
        ).exists()
    # a chain of three: an active entry replaces a superseded one that replaced another
    assert Entry.objects.filter(
        status=Status.ACTIVE, supersedes__status=Status.SUPERSEDED, supersedes__supersedes__isnull=False
    ).exists()


def test_archived_entries_say_why(seeded):
    archived = Entry.objects.filter(status=Status.ARCHIVED)
    reasons = list(Event.objects.filter(entry__in=archived, action="archive").values_list("reason", flat=True))
    assert len(reasons) == archived.count()
    # the reasons the archive (decay) and low_utility sweeps write
    assert any(r.startswith("decayed: confidence ") and r.endswith("below 0.3") for r in reasons)
    assert any(r.startswith("low utility: average ") for r in reasons)
    for entry in archived:
        if entry.events.get(action="archive").reason.startswith("decayed"):
            assert entry.confidence < 0.3
        if entry.archive_reason == "low utility":  # waits in the queue for a reviewer to keep or retire it
            assert entry.queue_reason == QueueReason.RECHECK_LOW_UTILITY and entry.queued_at is not None


def signs_in(username, password):
    """The user the login form would sign in (the throttling backend wants the request)."""
    return authenticate(RequestFactory().post("/accounts/login/"), username=username, password=password)


def test_users_can_log_in_and_have_their_roles(seeded):
    for username, group in [
        ("reviewer", "reviewer"),
        ("lead", "lead"),
        ("auditor", "auditor"),
        ("reviewer-billing", "reviewer"),
    ]:
        user = signs_in(username, password=PASSWORD)
        assert user is not None, username
        assert list(user.groups.values_list("name", flat=True)) == [group]
    assert list(ScopeGrant.objects.filter(user__username="reviewer-billing").values_list("prefix", flat=True)) == [
        "acme/billing-api"
    ]
    # Every scope is a grant like any other: the demo's unrestricted people are given it.
    assert sorted(
        ScopeGrant.objects.exclude(user__username="reviewer-billing").values_list("user__username", "prefix")
    ) == [
        ("auditor", "*"),
        ("lead", "*"),
        ("reviewer", "*"),
    ]
    assert User.objects.get(username="lead").has_perm("curation.review_entry")
    assert not User.objects.get(username="auditor").has_perm("curation.review_entry")
    assert "reviewer-billing" in seeded and PASSWORD in seeded


def test_default_password_and_existing_passwords_are_kept():
    User.objects.create_user("auditor", password="my-own-password")
    seed()
    assert signs_in("lead", password=DEFAULT_PASSWORD) is not None
    assert signs_in("auditor", password="my-own-password") is not None
    assert signs_in("auditor", password=DEFAULT_PASSWORD) is None
    seed(password="changed-on-purpose")
    assert signs_in("auditor", password="changed-on-purpose") is not None


def test_running_twice_adds_nothing(seeded):
    counts = (
        Entry.objects.count(),
        Event.objects.count(),
        Evidence.objects.count(),
        SimilarEntry.objects.count(),
        User.objects.count(),
        ScopeGrant.objects.count(),
    )
    output = seed(password=PASSWORD)
    assert "no entries added" in output
    assert (
        Entry.objects.count(),
        Event.objects.count(),
        Evidence.objects.count(),
        SimilarEntry.objects.count(),
        User.objects.count(),
        ScopeGrant.objects.count(),
    ) == counts
    assert signs_in("reviewer", password=PASSWORD) is not None


def test_pending_near_duplicates_show_similar_active_entries(seeded):
    links = SimilarEntry.objects.filter(candidate__status=Status.PENDING, similar__status=Status.ACTIVE)
    assert links.values("candidate").distinct().count() >= 3


def test_summary_and_agent_token(seeded):
    for status in Status.values:
        assert status in seeded
    output = seed(agent_token="demo-token-0123456789")
    assert "Bearer demo-token-0123456789" in output
    token = AgentToken.objects.get(name="demo-agent")
    assert token.key_hash != "demo-token-0123456789" and len(token.key_hash) == 64  # only the hash is kept
    assert token.scopes == ["acme", "globex", "initech"]
    scopes = set(Entry.objects.values_list("scope", flat=True))
    assert all(any(s == p or s.startswith(p + "/") for p in token.scopes) for s in scopes)
    assert "already present" in seed(agent_token="demo-token-0123456789")
    assert AgentToken.objects.filter(name="demo-agent").count() == 1


def test_the_skill_promotions_queue_has_something_to_show(seeded):

    approved = SkillProposal.objects.get(status="approved")
    nominated = SkillProposal.objects.get(status="nominated")
    assert approved.decided_by.username == "lead" and approved.rollback.startswith("`pg_restore")
    assert skill_reads.skill_card(approved.decided_by, approved.pk).progress.label == "5 of 5 trials succeeded"
    lead = User.objects.get(username="lead")
    card = skill_reads.skill_card(lead, nominated.pk)
    assert card.progress.label == "3 of 5 trials succeeded" and card.blockers == [
        "3 of 5 trials reported: 2 more needed"
    ]
    # the nominated entry passes the gates the way the sweep saw it
    entry = nominated.nominated_entry
    outcomes = recent_outcomes([entry.pk], window=10, as_of=nominated.created_at)[entry.pk]
    assert lifecycle.is_nominable(
        kind=entry.kind,
        status=entry.status,
        hit_count=entry.hit_count,
        utility_sum=entry.utility_sum,
        utility_n=entry.utility_n,
        recent_outcomes=outcomes,
        has_rollback_note=True,
        gates=lifecycle.skill_gates(),
    )
    # the approved skill's source is withheld from retrieval
    source = approved.nominated_entry
    ranked = selectors.retrieve_memory(
        scopes=["acme", "acme/billing-api", "acme/billing-api/container"],
        q="resetting the test database",
        k=5,
        min_confidence=0.0,
    )
    assert source.pk not in [r.entry.pk for r in ranked]
    assert "Skills: 1 nominated, 1 approved, 0 rejected, 0 retired" in seeded


def test_the_conflict_and_consolidation_queues_have_something_to_show(seeded):

    [conflict] = Conflict.objects.filter(state="open")
    assert {conflict.entry_a.trigger, conflict.entry_b.trigger} == {
        "Updating a feature branch before review in billing-api",
        "Updating a shared feature branch before review",
    }
    assert "rebase" in conflict.reason and conflict.detected_by == "sweep"
    [proposal] = ConsolidationProposal.objects.filter(state="open")
    assert proposal.kind == "merge" and proposal.scope == "acme/web" and proposal.entries.count() == 2
    assert set(TaskRun.objects.filter(triggered_by="demo").values_list("task", flat=True)) >= {
        "conflicts",
        "consolidation",
    }


def test_a_database_with_entries_of_its_own_is_left_alone(lead):
    """The replay's sweeps would act on those entries too: it refuses, says why, and adds nothing."""
    own = active(lead, scope="acme/web", trigger="Building the web bundle", content="Run `npm ci` first.")
    with pytest.raises(CommandError, match="fills an empty database, and this one holds 1 entries"):
        seed()
    assert list(Entry.objects.values_list("pk", flat=True)) == [own.pk]
    assert Entry.objects.get(pk=own.pk).version == own.version
