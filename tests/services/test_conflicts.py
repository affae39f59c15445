"""Conflict detection (at ingest and in the sweep) and every resolution, with their Events."""

import pytest

from curation import services
from curation.models import Conflict, Entry, Event, Status
from curation.services import conflicts
from curation.sweeps import conflicts as conflict_sweep
from tests.factories import active, candidate_data, make_user

pytestmark = pytest.mark.django_db


REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])


def pending(**fields):
    return services.create_candidate(data=candidate_data(**fields), actor_label="agent:ci")


def actions(entry):
    return list(Event.objects.filter(entry=entry).order_by("id").values_list("action", flat=True))


# --- detection at ingest ----------------------------------------------------------------------------


def test_a_new_candidate_contradicting_an_active_entry_opens_a_conflict(reviewer):
    old = active(reviewer, scope="acme/billing-api", **REBASE)
    new = pending(scope="acme/billing-api/container", **NO_REBASE)

    [conflict] = conflicts.detect_conflicts_for(new)

    assert (conflict.entry_a_id, conflict.entry_b_id) == (old.pk, new.pk)
    assert conflict.state == Conflict.State.OPEN and conflict.detected_by == "ingest"
    assert conflict.reason == '"always rebase" against "never rebase shared branches"'
    for entry, other in ((old, new), (new, old)):
        event = Event.objects.get(entry=entry, action="conflict_opened")
        assert event.actor_label == "detector:ingest" and event.actor is None
        assert event.after == {"conflict": conflict.pk, "with": other.pk, "reason": conflict.reason}
        assert f"with #{other.pk}" in event.reason


def test_a_known_pair_is_never_raised_again_in_any_state(reviewer):
    old = active(reviewer, scope="acme/billing-api", **REBASE)
    new = pending(scope="acme/billing-api", **NO_REBASE)
    [conflict] = conflicts.detect_conflicts_for(new)
    assert conflicts.detect_conflicts_for(new) == []
    Conflict.objects.filter(pk=conflict.pk).update(state=Conflict.State.DISMISSED)
    assert conflicts.detect_conflicts_for(new) == []
    assert conflict_sweep.sweep_conflicts().opened == []
    assert Conflict.objects.count() == 1
    assert Event.objects.filter(action="conflict_opened").count() == 2
    assert old.pk < new.pk


@pytest.mark.parametrize(
    "other_fields",
    [
        dict(scope="acme/web", **REBASE),  # sibling scope
        dict(scope="acme/billing-api-v2", **REBASE),  # a prefix, not a parent
        dict(scope="acme/billing-api", trigger="Rotating TLS certificates", content="Always rebase.", conditions=[]),
        dict(scope="acme/billing-api", trigger=REBASE["trigger"], content="Never squash commits.", conditions=[]),
        dict(scope="acme/billing-api", trigger=REBASE["trigger"], content="Always rebase.", conditions=["ci"]),
    ],
)
def test_no_conflict_outside_overlap_or_without_opposite_advice(reviewer, other_fields):
    active(reviewer, **other_fields)
    new = pending(scope="acme/billing-api", **{**NO_REBASE, "conditions": ["local"]})
    assert conflicts.detect_conflicts_for(new) == []
    assert not Conflict.objects.exists()


def test_only_active_entries_are_partners(reviewer):
    rejected = pending(scope="acme/billing-api", **REBASE)
    services.reject_candidate(rejected.pk, actor=reviewer, expected_version=1, reason="wrong")
    pending(scope="acme/billing-api", **REBASE)  # a pending candidate is not yet advice anyone follows
    new = pending(scope="acme/billing-api", **NO_REBASE)
    assert conflicts.detect_conflicts_for(new) == []


def test_ancestor_and_descendant_scopes_are_partners(reviewer):
    parent = active(reviewer, scope="acme", **REBASE)
    child = active(reviewer, scope="acme/billing-api/container/x", **REBASE)
    new = pending(scope="acme/billing-api", **NO_REBASE)
    found = conflicts.detect_conflicts_for(new)
    assert {(c.entry_a_id, c.entry_b_id) for c in found} == {(parent.pk, new.pk), (child.pk, new.pk)}


