"""The consolidation sweep proposes, and only an accepted proposal changes entries (with Events)."""

import datetime
import random

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from curation import services
from curation.models import ConsolidationProposal, Entry, Event, Evidence, Status
from curation.services import InvalidTransition, StaleDecision, consolidation
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active, make_user

pytestmark = pytest.mark.django_db

PORT = dict(
    trigger="Connecting to the billing database from the container",
    content="Probe port 5432 with nc before connecting.",
    conditions=["db"],
    boundary="",
)


def test_near_duplicates_in_one_scope_become_one_merge_proposal(reviewer):
    a = active(reviewer, scope="acme/billing-api", confidence=0.6, **PORT)
    b = active(
        reviewer,
        scope="acme/billing-api",
        confidence=0.8,
        **{
            **PORT,
            "content": "Probe port 5432 with nc before connecting!",
            "conditions": ["db", "network"],
            "boundary": "Not on the host.",
        },
    )
    c = active(
        reviewer,
        scope="acme/billing-api",
        **{**PORT, "content": "Probe the port 5432 with nc first, before connecting."},
    )
    elsewhere = active(reviewer, scope="acme/web", **PORT)  # same text, other scope: not a duplicate here
    events_before = Event.objects.count()

    result = consolidation_sweep.sweep_consolidation(batch_size=2)

    [proposal] = result.proposed
    assert proposal.kind == "merge" and proposal.scope == "acme/billing-api" and proposal.state == "open"
    assert sorted(proposal.entries.values_list("pk", flat=True)) == [a.pk, b.pk, c.pk]
    assert proposal.entry_versions == {str(e.pk): e.version for e in (a, b, c)}
    assert proposal.proposed_trigger == b.trigger  # the strongest entry's
    # The strongest text, and nothing of the other that says the same thing again (issue 14's real merge).
    assert proposal.proposed_content == b.content
    assert proposal.proposed_conditions == ["db", "network"] and proposal.proposed_boundary == "Not on the host."
    assert "3 entries in acme/billing-api" in proposal.reason
    # the sweep changed no entry and wrote no Event about one; one Event about the proposal it made
    assert Event.objects.filter(entry__isnull=False).count() == events_before
    [made] = Event.objects.filter(proposal=proposal)
    assert (made.action, made.actor_label, made.after["entries"]) == (
        "consolidation_proposed",
        "lifecycle:consolidation",
        sorted([a.pk, b.pk, c.pk], reverse=True),
    )
    assert all(Entry.objects.get(pk=e.pk).version == e.version for e in (a, b, c, elsewhere))
    # idempotent
    assert consolidation_sweep.sweep_consolidation().proposed == []


def test_a_newer_entry_with_the_same_trigger_proposes_to_supersede_the_older(reviewer):
    now = timezone.now()
    old = active(
        reviewer,
        scope="acme/billing-api",
        at=now - datetime.timedelta(days=90),
        confidence=0.6,
        trigger="Deploying the billing API",
        content="Run deploy.sh from the ops box.",
        conditions=[],
    )
    new = active(
        reviewer,
        scope="acme/billing-api",
        at=now,
        confidence=0.8,
        trigger="Deploying the billing API",
        content="Trigger the GitHub Actions release workflow.",
        conditions=[],
    )
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    assert (proposal.kind, proposal.target_id) == ("supersede", new.pk)
    assert f"#{new.pk} is newer" in proposal.reason and f"as #{old.pk}" in proposal.reason


def test_contradicting_entries_are_left_to_the_conflicts_queue(reviewer):
    active(
        reviewer,
        scope="acme/billing-api",
        trigger="Merging a feature branch",
        content="Always rebase first.",
        conditions=[],
    )
    active(
        reviewer,
        scope="acme/billing-api",
        trigger="Merging a feature branch",
        content="Never rebase first.",
        conditions=[],
    )
    assert consolidation_sweep.sweep_consolidation().proposed == []


def test_sweep_query_count_does_not_grow_with_pairs(reviewer, django_assert_max_num_queries):
    for i in range(12):
        active(reviewer, scope="acme/billing-api", **{**PORT, "content": PORT["content"] + f" Attempt {i}."})
    consolidation_sweep.sweep_consolidation(batch_size=6)
    # the tombstones, once; batches: read + one pool per scope; the end: known keys, busy entries; nothing written
    with django_assert_max_num_queries(1 + 2 * 2 + 1 + 2 + 2):
        assert consolidation_sweep.sweep_consolidation(batch_size=6).proposed == []


@pytest.fixture
def merge_proposal(reviewer):
    a = active(
        reviewer,
        scope="acme/billing-api",
        confidence=0.6,
        evidence=[
            {"kind": "tool_output", "signal": "external", "excerpt": "nc: connection refused", "task_ref": "t-1"}
        ],
        **PORT,
    )
    b = active(reviewer, scope="acme/billing-api", confidence=0.8, **{**PORT, "content": PORT["content"] + "!"})
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    return proposal, Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)


