"""One tombstone check on every text write: whatever writes an entry's lesson or makes it live (an approval of
a paraphrase pending since before the forget, an edit, a conflict's keep, split or merge, a consolidation, a
revival, an undo) is refused while a forgotten lesson's tombstone matches it; the forget card lists those
near duplicates to forget with it; and no release adds, changes or keeps one."""

import pytest
from django.core.exceptions import ValidationError

from curation import services
from curation.rules import clock
from curation.models import Conflict, ConsolidationProposal, Entry, EventAction, Status
from curation.rules.scope_policies import REVIEW
from curation.selectors import forgets as reads
from curation.selectors.releases import pending_changes, pre_publish_checks, published_number, released_entries
from curation.services import conflicts, consolidation
from curation.services.entry_writes import entry_row, insert_entries, insert_entry, write_entries, write_entry
from curation.services.errors import Forgotten
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.releases import publish_version
from curation.services.scope_policies import set_scope_policy
from curation.sweeps import consolidation as consolidation_sweep, run_sweep
from tests.factories import active, candidate_data, make_archived, make_user, publish_pending

pytestmark = pytest.mark.django_db

SCOPE = "acme/payroll"
LESSON = {
    "trigger": "Deploying the payroll service on Fridays",
    "content": "Always page Marguerite Okonkwo before deploying payroll, she holds the rollback keys.",
}
PARAPHRASE = {
    "trigger": "When deploying payroll service on a Friday",
    "content": "Page Marguerite Okonkwo before any payroll deploy: she holds rollback keys.",
}
OTHER = {
    "trigger": "Connecting to the billing database from the container",
    "content": "Probe port 5432 with nc before connecting.",
}


def pending(**fields):
    return services.create_candidate(data=candidate_data(scope=SCOPE, **fields), actor_label="agent:ci")


def forget(lesson, reviewer, lead, **options):
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead, **options)
    return request


@pytest.fixture
def lesson(lead):
    entry = active(lead, scope=SCOPE, **LESSON)
    publish_pending()
    return entry


def test_the_testers_story_a_pending_paraphrase_is_listed_ticked_and_never_approved_or_published(
    reviewer, second_reviewer, lead, lesson
):
    set_scope_policy(REVIEW, data={"prefix": SCOPE, "approvals": 2}, actor=lead)
    paraphrase = pending(**PARAPHRASE)  # submitted before the forget request: ingest called it a duplicate
    paraphrase = services.approve_candidate(paraphrase.pk, actor=reviewer, expected_version=paraphrase.version)
    assert paraphrase.first_approval_by == reviewer and paraphrase.status == Status.PENDING
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)

    # The forget card lists it, pending, as the same lesson: ticked by default.
    [(listed, _)] = [(e, s) for e, s in reads.forget_card(lead, request.pk).suggestions if e.pk == paraphrase.pk]
    assert (listed.status, listed.same_lesson, listed.deferred) == (Status.PENDING, True, False)

    # The lead unticks it: the forget goes through, the paraphrase stays pending with its text...
    approve_forget_request(request.pk, actor=lead, duplicate_ids=[])
    paraphrase.refresh_from_db()
    assert paraphrase.status == Status.PENDING and paraphrase.trigger == PARAPHRASE["trigger"]
    # ... and the second approval is refused, naming the request and never the text; nothing is written.
    with pytest.raises(Forgotten) as refused:
        services.approve_candidate(paraphrase.pk, actor=second_reviewer, expected_version=paraphrase.version)
    assert f"repeats a lesson forgotten by forget request #{request.pk}" in str(refused.value)
    assert "Marguerite" not in str(refused.value)
    assert Entry.objects.get(pk=paraphrase.pk).version == paraphrase.version
    assert not paraphrase.events.filter(action=EventAction.SECOND_APPROVAL).exists()

    # Written active behind the services' back, the next publish refuses it, whatever is acknowledged.
    Entry.objects.filter(pk=paraphrase.pk).update(status=Status.ACTIVE, queued_at=None)
    published = published_number()
    warnings = pre_publish_checks(pending_changes(""), kept_under="")
    assert [(w.check, w.entry_id, w.blocking) for w in warnings if w.check == "forgotten"] == [
        ("forgotten", paraphrase.pk, True)
    ]
    with pytest.raises(ValidationError) as blocked:
        publish_version(actor=lead, summary="weekly", acknowledge=True, also_entry_ids=[paraphrase.pk])
    assert f"#{paraphrase.pk} repeats a lesson forgotten by forget request #{request.pk}" in str(blocked.value)
    assert published_number() == published
    assert not released_entries(published).filter(entry_id=paraphrase.pk).exists()