def test_detection_reads_a_bounded_pool_in_few_queries(reviewer, django_assert_max_num_queries):
    for i in range(12):
        active(
            reviewer,
            scope="acme/billing-api",
            trigger=f"Merging feature branch {i} into main",
            content="Always rebase before merging.",
            conditions=[],
        )
    new = pending(scope="acme/billing-api", **NO_REBASE)
    # the pool, the known pairs, then per new conflict: savepoint, insert, 2 events, release
    with django_assert_max_num_queries(2 + 12 * 5):
        found = conflicts.detect_conflicts_for(new, detected_by="sweep")
    assert len(found) == 12
    new2 = pending(scope="acme/billing-api", trigger="Merging feature branches", content="Never rebase.")
    # at ingest the pool is smaller (the agent waits for the answer); the sweep finds the rest later
    assert len(conflicts.detect_conflicts_for(new2)) == conflicts.INGEST_PARTNER_POOL == 10
    assert len(conflicts.detect_conflicts_for(new2, detected_by="sweep")) == 2
    with django_assert_max_num_queries(2):  # all known: read the pool and the known pairs, write nothing
        assert conflicts.detect_conflicts_for(new2, detected_by="sweep") == []


def test_the_pool_is_bounded(reviewer, monkeypatch):
    for i in range(5):
        active(
            reviewer,
            scope="acme/billing-api",
            trigger=f"Merging feature branch {i} into main",
            content="Always rebase before merging.",
            conditions=[],
        )
    monkeypatch.setattr(conflicts, "INGEST_PARTNER_POOL", 2)
    new = pending(scope="acme/billing-api", **NO_REBASE)
    assert len(conflicts.detect_conflicts_for(new)) == 2  # the two that mention the action most (then newest)
    assert len(conflicts.detect_conflicts_for(new, detected_by="sweep", pool=3)) == 1  # one more, bounded by pool


def test_an_entry_without_directives_reads_nothing(django_assert_num_queries, db):
    new = pending(scope="acme/billing-api", trigger="Merging", content="Merges happen on Fridays.")
    with django_assert_num_queries(0):
        assert conflicts.detect_conflicts_for(new) == []


# --- the sweep --------------------------------------------------------------------------------------


def test_sweep_finds_pairs_across_batches_and_is_idempotent(reviewer):
    a = active(reviewer, scope="acme/billing-api", **REBASE)
    filler = [
        active(reviewer, scope=f"acme/s{i}", trigger="Deploying", content="Always deploy on Monday.") for i in range(4)
    ]
    b = active(reviewer, scope="acme/billing-api/container", **NO_REBASE)
    c = active(reviewer, scope="acme/web", **NO_REBASE)  # a sibling of a: never paired with it

    result = conflict_sweep.sweep_conflicts(batch_size=2)

    assert result.examined == 7
    assert [(x.entry_a_id, x.entry_b_id, x.detected_by) for x in result.opened] == [(a.pk, b.pk, "sweep")]
    assert actions(a)[-1] == "conflict_opened" and actions(b)[-1] == "conflict_opened"
    assert "conflict_opened" not in actions(c) and all("conflict_opened" not in actions(f) for f in filler)
    again = conflict_sweep.sweep_conflicts(batch_size=2)
    assert again.opened == [] and again.examined == 7
    assert Conflict.objects.count() == 1


def test_sweep_query_count_grows_with_batches_and_scopes_not_pairs(reviewer, django_assert_max_num_queries):
    # 20 entries in one scope that all contradict each other pairwise would be 100 pairs: compare them once
    for i in range(10):
        active(reviewer, scope="acme/billing-api", trigger=f"Merging feature branch {i}", content="Always rebase.")
        active(reviewer, scope="acme/billing-api", trigger=f"Merging feature branch {i}", content="Never rebase.")
    first = conflict_sweep.sweep_conflicts(batch_size=10)
    assert len(first.opened) == 100
    # Nothing new: per batch one read of the batch, one pool per scope, one read of known pairs; and the end.
    with django_assert_max_num_queries(2 * 3 + 1):
        again = conflict_sweep.sweep_conflicts(batch_size=10)
    assert again.opened == [] and again.examined == 20


