"""One candidate contradicting several near-identical lessons: its conflicts are one card, decided and
undone at once through each conflict's own service."""

import pytest
from django.core.exceptions import ValidationError

from curation import selectors, services
from curation.models import Conflict, Entry, Event, Status
from curation.services import InvalidTransition, StaleDecision, conflict_groups, conflicts
from tests.factories import active, candidate_data, make_user

pytestmark = pytest.mark.django_db

REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])


def flood(reviewer, n=3):
    """n near-identical active lessons, then a candidate that contradicts each of them."""
    existing = [active(reviewer, scope=f"acme/billing-api/p{i}", **REBASE) for i in range(n)]
    new = services.create_candidate(data=candidate_data(scope="acme/billing-api", **NO_REBASE), actor_label="agent:ci")
    opened = conflicts.detect_conflicts_for(new)
    assert len(opened) == n
    return new, existing, opened


def members(opened):
    rows = Conflict.objects.filter(pk__in=[c.pk for c in opened]).select_related("entry_a", "entry_b")
    return [(c.pk, c.entry_a.version, c.entry_b.version) for c in rows]


def states(opened):
    return {c.pk: (c.state, c.resolution) for c in Conflict.objects.filter(pk__in=[c.pk for c in opened])}


def test_the_conflicts_a_candidate_raises_are_one_card(reviewer):
    new, existing, opened = flood(reviewer)
    lone_a = active(
        reviewer, scope="acme/web", trigger="Restarting the web worker", content="Restart the worker first."
    )
    lone_b = active(
        reviewer,
        scope="acme/web/frontend",
        trigger="Restarting the web worker during deploys",
        content="Do not restart the worker while a deploy runs.",
    )
    [lone] = conflicts.detect_conflicts_for(lone_b)

    assert {c.raised_by_id for c in opened} == {new.pk} and lone.raised_by_id == lone_b.pk
    page = selectors.conflict_queue(reviewer)
    assert [c.pk for c in page.items] == [opened[0].pk, lone.pk]  # two cards
    assert page.count == 4  # the conflicts themselves are counted
    card = page.items[0]
    assert card.group.shared.pk == new.pk and card.group.total == 3
    assert [c.pk for c in card.group.conflicts] == [c.pk for c in opened]
    assert [e.pk for _, e in card.group.others] == [e.pk for e in existing]
    assert page.items[1].group is None and lone_a


def test_keep_the_new_one_supersedes_every_existing_lesson(reviewer):
    new, existing, opened = flood(reviewer)
    outcome = conflict_groups.resolve_conflict_group(
        opened[0].pk, actor=reviewer, members=members(opened), decision="keep_new"
    )
    assert Entry.objects.get(pk=new.pk).status == Status.ACTIVE
    assert {Entry.objects.get(pk=e.pk).status for e in existing} == {Status.SUPERSEDED}
    assert {state for state, _ in states(opened).values()} == {Conflict.State.RESOLVED}
    assert Event.objects.filter(entry=new, action="conflict_keep", actor=reviewer).count() == 3
    assert [e.pk for e in outcome.superseded] == [e.pk for e in existing]
    assert dict((m[0], m[1:]) for m in outcome.members) == dict((m[0], m[1:]) for m in members(opened))


def test_keep_the_existing_ones_supersedes_the_new_one_and_closes_the_rest(reviewer):
    new, existing, opened = flood(reviewer)
    conflict_groups.resolve_conflict_group(
        opened[0].pk, actor=reviewer, members=members(opened), decision="keep_existing"
    )
    assert Entry.objects.get(pk=new.pk).status == Status.SUPERSEDED
    assert {Entry.objects.get(pk=e.pk).status for e in existing} == {Status.ACTIVE}
    assert list(states(opened).values())[0][0] == Conflict.State.RESOLVED
    assert {r for _, r in list(states(opened).values())[1:]} == {"moot"}


