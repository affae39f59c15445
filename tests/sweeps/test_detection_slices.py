"""Conflict and consolidation detection in resumable slices: a run stops at a batch boundary once its slice
is spent, the cursor on its run record says where, and the next run resumes there until the pass is
complete; a scope of many near-identical entries costs a bounded number of comparisons per entry."""

import pytest

from curation.models import Conflict, ConsolidationProposal, TaskRun
from curation.sweeps import conflicts as conflict_sweep, run_sweep
from tests.factories import AS_OF, days_before, make_entry

pytestmark = pytest.mark.django_db


def sweep(task, **options):
    """One run of the sweep as beat starts it, as its record says afterwards."""
    run, _ = run_sweep(task, as_of=AS_OF, batch_size=2, **options)
    return TaskRun.objects.get(pk=run.pk)


@pytest.fixture
def one_batch_per_run(settings):
    """Every run's slice is spent after its first batch."""
    settings.CURATION = {**settings.CURATION, "DETECTION_SLICE_SECONDS": 0}


def fillers(n):
    return [
        make_entry(
            scope=f"acme/s{i}",
            trigger=f"Deploying service {i}",
            content=f"Tag release {i} first.",
            last_verified_at=days_before(1),
        )
        for i in range(n)
    ]


def test_a_conflict_pass_resumes_where_the_last_run_stopped_until_it_is_complete(one_batch_per_run):
    early = fillers(4)
    rebase = make_entry(
        scope="acme/billing-api",
        trigger="Merging a feature branch into main",
        content="Always rebase before merging.",
        last_verified_at=days_before(1),
    )
    no_rebase = make_entry(
        scope="acme/billing-api",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        last_verified_at=days_before(1),
    )

    first = sweep("conflicts")
    assert (first.state, first.rows_examined, first.cursor["after"]) == (TaskRun.State.SUCCEEDED, 2, early[1].pk)
    assert not Conflict.objects.exists()  # the contradicting pair lies beyond this slice

    second = sweep("conflicts")
    assert (second.rows_examined, second.cursor["after"]) == (2, early[3].pk)
    assert second.cursor["started"] == first.cursor["started"]  # the same pass

    third = sweep("conflicts")
    [conflict] = Conflict.objects.all()
    assert (conflict.entry_a_id, conflict.entry_b_id) == (rebase.pk, no_rebase.pk)
    assert third.rows_changed == 1

    # The last slice found no more entries after its batch; the run after it completes the pass and the
    # next pass reads only what changed since this one began: nothing.
    runs = [third, sweep("conflicts"), sweep("conflicts")]
    done = next(r for r in runs if r.cursor["after"] is None)
    assert done.cursor["started"] == first.cursor["started"]
    assert runs[-1].cursor["after"] is None and runs[-1].rows_examined == 0
    assert Conflict.objects.count() == 1


def test_a_consolidation_pass_resumes_and_proposes_what_lies_beyond_the_first_slice(one_batch_per_run):
    fillers(2)
    twins = [
        make_entry(
            scope="acme/web",
            trigger="Editing config files inside the web container",
            content=f"Confirm the repository root with git rev-parse before editing config{tail}.",
            last_verified_at=days_before(1),
        )
        for tail in ("", " files")
    ]
    first = sweep("consolidation")
    assert first.rows_examined == 2 and first.cursor["after"] is not None
    assert not ConsolidationProposal.objects.exists()
    sweep("consolidation")
    [proposal] = ConsolidationProposal.objects.all()
    assert {e.pk for e in proposal.entries.all()} == {t.pk for t in twins}


def test_a_run_killed_mid_pass_is_resumed_from_the_cursor_written_with_its_last_batch(settings, monkeypatch):
    settings.CURATION = {**settings.CURATION, "DETECTION_SLICE_SECONDS": 3600}
    early = fillers(4)
    detect = conflict_sweep.sweep_conflicts

    def killed_after_its_first_batch(**kwargs):
        def progress(after):
            kwargs["progress"](after)
            raise KeyboardInterrupt  # the worker is killed once its first batch is written

        return detect(**{**kwargs, "progress": progress})

    monkeypatch.setattr(conflict_sweep, "sweep_conflicts", killed_after_its_first_batch)
    with pytest.raises(KeyboardInterrupt):
        run_sweep("conflicts", as_of=AS_OF, batch_size=2)
    killed = TaskRun.objects.get(task="conflicts")
    assert killed.state == TaskRun.State.FAILED and killed.cursor["after"] == early[1].pk

    monkeypatch.setattr(conflict_sweep, "sweep_conflicts", detect)
    resumed = sweep("conflicts")
    assert resumed.rows_examined == 2 and resumed.cursor["after"] is None


def test_a_dry_run_moves_no_cursor(one_batch_per_run):
    fillers(4)
    assert sweep("conflicts", dry_run=True).cursor is None
    real = sweep("conflicts")
    assert real.rows_examined == 2  # a new pass, from the first entry


def test_many_near_identical_entries_cost_a_bounded_number_of_comparisons_per_entry(settings):
    settings.CURATION = {**settings.CURATION, "DETECTION_PARTNERS_PER_ENTRY": 3}
    for i in range(40):
        make_entry(
            scope="acme/flood",
            trigger="Restarting the worker after a deploy",
            content=f"{'Always' if i % 2 else 'Never'} restart the worker after a deploy.",
            last_verified_at=days_before(1),
        )
    result = conflict_sweep.sweep_conflicts(batch_size=50)
    assert result.examined == 40
    assert 0 < result.compared <= 40 * 3
    assert Conflict.objects.exists()  # still found: each entry meets its nearest partners
    settings.CURATION = {**settings.CURATION, "DETECTION_PARTNERS_PER_ENTRY": 1000}
    unbounded = conflict_sweep.sweep_conflicts(batch_size=50)
    assert unbounded.compared > 40 * 3