def test_sweep_ignores_archived_and_superseded_entries(reviewer):
    a = active(reviewer, scope="acme/billing-api", **REBASE)
    b = active(reviewer, scope="acme/billing-api", **NO_REBASE)
    Entry.objects.filter(pk=b.pk).update(status=Status.ARCHIVED)
    assert conflict_sweep.sweep_conflicts().opened == []
    assert a.pk


# --- resolutions ------------------------------------------------------------------------------------

from django.core.exceptions import PermissionDenied, ValidationError  # noqa: E402

from curation.models import Evidence  # noqa: E402
from curation.selectors import merge_defaults  # noqa: E402
from curation.services import InvalidTransition, StaleDecision  # noqa: E402

EXTERNAL = {
    "kind": "test_result",
    "signal": "external",
    "polarity": "supports",
    "excerpt": "CI green after rebase",
    "task_ref": "task-7",
}


@pytest.fixture
def pair(reviewer):
    """An open conflict: a (acme/billing-api, "always rebase") and b (acme/billing-api/container, "never")."""

    def make(a_scope="acme/billing-api", b_scope="acme/billing-api/container", b_pending=False, **kw):
        a = active(reviewer, scope=a_scope, **REBASE)
        b = (pending if b_pending else lambda **f: active(reviewer, **f))(scope=b_scope, **NO_REBASE)
        [conflict] = conflicts.detect_conflicts_for(b)
        return conflict, Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)

    return make


def versions(a, b):
    return {"version_a": a.version, "version_b": b.version}


def test_keep_a_supersedes_b(pair, lead):
    conflict, a, b = pair()
    result = conflicts.keep_entry(conflict.pk, actor=lead, keep=a.pk, reason="rebase is our policy", **versions(a, b))
    a2, b2, c2 = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk), Conflict.objects.get(pk=conflict.pk)
    assert (a2.status, b2.status) == (Status.ACTIVE, Status.SUPERSEDED)
    assert a2.supersedes_id == b.pk and (a2.version, b2.version) == (a.version + 1, b.version + 1)
    assert (c2.state, c2.resolution, c2.resolved_by) == ("resolved", "keep_a", lead)
    keep_ev = Event.objects.get(entry=a, action="conflict_keep")
    assert keep_ev.actor == lead and keep_ev.reason == "rebase is our policy"
    assert keep_ev.after["superseded"] == b.pk and keep_ev.before["supersedes"] is None
    sup_ev = Event.objects.get(entry=b, action="supersede")
    assert (sup_ev.before["status"], sup_ev.after["status"], sup_ev.after["superseded_by"]) == (
        "active",
        "superseded",
        a.pk,
    )
    assert result.kept == (a2,) or result.kept[0].pk == a.pk


def test_keep_b_leaves_an_existing_supersedes_link(pair, lead, reviewer):
    older = active(reviewer, scope="acme/billing-api/container", trigger="Old merge advice", content="Merge freely.")
    conflict, a, b = pair()
    Entry.objects.filter(pk=b.pk).update(supersedes=older)  # set up history; not a decision under test
    conflicts.keep_entry(conflict.pk, actor=lead, keep=b.pk, **versions(a, b))
    assert Entry.objects.get(pk=b.pk).supersedes_id == older.pk
    assert Entry.objects.get(pk=a.pk).status == Status.SUPERSEDED
    assert Event.objects.get(entry=a, action="supersede").after["superseded_by"] == b.pk
    assert Conflict.objects.get(pk=conflict.pk).resolution == "keep_b"