def test_a_deferred_match_is_listed_as_deferred(reviewer, lead, lesson):
    paraphrase = pending(**PARAPHRASE)
    services.defer_candidate(paraphrase.pk, actor=reviewer, expected_version=paraphrase.version, hours=24)
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    [listed] = [e for e, _ in reads.forget_card(lead, request.pk).suggestions if e.pk == paraphrase.pk]
    assert listed.same_lesson and listed.deferred


def test_two_open_requests_about_the_same_lesson_list_each_other_on_the_page(reviewer, lead, lesson):
    twin = active(lead, scope=SCOPE, **PARAPHRASE)
    first = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    second = file_forget_request(entry_id=twin.pk, reason="the user asked too", actor=reviewer)
    listed = {
        r.pk: [e.pk for e, _ in r.suggestions if getattr(e, "same_lesson", False)]
        for r in reads.forget_queue(lead).items
    }
    assert listed == {first.pk: [twin.pk], second.pk: [lesson.pk]}


def test_approval_refuses_to_leave_an_active_match_the_lead_sees_unticked(reviewer, lead, lesson):
    twin = active(lead, scope=SCOPE, **PARAPHRASE)
    unrelated = active(lead, scope=SCOPE, **OTHER)
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    card = reads.forget_card(lead, request.pk)
    assert [e.pk for e, _ in card.suggestions if getattr(e, "same_lesson", False)] == [twin.pk]
    with pytest.raises(ValidationError) as refused:
        approve_forget_request(request.pk, actor=lead, duplicate_ids=[])
    assert f"#{twin.pk}" in str(refused.value) and "Tick" in str(refused.value)
    assert Entry.objects.get(pk=lesson.pk).status == Status.ACTIVE  # nothing was forgotten
    approve_forget_request(request.pk, actor=lead, duplicate_ids=[twin.pk])
    assert Entry.objects.get(pk=twin.pk).status == Status.RETIRED
    assert Entry.objects.get(pk=unrelated.pk).status == Status.ACTIVE


def test_an_active_match_outside_the_leads_scopes_is_kept_out_of_every_release(reviewer, lead, lesson):
    above = active(lead, scope="acme", **PARAPHRASE)  # an ancestor scope: it applies to payroll too
    publish_pending()
    payroll_lead = make_user("paula", "lead", scopes=[SCOPE])
    request = forget(lesson, reviewer, payroll_lead)  # the scoped lead cannot see it, so cannot tick it
    assert Entry.objects.get(pk=above.pk).status == Status.ACTIVE
    unrelated = active(lead, scope="acme/web", **OTHER)
    published = published_number()
    with pytest.raises(ValidationError) as blocked:  # it would be kept: the whole publish is refused
        publish_version(actor=lead, summary="weekly", acknowledge=True)
    assert f"#{above.pk} repeats a lesson forgotten by forget request #{request.pk}" in str(blocked.value)
    assert published_number() == published
    # A publish under another prefix does not keep it: it goes through.
    publish_version(actor=lead, summary="web only", scope_prefix="acme/web", acknowledge=True)
    assert released_entries(published_number()).filter(entry_id=unrelated.pk).exists()


def test_an_edit_on_approval_cannot_type_the_forgotten_lesson_back(reviewer, lead, lesson):
    forget(lesson, reviewer, lead)
    candidate = pending(**OTHER)
    with pytest.raises(Forgotten):
        services.edit_and_approve(candidate.pk, actor=reviewer, expected_version=candidate.version, changes=LESSON)
    candidate.refresh_from_db()
    assert (candidate.status, candidate.trigger) == (Status.PENDING, OTHER["trigger"])


def test_a_conflict_merge_keep_or_split_cannot_write_the_forgotten_lesson(reviewer, lead, lesson):
    paraphrase = pending(**PARAPHRASE)
    contrary = active(
        lead,
        scope=SCOPE,
        trigger="Deploying payroll on Fridays",
        content="Do not page Marguerite before deploying payroll.",
    )
    [conflict] = conflicts.detect_conflicts_for(paraphrase)
    forget(lesson, reviewer, lead)
    a, b = Entry.objects.get(pk=conflict.entry_a_id), Entry.objects.get(pk=conflict.entry_b_id)
    versions = {"version_a": a.version, "version_b": b.version}
    with pytest.raises(Forgotten):  # the merged entry would say the forgotten lesson
        conflicts.merge_conflict(
            conflict.pk, actor=reviewer, **versions, data={**candidate_data(scope=SCOPE), **LESSON}
        )
    with pytest.raises(Forgotten):  # keeping the pending paraphrase would make it active
        conflicts.keep_entry(conflict.pk, actor=reviewer, keep=paraphrase.pk, **versions)
    with pytest.raises(Forgotten):  # a split rewrites its scope and leaves it live
        conflicts.split_conflict(
            conflict.pk,
            actor=reviewer,
            **versions,
            changes_a={"scope": f"{SCOPE}/eu"},
            changes_b={"scope": f"{SCOPE}/us"},
        )
    assert Conflict.objects.get(pk=conflict.pk).state == Conflict.State.OPEN
    assert not Entry.objects.filter(trigger=LESSON["trigger"], status=Status.ACTIVE).exists()
    # Keeping the other side is allowed: its lesson is not the forgotten one.
    conflicts.keep_entry(conflict.pk, actor=reviewer, keep=contrary.pk, **versions)
    assert Entry.objects.get(pk=paraphrase.pk).status == Status.SUPERSEDED


