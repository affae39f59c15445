"""The skill decisions: edit the draft, reject, approve (leads, with the trials gate), retire; each with its
Events, each refused to the wrong role; and what an approved skill does to retrieval and the unused sweep."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Exists

from curation import selectors
from curation.models import Entry, Event, SkillProposal, SkillSource, SkillTrial, Status
from curation.services import skills
from curation.services.errors import GateNotMet, InvalidTransition, StaleProposal
from curation.sweeps import run_sweep
from tests.factories import AS_OF, agent_token, days_before, make_entry, make_user, nominated, ready_entry, report

pytestmark = pytest.mark.django_db


def fresh(proposal):
    return SkillProposal.objects.get(pk=proposal.pk)


def approve(proposal, lead, **kwargs):
    return skills.approve_skill(proposal.pk, actor=lead, expected_version=fresh(proposal).version, **kwargs)


# --- editing the draft --------------------------------------------------------------------------------


def test_edit_changes_only_what_changed_and_writes_an_event(reviewer):
    p = nominated()
    outcome = skills.edit_skill_draft(
        p.pk,
        actor=reviewer,
        expected_version=1,
        changes={
            "slug": "migrate-billing-from-srv-app",
            "description": p.description,
            "pitfalls": "Never from /workspace.",
        },
    )
    p = fresh(p)
    assert outcome.changed == ("slug", "pitfalls")
    assert (p.slug, p.pitfalls, p.version, p.revision) == (
        "migrate-billing-from-srv-app",
        "Never from /workspace.",
        2,
        1,
    )
    [event] = Event.objects.filter(action="skill_draft_edited")
    assert (event.skill_id, event.entry_id, event.actor) == (p.pk, None, reviewer)
    assert event.before == {
        "slug": "running-migrations-in-the-billing-api-container",
        "pitfalls": "Not on the host checkout, where `make migrate` sets the directory.",
    }
    assert event.after["slug"] == "migrate-billing-from-srv-app" and event.after["proposal_version"] == 2
    assert event.reason == "edited slug, pitfalls"
    # The same values again: nothing written.
    skills.edit_skill_draft(p.pk, actor=reviewer, expected_version=2, changes={"pitfalls": "Never from /workspace."})
    assert fresh(p).version == 2 and Event.objects.filter(action="skill_draft_edited").count() == 1


def test_changing_the_steps_starts_the_trials_again(reviewer, lead):
    p = nominated()
    report(p, ["success"] * 5)
    skills.edit_skill_draft(
        p.pk, actor=reviewer, expected_version=1, changes={"steps": "1. Run migrate from /srv/app."}
    )
    p = fresh(p)
    assert p.revision == 2
    assert "revision 2: its trials start again" in Event.objects.get(action="skill_draft_edited").reason
    with pytest.raises(GateNotMet, match="0 of 5 trials reported: 5 more needed"):
        approve(p, lead)
    report(p, ["success"] * 5, prefix="rev2")
    assert approve(p, lead).proposal.status == "approved"
    assert SkillTrial.objects.filter(proposal=p).count() == 10  # the earlier trials are kept, not counted


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"slug": "Migrate_Billing"}, "slug", "Lowercase letters a-z"),
        ({"slug": "a--b"}, "slug", "single hyphens"),
        ({"slug": "x" * 65}, "slug", "At most 64 characters"),
        ({"slug": ""}, "slug", "Name the skill"),
        ({"rollback": "  "}, "rollback", "rollback path"),
        ({"steps": ""}, "steps", "needs its steps"),
        ({"description": "d" * 1025}, "description", "At most 1,024 characters"),
        ({"description": "bad\x00"}, "description", "NUL"),
        ({"pitfalls": ["a"]}, "pitfalls", "Must be text."),
        ({"tigger": "x"}, "tigger", "Unknown field."),
        ({"sources": "twelve"}, "sources", "Entry ids"),
        ({"sources": ""}, "sources", "stays a source"),
    ],
)
def test_bad_edits_are_refused_per_field(reviewer, changes, field, message):
    p = nominated()
    with pytest.raises(ValidationError) as refused:
        skills.edit_skill_draft(p.pk, actor=reviewer, expected_version=1, changes=changes)
    assert message in " ".join(refused.value.message_dict[field])
    assert fresh(p).version == 1


def test_a_slug_taken_by_another_skill_is_refused(reviewer):
    p = nominated()
    other = nominated(scope="acme/billing-api/host")
    with pytest.raises(ValidationError, match="Already the name of skill"):
        skills.edit_skill_draft(other.pk, actor=reviewer, expected_version=1, changes={"slug": p.slug})


def test_sources_can_be_added_within_the_scope_and_removed(reviewer):
    p = nominated()
    sibling = make_entry(scope="acme/billing-api/container/ci", trigger="Migrations on CI")
    outside = make_entry(scope="acme/web", trigger="Migrations on the web")
    archived = make_entry(scope="acme/billing-api/container", status=Status.ARCHIVED)
    with pytest.raises(ValidationError) as refused:
        skills.edit_skill_draft(
            p.pk,
            actor=reviewer,
            expected_version=1,
            changes={"sources": f"#{p.nominated_entry_id}, #{outside.pk} #{archived.pk} 999999"},
        )
    problems = refused.value.message_dict["sources"]
    assert any("outside the skill's scope" in m for m in problems) and any("is archived" in m for m in problems)
    assert any("#999999: no such entry" in m for m in problems)
    skills.edit_skill_draft(
        p.pk, actor=reviewer, expected_version=1, changes={"sources": f"#{p.nominated_entry_id}, #{sibling.pk}"}
    )
    assert set(fresh(p).entries.values_list("pk", flat=True)) == {p.nominated_entry_id, sibling.pk}
    # One Event about the skill names the new source, and the source's own timeline shows it.
    [edit] = Event.objects.filter(skill=p, action="skill_draft_edited")
    assert edit.after["sources"] == [p.nominated_entry_id, sibling.pk]
    timeline = selectors.entry_timeline(reviewer, Entry.objects.get(pk=sibling.pk))
    assert edit in [t.item for t in timeline if t.kind == "event"]
    # Another proposal cannot take a live source.
    other = nominated(scope="acme/billing-api/container/ci", trigger="Running the CI migrations")
    with pytest.raises(ValidationError, match="already a source of skill"):
        skills.edit_skill_draft(
            other.pk, actor=reviewer, expected_version=1, changes={"sources": [other.nominated_entry_id, sibling.pk]}
        )
    skills.edit_skill_draft(p.pk, actor=reviewer, expected_version=2, changes={"sources": [p.nominated_entry_id]})
    assert not SkillSource.objects.get(proposal=p, entry=sibling).live
    assert list(fresh(p).sources.filter(live=True).values_list("entry_id", flat=True)) == [p.nominated_entry_id]


def test_secrets_typed_into_the_draft_are_redacted(reviewer):
    p = nominated()
    skills.edit_skill_draft(
        p.pk,
        actor=reviewer,
        expected_version=1,
        changes={"parameters": "Log in with password=hunter2-very-secret-Xk29dQ before running it."},
    )
    p = fresh(p)
    assert "hunter2-very-secret-Xk29dQ" not in p.parameters and "[REDACTED" in p.parameters
    assert p.flags and "redacted" in Event.objects.get(action="skill_draft_edited").reason


def test_stale_edit_is_refused_with_what_changed(reviewer, second_reviewer):
    p = nominated()
    skills.edit_skill_draft(p.pk, actor=second_reviewer, expected_version=1, changes={"pitfalls": "rob was here"})
    with pytest.raises(StaleProposal) as stale:
        skills.edit_skill_draft(p.pk, actor=reviewer, expected_version=1, changes={"pitfalls": "rita was here"})
    assert "rob (skill_draft_edited)" in str(stale.value)
    assert fresh(p).pitfalls == "rob was here"


# --- approval ---------------------------------------------------------------------------------------------


def test_lead_approves_with_five_successful_trials(lead):
    p = nominated()
    report(p, ["success"] * 5)
    outcome = approve(p, lead, note="ready")
    p = fresh(p)
    assert (p.status, p.decided_by, p.decision_note, p.version) == ("approved", lead, "ready", 2)
    [event] = Event.objects.filter(action="skill_approved")
    assert (event.skill_id, event.entry_id, event.actor) == (p.pk, None, lead)
    assert (event.before, event.after["status"]) == ({"status": "nominated"}, "approved")
    assert outcome.proposal.status == "approved"
    assert Entry.objects.get(pk=p.nominated_entry_id).status == Status.ACTIVE  # the entry stays; it is withheld


def test_the_trials_gate_is_enforced_by_the_service(lead):
    p = nominated()
    report(p, ["success"] * 4)
    with pytest.raises(GateNotMet, match="4 of 5 trials reported: 1 more needed"):
        approve(p, lead)
    report(p, ["failure"], prefix="late")
    with pytest.raises(GateNotMet, match="1 trial of this revision failed"):
        approve(p, lead)
    report(p, ["success"] * 3, prefix="more")  # 8 reported, 7 successful: still refused
    with pytest.raises(GateNotMet):
        approve(p, lead)
    assert fresh(p).status == "nominated" and not Event.objects.filter(action="skill_approved").exists()


def test_the_required_number_of_trials_is_a_setting(lead, settings):
    settings.CURATION = {**settings.CURATION, "SKILL_TRIALS_REQUIRED": 2}
    p = nominated()
    report(p, ["success"] * 2)
    assert approve(p, lead).proposal.status == "approved"


def test_a_source_that_left_the_active_set_blocks_approval(lead):
    p = nominated()
    report(p, ["success"] * 5)
    Entry.objects.filter(pk=p.nominated_entry_id).update(status=Status.ARCHIVED)
    with pytest.raises(GateNotMet, match=f"source entry #{p.nominated_entry_id} is now archived"):
        approve(p, lead)


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_only_a_lead_approves(role):
    user = make_user(f"{role}-x", role)
    p = nominated()
    report(p, ["success"] * 5)
    with pytest.raises(PermissionDenied, match="Only a lead may approve"):
        skills.approve_skill(p.pk, actor=user, expected_version=1)
    assert fresh(p).status == "nominated"


def test_auditor_changes_nothing(auditor):
    p = nominated()
    events = Event.objects.count()
    calls = [
        lambda: skills.edit_skill_draft(p.pk, actor=auditor, expected_version=1, changes={"pitfalls": "x"}),
        lambda: skills.reject_skill(p.pk, actor=auditor, expected_version=1, reason="no"),
        lambda: skills.approve_skill(p.pk, actor=auditor, expected_version=1),
        lambda: skills.retire_skill(p.pk, actor=auditor, expected_version=1, reason="no"),
    ]
    for call in calls:
        with pytest.raises(PermissionDenied):
            call()
    assert fresh(p).version == 1 and Event.objects.count() == events


def test_outside_the_actors_scopes_the_proposal_does_not_exist():
    web_lead = make_user("wendy", "lead", scopes=["acme/web"])
    p = nominated()
    with pytest.raises(SkillProposal.DoesNotExist):
        skills.reject_skill(p.pk, actor=web_lead, expected_version=1, reason="not mine")


def test_a_decided_proposal_is_not_decided_again(lead, reviewer):
    p = nominated()
    skills.reject_skill(p.pk, actor=reviewer, expected_version=1, reason="too narrow")
    with pytest.raises(InvalidTransition, match="already rejected by rita"):
        skills.approve_skill(p.pk, actor=lead, expected_version=2)
    with pytest.raises(InvalidTransition):
        skills.edit_skill_draft(p.pk, actor=lead, expected_version=2, changes={"pitfalls": "x"})


# --- reject and retire ------------------------------------------------------------------------------------


def test_reviewer_rejects_with_a_reason(reviewer):
    p = nominated()
    with pytest.raises(ValidationError, match="Say why"):
        skills.reject_skill(p.pk, actor=reviewer, expected_version=1, reason=" ")
    skills.reject_skill(p.pk, actor=reviewer, expected_version=1, reason="depends on the container layout")
    p = fresh(p)
    assert (p.status, p.decided_by, p.decision_note) == ("rejected", reviewer, "depends on the container layout")
    assert not SkillSource.objects.filter(proposal=p, live=True).exists()
    assert Event.objects.get(action="skill_rejected").reason == "depends on the container layout"


def test_retire_is_for_leads_and_gives_the_entries_back(lead, reviewer):
    p = nominated()
    report(p, ["success"] * 5)
    approve(p, lead)
    with pytest.raises(PermissionDenied, match="Only a lead may retire"):
        skills.retire_skill(p.pk, actor=reviewer, expected_version=2, reason="old")
    skills.retire_skill(p.pk, actor=lead, expected_version=2, reason="the container layout changed")
    p = fresh(p)
    assert (p.status, p.retired_by, p.retire_reason) == ("retired", lead, "the container layout changed")
    assert p.decided_by == lead  # who approved it is kept
    assert Event.objects.get(action="skill_retired").reason == "the container layout changed (back in retrieval)"
    with pytest.raises(InvalidTransition, match="only an approved skill is retired"):
        skills.retire_skill(p.pk, actor=lead, expected_version=3, reason="again")


@pytest.mark.parametrize("decision", ["approve", "reject", "retire"])
def test_a_decision_writes_one_event_about_the_skill_and_none_per_source(lead, decision):
    p = nominated()
    sibling = make_entry(scope="acme/billing-api/container/ci", trigger="Migrations on CI")
    skills.edit_skill_draft(
        p.pk, actor=lead, expected_version=1, changes={"sources": f"#{p.nominated_entry_id}, #{sibling.pk}"}
    )
    report(p, ["success"] * 5)
    entry_events = Event.objects.filter(entry__isnull=False).count()
    if decision == "reject":
        skills.reject_skill(p.pk, actor=lead, expected_version=2, reason="not a skill")
    else:
        approve(p, lead)
    if decision == "retire":
        skills.retire_skill(p.pk, actor=lead, expected_version=3, reason="outdated")
    action = {"approve": "skill_approved", "reject": "skill_rejected", "retire": "skill_retired"}[decision]
    [event] = Event.objects.filter(action=action)
    assert (event.skill_id, event.entry_id, event.entry_label) == (p.pk, None, fresh(p).label)
    assert event.after["proposal_version"] == fresh(p).version
    assert Event.objects.filter(entry__isnull=False).count() == entry_events  # nothing per source entry
    # The skill's history is its own Events: a decision made on an older version is told what changed.
    with pytest.raises(StaleProposal) as stale:
        skills.edit_skill_draft(p.pk, actor=lead, expected_version=2, changes={"pitfalls": "late"})
    assert event in stale.value.changes and f"lena ({action})" in str(stale.value)


# --- what an approved skill does to retrieval and to the sweeps --------------------------------------------


def retrievable(entry, q="migrations container"):
    ranked = selectors.retrieve_memory(
        scopes=["acme", "acme/billing-api", "acme/billing-api/container"], q=q, k=5, min_confidence=0.5
    )
    return entry.pk in [r.entry.pk for r in ranked]


@pytest.mark.parametrize("q", ["migrations container", ""])
def test_an_approved_skill_withholds_its_sources_until_retired(lead, q):
    p = nominated()
    entry = Entry.objects.get(pk=p.nominated_entry_id)
    other = make_entry(
        scope="acme/billing-api/container",
        trigger="Running migrations on the container host",
        content="Stop the worker before running migrations in the container.",
    )
    assert retrievable(entry, q) and retrievable(other, q)  # nominated: still retrieved
    report(p, ["success"] * 5)
    approve(p, lead)
    assert not retrievable(entry, q) and retrievable(other, q)
    skills.retire_skill(p.pk, actor=lead, expected_version=2, reason="superseded by a script")
    assert retrievable(entry, q)


@pytest.mark.parametrize("q", ["migrations container", ""])
def test_a_source_taken_out_of_the_draft_is_not_withheld(lead, reviewer, q):
    p = nominated()
    taken_out = make_entry(
        scope="acme/billing-api/container",
        trigger="Running migrations on the container host",
        content="Stop the worker before running migrations in the container.",
    )
    skills.edit_skill_draft(
        p.pk, actor=reviewer, expected_version=1, changes={"sources": [p.nominated_entry_id, taken_out.pk]}
    )
    skills.edit_skill_draft(p.pk, actor=reviewer, expected_version=2, changes={"sources": [p.nominated_entry_id]})
    report(p, ["success"] * 5)
    approve(p, lead)
    assert not retrievable(Entry.objects.get(pk=p.nominated_entry_id), q) and retrievable(taken_out, q)
    assert not Entry.objects.filter(pk=taken_out.pk).filter(Exists(selectors.withheld_by_skill())).exists()


def test_a_withheld_entry_is_not_archived_as_unused(lead):
    p = nominated(last_verified_at=days_before(90))
    report(p, ["success"] * 5)
    approve(p, lead)
    plain = ready_entry(trigger="Another procedure", last_verified_at=days_before(90))
    run_sweep("unused", as_of=AS_OF)
    assert Entry.objects.get(pk=p.nominated_entry_id).status == Status.ACTIVE
    assert Entry.objects.get(pk=plain.pk).status == Status.ARCHIVED


# --- trials --------------------------------------------------------------------------------------------------


def test_a_trial_is_counted_once_per_task_and_only_while_nominated(lead):
    p = nominated()
    token = agent_token()
    first = skills.record_skill_trial(token=token, slug=p.slug, data={"outcome": "success", "task_ref": "task-1"})
    again = skills.record_skill_trial(token=token, slug=p.slug, data={"outcome": "failure", "task_ref": "task-1"})
    assert first.recorded and not again.recorded and again.trial.pk == first.trial.pk
    assert again.progress.label == "1 of 5 trials succeeded"
    [event] = Event.objects.filter(action="skill_trial")
    assert event.actor_label == "agent:skill-agent" and "trial success in task-1" in event.reason
    report(p, ["success"] * 4, token=token, prefix="t")
    approve(p, lead)
    with pytest.raises(InvalidTransition, match="is approved: trials are reported while a skill is nominated"):
        skills.record_skill_trial(token=token, slug=p.slug, data={"outcome": "success", "task_ref": "task-9"})


def test_a_token_outside_the_scope_finds_no_skill():
    p = nominated()
    web = agent_token("web-agent", scopes=["acme/web"])
    with pytest.raises(SkillProposal.DoesNotExist):
        skills.record_skill_trial(token=web, slug=p.slug, data={"outcome": "success", "task_ref": "task-1"})
    assert not SkillTrial.objects.exists()


def test_nominate_skills_inserts_a_proposal_with_its_source_and_one_event_each():
    """The nomination sweep's insert: a draft per entry still active, its source, an Event about both;
    an entry another proposal took meanwhile is skipped, the others are nominated one at a time."""
    first = ready_entry()
    second = ready_entry(scope="acme/web", trigger="Running migrations in the web container")
    archived = ready_entry(scope="acme/search", status=Status.ARCHIVED)
    reason = lambda entry: f"{entry.hit_count} hits"  # noqa: E731
    assert skills.nominate_skills([second], reason_of=reason, actor_label="lifecycle:test", at=AS_OF) == 1
    made = skills.nominate_skills([first, second, archived], reason_of=reason, actor_label="lifecycle:test", at=AS_OF)
    assert made == 1  # second already has its live proposal; archived is no longer active
    proposal = SkillProposal.objects.get(nominated_entry=first)
    assert (proposal.reason, proposal.created_by_label, proposal.created_at) == ("12 hits", "lifecycle:test", AS_OF)
    assert proposal.slug == "running-migrations-in-the-billing-api-container"
    assert list(SkillSource.objects.filter(proposal=proposal).values_list("entry_id", "entry_version")) == [
        (first.pk, first.version)
    ]
    [event] = Event.objects.filter(action="skill_nominated", skill=proposal)
    assert event.entry_id == first.pk and event.actor_label == "lifecycle:test"
    assert event.reason == f"nominated as skill {proposal.slug}: 12 hits"
    assert SkillProposal.objects.filter(nominated_entry=second).count() == 1
    assert not SkillProposal.objects.filter(nominated_entry=archived).exists()