def test_keeping_a_pending_candidate_approves_it(pair, reviewer):
    conflict, a, b = pair(b_pending=True)
    assert b.status == Status.PENDING
    conflicts.keep_entry(conflict.pk, actor=reviewer, keep=b.pk, **versions(a, b))
    b2 = Entry.objects.get(pk=b.pk)
    assert (b2.status, b2.queued_at, b2.last_verified_at is not None) == (Status.ACTIVE, None, True)
    assert Event.objects.get(entry=b, action="conflict_keep").after["status"] == "active"


def test_keep_closes_the_superseded_entrys_other_conflicts_as_moot(pair, reviewer, lead):
    conflict, a, b = pair()
    third = active(reviewer, scope="acme/billing-api", trigger="Merging a feature branch", content="Rebase onto main.")
    [other] = conflicts.detect_conflicts_for(Entry.objects.get(pk=b.pk))
    assert {other.entry_a_id, other.entry_b_id} == {b.pk, third.pk}
    conflicts.keep_entry(conflict.pk, actor=lead, keep=a.pk, **versions(a, b))
    other = Conflict.objects.get(pk=other.pk)
    assert (other.state, other.resolution) == ("resolved", "moot")
    # The moot conflict's own history says who closed it and why; the decided one names its resolution.
    [moot] = Event.objects.filter(conflict=other, action="conflict_moot")
    assert (moot.action, moot.actor, moot.entry_id, moot.entry_label) == ("conflict_moot", lead, None, other.label)
    assert moot.reason == f"moot: #{b.pk} superseded" and moot.after == {"state": "resolved", "resolution": "moot"}
    assert set(Event.objects.filter(conflict=conflict).values_list("action", flat=True)) == {
        "conflict_opened",
        "conflict_keep",
        "supersede",
    }
    assert list(Event.objects.filter(conflict=other).values_list("action", flat=True).order_by("id")) == [
        "conflict_opened",
        "conflict_opened",
        "conflict_moot",
    ]


def test_split_by_scope(pair, lead):
    conflict, a, b = pair(a_scope="acme/billing-api", b_scope="acme/billing-api")
    conflicts.split_conflict(
        conflict.pk,
        actor=lead,
        changes_a={"scope": "acme/billing-api/host"},
        changes_b={"scope": "acme/billing-api/container"},
        **versions(a, b),
    )
    a2, b2 = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)
    assert (a2.scope, b2.scope, a2.status, b2.status) == (
        "acme/billing-api/host",
        "acme/billing-api/container",
        "active",
        "active",
    )
    ev = Event.objects.get(entry=a, action="conflict_split")
    assert (ev.before["scope"], ev.after["scope"]) == ("acme/billing-api", "acme/billing-api/host")
    assert "narrowed scope" in ev.reason
    assert Conflict.objects.get(pk=conflict.pk).resolution == "split"


def test_split_by_conditions_of_one_entry(pair, reviewer):
    conflict, a, b = pair()
    Entry.objects.filter(pk=b.pk).update(conditions=["shared"])
    b = Entry.objects.get(pk=b.pk)
    conflicts.split_conflict(
        conflict.pk, actor=reviewer, changes_a={"conditions": "feature, local"}, changes_b={}, **versions(a, b)
    )
    a2, b2 = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)
    assert a2.conditions == ["feature", "local"] and a2.version == a.version + 1
    assert b2.version == b.version  # unchanged, but its history says what happened
    assert "unchanged" in Event.objects.get(entry=b, action="conflict_split").reason


@pytest.mark.parametrize(
    "changes_a, changes_b, field, message",
    [
        ({}, {}, "split", "Still overlapping"),
        ({"scope": "acme/billing-api/container"}, {}, "split", "Still overlapping"),  # same scope now
        ({"conditions": "ci"}, {"conditions": "ci, docker"}, "split", "Still overlapping"),  # a keyword shared
        ({"scope": "acme/web"}, {}, "a_scope", "A split narrows"),  # widening/moving
        ({"scope": "Acme"}, {}, "a_scope", "Illegal scope segment"),
        ({}, {"conditions": ["x" * 201]}, "b_conditions", "At most 50 conditions"),
    ],
)
def test_split_refuses_what_still_overlaps_or_widens(pair, lead, changes_a, changes_b, field, message):
    conflict, a, b = pair()
    with pytest.raises(ValidationError) as exc:
        conflicts.split_conflict(conflict.pk, actor=lead, changes_a=changes_a, changes_b=changes_b, **versions(a, b))
    assert message in " ".join(exc.value.message_dict[field])
    assert Conflict.objects.get(pk=conflict.pk).state == "open"
    assert Entry.objects.get(pk=a.pk).version == a.version and Entry.objects.get(pk=b.pk).version == b.version
    assert not Event.objects.filter(action="conflict_split").exists()