def test_a_consolidation_accepted_with_the_forgotten_text_is_refused(reviewer, lead, lesson):
    for content in (
        OTHER["content"],
        OTHER["content"] + " Always.",
        "Probe the port 5432 with nc first, before connecting.",
    ):
        active(reviewer, scope=SCOPE, trigger=OTHER["trigger"], content=content)
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    forget(lesson, reviewer, lead)
    with pytest.raises(Forgotten):
        consolidation.accept_proposal(proposal.pk, actor=reviewer, edits=LESSON)
    assert ConsolidationProposal.objects.get(pk=proposal.pk).state == ConsolidationProposal.State.OPEN
    assert not Entry.objects.filter(trigger=LESSON["trigger"]).exclude(pk=lesson.pk).exists()


def test_an_archived_match_is_never_revived(reviewer, lead):
    archived = make_archived(archived_at=clock.now(), scope=SCOPE, **PARAPHRASE)
    lesson = active(lead, scope=SCOPE, **LESSON)
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    [listed] = [e for e, _ in reads.forget_card(lead, request.pk).suggestions if e.pk == archived.pk]
    assert listed.status == Status.ARCHIVED and listed.same_lesson
    approve_forget_request(request.pk, actor=lead, duplicate_ids=[])  # left unticked
    services.add_evidence(
        archived.pk,
        data={"kind": "user_statement", "signal": "external", "excerpt": "confirmed again by the payroll team"},
        actor_label="agent:ci",
    )
    run_sweep("revive")
    assert Entry.objects.get(pk=archived.pk).status == Status.ARCHIVED
    assert not Entry.objects.get(pk=archived.pk).events.filter(action=EventAction.REVIVE).exists()
    # An unrelated archived entry with fresh evidence still comes back.
    other = make_archived(archived_at=clock.now(), scope=SCOPE, **OTHER)
    services.add_evidence(
        other.pk,
        data={"kind": "user_statement", "signal": "external", "excerpt": "confirmed by the db team"},
        actor_label="agent:ci",
    )
    run_sweep("revive")
    assert Entry.objects.get(pk=other.pk).status == Status.ACTIVE


def test_undoing_a_rejection_of_a_match_is_refused(reviewer, lead, lesson):
    paraphrase = pending(**PARAPHRASE)
    forget(lesson, reviewer, lead)
    rejected = services.reject_candidate(
        paraphrase.pk, actor=reviewer, expected_version=paraphrase.version, reason="repeats a forgotten lesson"
    )
    with pytest.raises(Forgotten):  # back to pending, it would be approvable again
        services.undo_decision(paraphrase.pk, actor=reviewer, expected_version=rejected.version)
    assert Entry.objects.get(pk=paraphrase.pk).status == Status.REJECTED


# --- every function of the write path -----------------------------------------------------------------------


def _new(status=Status.PENDING, **text) -> Entry:
    now = clock.now()
    return Entry(
        kind="failure_lesson",
        scope=f"{SCOPE}/us",
        status=status,
        queued_at=now if status == Status.PENDING else None,
        signal="self",
        base_confidence=0.5,
        created_by_label="tests",
        created_at=now,
        updated_at=now,
        **{**OTHER, **text},
    )


def _fresh(entry: Entry) -> Entry:
    return Entry.objects.get(pk=entry.pk)


def _revive(rows):
    return write_entries(
        rows,
        expected_status=Status.ARCHIVED,
        action=EventAction.REVIVE,
        reason_of=str,
        actor_label="t",
        at=clock.now(),
        values={"status": Status.ACTIVE},
    )