def test_dismiss_all(reviewer):
    new, existing, opened = flood(reviewer)
    conflict_groups.resolve_conflict_group(
        opened[0].pk, actor=reviewer, members=members(opened), decision="dismiss", reason="different branches"
    )
    assert set(states(opened).values()) == {(Conflict.State.DISMISSED, "dismiss")}
    assert Entry.objects.get(pk=new.pk).status == Status.PENDING
    assert Event.objects.filter(action="conflict_dismissed", reason="different branches").count() == 6


@pytest.mark.parametrize("decision", ["keep_new", "keep_existing", "dismiss"])
def test_undo_takes_the_whole_decision_back(reviewer, decision):
    new, existing, opened = flood(reviewer)
    before = {
        e.pk: (e.status, e.supersedes_id) for e in Entry.objects.filter(pk__in=[new.pk, *(e.pk for e in existing)])
    }
    outcome = conflict_groups.resolve_conflict_group(
        opened[0].pk, actor=reviewer, members=members(opened), decision=decision
    )
    conflict_groups.undo_conflict_group(opened[0].pk, actor=reviewer, members=outcome.members)
    assert set(states(opened).values()) == {(Conflict.State.OPEN, "")}
    after = {e.pk: (e.status, e.supersedes_id) for e in Entry.objects.filter(pk__in=before)}
    assert after == before
    assert selectors.conflict_queue(reviewer).items[0].group.total == 3  # one card again


def test_a_member_decided_meanwhile_refuses_the_whole_decision(reviewer, second_reviewer):
    new, existing, opened = flood(reviewer)
    sent = members(opened)
    _, version_a, version_b = sent[2]
    conflicts.dismiss_conflict(opened[2].pk, actor=second_reviewer, version_a=version_a, version_b=version_b)
    with pytest.raises(InvalidTransition, match=f"Conflict #{opened[2].pk} was already dismissed"):
        conflict_groups.resolve_conflict_group(opened[0].pk, actor=reviewer, members=sent, decision="keep_new")
    assert [s for s, _ in list(states(opened).values())[:2]] == [Conflict.State.OPEN] * 2
    assert Entry.objects.get(pk=new.pk).status == Status.PENDING
    assert not Event.objects.filter(actor=reviewer, action="conflict_keep").exists()


def test_a_changed_entry_refuses_the_whole_decision(reviewer):
    new, existing, opened = flood(reviewer)
    sent = members(opened)
    services.defer_candidate(new.pk, actor=reviewer, expected_version=new.version)
    with pytest.raises(StaleDecision):
        conflict_groups.resolve_conflict_group(opened[0].pk, actor=reviewer, members=sent, decision="dismiss")
    assert {s for s, _ in states(opened).values()} == {Conflict.State.OPEN}


def test_a_group_beyond_the_reviewers_scopes_does_not_exist(reviewer):
    new, existing, opened = flood(reviewer)
    outsider = make_user("wes", "reviewer", scopes=["acme/web"])
    with pytest.raises(Conflict.DoesNotExist):
        conflict_groups.resolve_conflict_group(
            opened[0].pk, actor=outsider, members=members(opened), decision="dismiss"
        )
    assert {s for s, _ in states(opened).values()} == {Conflict.State.OPEN}


def test_members_that_share_no_entry_are_refused(reviewer):
    new, existing, opened = flood(reviewer, n=2)
    other_new = services.create_candidate(
        data=candidate_data(
            scope="acme/billing-api/p0", trigger="Merging feature branches", content="Never rebase a shared branch."
        ),
        actor_label="agent:ci",
    )
    [other] = [c for c in conflicts.detect_conflicts_for(other_new) if existing[0].pk in (c.entry_a_id, c.entry_b_id)]
    with pytest.raises(ValidationError, match="do not share one entry"):
        conflict_groups.resolve_conflict_group(
            opened[1].pk, actor=reviewer, members=members([opened[1], other]), decision="dismiss"
        )