def test_merge_creates_one_entry_with_the_union_of_evidence(reviewer, lead):
    a = services.create_candidate(
        data=candidate_data(scope="acme/billing-api", **REBASE), evidence=[EXTERNAL], actor_label="agent:ci"
    )
    a = services.approve_candidate(a.pk, actor=reviewer, expected_version=1)
    b = pending(scope="acme/billing-api/container", **NO_REBASE)
    services.add_evidence(
        b.pk, data={"kind": "user_statement", "signal": "external", "excerpt": "Ana: never rebase main"}, actor=reviewer
    )
    b = Entry.objects.get(pk=b.pk)
    [conflict] = conflicts.detect_conflicts_for(b)
    data = {**merge_defaults(a, b), "content": "Rebase feature branches before merging; never rebase shared ones."}
    result = conflicts.merge_conflict(conflict.pk, actor=lead, data=data, **versions(a, b))

    merged = result.created
    assert (merged.status, merged.scope, merged.supersedes_id) == (Status.ACTIVE, "acme/billing-api", a.pk)
    assert merged.created_by == lead and merged.signal == "external"
    copies = list(Evidence.objects.filter(entry=merged).order_by("id"))
    originals = list(Evidence.objects.filter(entry_id__in=[a.pk, b.pk]).order_by("observed_at", "id"))
    assert len(copies) == 2 == len(originals)
    for copy, original in zip(copies, originals):
        assert copy.excerpt.startswith(original.excerpt)
        assert f"[copied from evidence #{original.pk} of entry #{original.entry_id}]" in copy.excerpt
        assert copy.task_ref == original.task_ref
    for old in (a, b):
        old2 = Entry.objects.get(pk=old.pk)
        assert old2.status == Status.SUPERSEDED and old2.queued_at is None
        assert Event.objects.get(entry=old, action="supersede").after["superseded_by"] == merged.pk
    ev = Event.objects.get(entry=merged, action="conflict_merge")
    assert ev.after["merged_from"] == [a.pk, b.pk] and ev.after["evidence_copied"] == 2
    assert Conflict.objects.get(pk=conflict.pk).resolution == "merge"


def test_merge_refuses_bad_fields(pair, lead):
    conflict, a, b = pair()
    data = {**merge_defaults(a, b), "trigger": " ", "scope": "acme//x"}
    with pytest.raises(ValidationError) as exc:
        conflicts.merge_conflict(conflict.pk, actor=lead, data=data, **versions(a, b))
    assert set(exc.value.message_dict) == {"trigger", "scope"}
    assert Entry.objects.count() == 2


def test_dismiss_keeps_both_and_the_pair_stays_dismissed(pair, reviewer):
    conflict, a, b = pair()
    conflicts.dismiss_conflict(conflict.pk, actor=reviewer, reason="different branches", **versions(a, b))
    assert Conflict.objects.get(pk=conflict.pk).state == "dismissed"
    assert {Entry.objects.get(pk=a.pk).status, Entry.objects.get(pk=b.pk).status} == {"active"}
    for entry in (a, b):
        assert Event.objects.get(entry=entry, action="conflict_dismissed").reason == "different branches"
    assert conflicts.detect_conflicts_for(Entry.objects.get(pk=b.pk)) == []
    assert conflict_sweep.sweep_conflicts().opened == []