# name: (the write, given the matches made before the forget and an unrelated pending entry; refused?)
WRITES = {
    "insert_entry: a pending match": (
        lambda m: insert_entry(_new(**PARAPHRASE), action=EventAction.SUBMIT, at=clock.now()),
        True,
    ),
    "insert_entry: an active match (a merge)": (
        lambda m: insert_entry(
            _new(Status.ACTIVE, **PARAPHRASE), action=EventAction.CONFLICT_MERGE, at=clock.now(), actor=m["reviewer"]
        ),
        True,
    ),
    "insert_entry: a held (rejected) match": (
        lambda m: insert_entry(_new(Status.REJECTED, **PARAPHRASE), action=EventAction.SUBMIT, at=clock.now()),
        False,
    ),
    "insert_entry: something else": (lambda m: insert_entry(_new(), action=EventAction.SUBMIT, at=clock.now()), False),
    "insert_entries: a batch with a match": (
        lambda m: insert_entries(
            [(_new(), ""), (_new(**PARAPHRASE), "")], action=EventAction.SUBMIT, at=clock.now(), actor_label="t"
        ),
        True,
    ),
    "write_entry: an edit to the lesson": (
        lambda m: write_entry(
            _fresh(m["other"]), dict(PARAPHRASE), action=EventAction.EDIT_APPROVE, at=clock.now(), actor=m["reviewer"]
        ),
        True,
    ),
    "write_entry: an approval of a pending match": (
        lambda m: write_entry(
            _fresh(m["pending"]),
            {"status": Status.ACTIVE, "queued_at": None},
            action=EventAction.APPROVE,
            at=clock.now(),
        ),
        True,
    ),
    "write_entry: a first approval of a pending match": (
        lambda m: write_entry(
            _fresh(m["pending"]),
            {"first_approval_by": m["reviewer"], "first_approval_at": clock.now()},
            action=EventAction.FIRST_APPROVAL,
            at=clock.now(),
            actor=m["reviewer"],
        ),
        True,
    ),
    "write_entry: a split of a pending match": (
        lambda m: write_entry(
            _fresh(m["pending"]),
            {"scope": f"{SCOPE}/eu"},
            action=EventAction.CONFLICT_SPLIT,
            at=clock.now(),
            actor=m["reviewer"],
        ),
        True,
    ),
    "write_entry: a reactivation of an archived match": (
        lambda m: write_entry(
            _fresh(m["archived"]),
            {"status": Status.ACTIVE, "archived_at": None},
            action=EventAction.REACTIVATE,
            at=clock.now(),
            actor=m["reviewer"],
        ),
        True,
    ),
    "write_entry: a deferral of a pending match": (
        lambda m: write_entry(
            _fresh(m["pending"]),
            {"queued_at": clock.now()},
            action=EventAction.DEFER,
            at=clock.now(),
            actor=m["reviewer"],
        ),
        False,
    ),
    "write_entry: a rejection of a pending match": (
        lambda m: write_entry(
            _fresh(m["pending"]),
            {"status": Status.REJECTED, "queued_at": None},
            action=EventAction.REJECT,
            at=clock.now(),
        ),
        False,
    ),
    "write_entry: the forget's own write": (
        lambda m: write_entry(
            _fresh(m["pending"]),
            {"status": Status.RETIRED, "queued_at": None},
            action=EventAction.FORGOTTEN,
            at=clock.now(),
            actor=m["lead"],
        ),
        False,
    ),
    "write_entries: a revival of an archived match": (lambda m: _revive([entry_row(_fresh(m["archived"]))]), True),
    "write_entries: an archive of a match": (
        lambda m: write_entries(
            [entry_row(_fresh(m["pending"]))],
            expected_status=Status.PENDING,
            action=EventAction.REJECT,
            reason_of=str,
            actor_label="t",
            at=clock.now(),
            values={"status": Status.REJECTED},
        ),
        False,
    ),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_every_write_path_function_checks_the_tombstones(name, reviewer, lead, lesson):
    made = {
        "pending": pending(**PARAPHRASE),
        "archived": make_archived(archived_at=clock.now(), scope=f"{SCOPE}/eu", **PARAPHRASE),
        "other": pending(**OTHER),
        "reviewer": reviewer,
        "lead": lead,
    }
    forget(lesson, reviewer, lead)
    write, refused = WRITES[name]
    if refused:
        with pytest.raises(Forgotten):
            write(made)
    else:
        write(made)


def test_with_no_tombstone_the_check_is_one_query(lead, django_assert_num_queries):
    entry = _new()
    # the tombstones of the overlapping scopes (none), the entry, its Event (pending: no band keys)
    with django_assert_num_queries(3):
        insert_entry(entry, action=EventAction.SUBMIT, at=clock.now())