def test_accept_as_is_merges_with_evidence_and_events(merge_proposal, reviewer):
    proposal, a, b = merge_proposal
    outcome = consolidation.accept_proposal(proposal.pk, actor=reviewer)
    merged = outcome.created
    assert (merged.status, merged.scope, merged.supersedes_id, merged.trigger) == (
        Status.ACTIVE,
        "acme/billing-api",
        b.pk,
        b.trigger,
    )
    assert merged.content == proposal.proposed_content and merged.signal == "external"
    [copy] = Evidence.objects.filter(entry=merged)
    original = Evidence.objects.get(entry=a)
    assert (
        copy.excerpt.startswith("nc: connection refused")
        and f"evidence #{original.pk} of entry #{a.pk}" in copy.excerpt
    )
    for old in (a, b):
        assert Entry.objects.get(pk=old.pk).status == Status.SUPERSEDED
        assert Event.objects.get(entry=old, action="supersede").after["superseded_by"] == merged.pk
    ev = Event.objects.get(entry=merged, action="consolidation_merge")
    assert ev.after["merged_from"] == [a.pk, b.pk] and ev.after["edited"] == [] and ev.actor == reviewer
    proposal.refresh_from_db()
    assert (proposal.state, proposal.decided_by, proposal.result_id) == ("accepted", reviewer, merged.pk)


def test_accept_after_editing(merge_proposal, reviewer):
    proposal, a, b = merge_proposal
    outcome = consolidation.accept_proposal(
        proposal.pk,
        actor=reviewer,
        edits={"content": "Probe port 5432 with nc; wait for it to open.", "conditions": "db, nc"},
        note="one probe step",
    )
    assert outcome.created.content == "Probe port 5432 with nc; wait for it to open."
    assert outcome.created.conditions == ["db", "nc"]
    ev = Event.objects.get(entry=outcome.created, action="consolidation_merge")
    assert ev.after["edited"] == ["conditions", "content"] and ev.reason == "one probe step"


def test_bad_edits_are_refused_per_field(merge_proposal, reviewer):
    proposal, a, b = merge_proposal
    with pytest.raises(ValidationError) as exc:
        consolidation.accept_proposal(proposal.pk, actor=reviewer, edits={"trigger": "", "content": "x" * 4001})
    assert set(exc.value.message_dict) == {"trigger", "content"}
    assert ConsolidationProposal.objects.get(pk=proposal.pk).state == "open"


def test_accept_supersede(reviewer):
    now = timezone.now()
    old = active(
        reviewer,
        scope="acme/billing-api",
        at=now - datetime.timedelta(days=90),
        confidence=0.6,
        trigger="Deploying the billing API",
        content="Run deploy.sh from the ops box.",
        conditions=[],
    )
    new = active(
        reviewer,
        scope="acme/billing-api",
        confidence=0.8,
        trigger="Deploying the billing API",
        content="Trigger the GitHub Actions release workflow.",
        conditions=[],
    )
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    consolidation.accept_proposal(proposal.pk, actor=reviewer)
    assert Entry.objects.get(pk=old.pk).status == Status.SUPERSEDED
    kept = Entry.objects.get(pk=new.pk)
    assert kept.status == Status.ACTIVE and kept.supersedes_id == old.pk and kept.version == new.version + 1
    assert Event.objects.get(entry=new, action="consolidation_keep").after["superseded"] == [old.pk]


def test_dismiss_writes_events_and_is_never_proposed_again(merge_proposal, reviewer):
    proposal, a, b = merge_proposal
    consolidation.dismiss_proposal(proposal.pk, actor=reviewer, note="different ports really")
    assert ConsolidationProposal.objects.get(pk=proposal.pk).state == "dismissed"
    assert Event.objects.get(entry=a, action="consolidation_dismissed").reason == "different ports really"
    assert {Entry.objects.get(pk=a.pk).status, Entry.objects.get(pk=b.pk).status} == {"active"}
    assert consolidation_sweep.sweep_consolidation().proposed == []


def test_an_entry_changed_since_the_proposal_is_refused(merge_proposal, reviewer):
    proposal, a, b = merge_proposal
    services.add_evidence(a.pk, data={"kind": "review", "signal": "independent", "excerpt": "checked"}, actor=reviewer)
    Entry.objects.filter(pk=a.pk).update(version=a.version + 1)  # as a decay or a recheck elsewhere would
    with pytest.raises(StaleDecision):
        consolidation.accept_proposal(proposal.pk, actor=reviewer)
    assert ConsolidationProposal.objects.get(pk=proposal.pk).state == "open"


def test_roles_and_scopes(merge_proposal, auditor, reviewer, second_reviewer):
    proposal, a, b = merge_proposal
    with pytest.raises(PermissionDenied):
        consolidation.accept_proposal(proposal.pk, actor=auditor)
    with pytest.raises(PermissionDenied):
        consolidation.dismiss_proposal(proposal.pk, actor=auditor)
    outsider = make_user("wes", "reviewer", scopes=["acme/web"])
    with pytest.raises(ConsolidationProposal.DoesNotExist):
        consolidation.accept_proposal(proposal.pk, actor=outsider)
    consolidation.dismiss_proposal(proposal.pk, actor=second_reviewer)
    with pytest.raises(InvalidTransition, match="already dismissed by rob"):
        consolidation.accept_proposal(proposal.pk, actor=reviewer)


@pytest.mark.parametrize("threshold", [0.3, 0.6, 0.8])
def test_the_prefix_index_misses_no_pair_above_the_threshold(threshold):

    rng = random.Random(threshold)
    vocab = [f"w{i}" for i in range(30)]
    sets = {i: frozenset(rng.sample(vocab, rng.randint(1, 8))) for i in range(1, 120)}
    index = consolidation_sweep._PrefixIndex(sets, threshold, list(sets))
    for a in sets:
        found = index.candidates(a)
        for b in sets:
            if a != b and consolidation_sweep._jaccard(sets[a], sets[b]) >= threshold:
                assert b in found, (sets[a], sets[b])