RESOLUTIONS = {
    "keep": lambda c, a, b, user: conflicts.keep_entry(c.pk, actor=user, keep=a.pk, **versions(a, b)),
    "split": lambda c, a, b, user: conflicts.split_conflict(
        c.pk, actor=user, changes_a={"conditions": "x"}, changes_b={"conditions": "y"}, **versions(a, b)
    ),
    "merge": lambda c, a, b, user: conflicts.merge_conflict(
        c.pk, actor=user, data=merge_defaults(a, b), **versions(a, b)
    ),
    "dismiss": lambda c, a, b, user: conflicts.dismiss_conflict(c.pk, actor=user, **versions(a, b)),
}


@pytest.mark.parametrize("resolution", list(RESOLUTIONS))
def test_an_auditor_resolves_nothing(pair, auditor, resolution):
    conflict, a, b = pair()
    with pytest.raises(PermissionDenied):
        RESOLUTIONS[resolution](conflict, a, b, auditor)
    assert Conflict.objects.get(pk=conflict.pk).state == "open"


@pytest.mark.parametrize("resolution", list(RESOLUTIONS))
def test_a_reviewer_outside_the_scopes_sees_no_conflict(pair, resolution, db):

    outsider = make_user("wes", "reviewer", scopes=["acme/web"])
    conflict, a, b = pair()
    with pytest.raises(Conflict.DoesNotExist):
        RESOLUTIONS[resolution](conflict, a, b, outsider)


@pytest.mark.parametrize("resolution", list(RESOLUTIONS))
def test_a_stale_version_is_refused_and_nothing_is_written(pair, reviewer, second_reviewer, resolution):
    conflict, a, b = pair(b_pending=True)
    services.edit_and_approve(
        b.pk, actor=second_reviewer, expected_version=b.version, changes={"boundary": "Not on release branches."}
    )
    events_before = Event.objects.count()
    with pytest.raises(StaleDecision) as exc:
        RESOLUTIONS[resolution](conflict, a, b, reviewer)
    assert "rob (edit_approve)" in str(exc.value)
    assert Event.objects.count() == events_before
    assert Conflict.objects.get(pk=conflict.pk).state == "open"


@pytest.mark.parametrize("resolution", list(RESOLUTIONS))
def test_a_conflict_resolved_by_someone_else_is_refused(pair, reviewer, second_reviewer, resolution):
    conflict, a, b = pair()
    conflicts.dismiss_conflict(conflict.pk, actor=second_reviewer, **versions(a, b))
    with pytest.raises(InvalidTransition, match="already dismissed .* by rob"):
        RESOLUTIONS[resolution](conflict, a, b, reviewer)


def test_keep_split_merge_need_both_entries_live(pair, reviewer):
    conflict, a, b = pair(b_pending=True)
    services.reject_candidate(b.pk, actor=reviewer, expected_version=b.version, reason="wrong")
    b = Entry.objects.get(pk=b.pk)
    for name in ("keep", "split", "merge"):
        with pytest.raises(InvalidTransition, match="Dismiss the conflict instead"):
            RESOLUTIONS[name](conflict, a, b, reviewer)
    RESOLUTIONS["dismiss"](conflict, a, b, reviewer)
    assert Conflict.objects.get(pk=conflict.pk).state == "dismissed"


def test_keep_refuses_an_entry_outside_the_pair(pair, reviewer):
    conflict, a, b = pair()
    with pytest.raises(ValidationError, match="Keep #"):
        conflicts.keep_entry(conflict.pk, actor=reviewer, keep=b.pk + 99, **versions(a, b))


@pytest.mark.parametrize("deeper_first", [True, False])
def test_sweep_pairs_ancestor_and_descendant_scopes_in_either_order(reviewer, deeper_first):
    scopes = ["acme/billing-api/container/x", "acme"] if deeper_first else ["acme", "acme/billing-api/container/x"]
    first = active(reviewer, scope=scopes[0], **REBASE)
    second = active(reviewer, scope=scopes[1], **NO_REBASE)
    [conflict] = conflict_sweep.sweep_conflicts(batch_size=1).opened
    assert (conflict.entry_a_id, conflict.entry_b_id) == (first.pk, second.pk)
