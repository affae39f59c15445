"""`manage.py run_lifecycle` as an operator uses it: what it prints, what it changes, what it refuses."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from curation.models import Entry, Event, Status, TaskRun
from curation import sweeps
from tests.factories import AS_OF, days_before, holding_lock, make_entry

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("run_lifecycle", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_one_task_as_of_a_time():
    faded = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    kept = make_entry(base_confidence=0.9, last_verified_at=days_before(1))
    output = run("archive", "--at", "2026-12-01T02:00:00Z")
    run_record = TaskRun.objects.get(task="archive")
    # It examines only what the decay index says may have crossed the threshold: not the kept entry.
    assert output.strip() == f"archive (as of 2026-12-01 02:00:00 UTC): examined 1, changed 1 (run #{run_record.pk})"
    assert run_record.as_of == AS_OF and run_record.triggered_by == "command"
    assert Entry.objects.get(pk=faded.pk).status == Status.ARCHIVED
    assert Entry.objects.get(pk=kept.pk).status == Status.ACTIVE


def test_a_time_without_zone_is_utc():
    run("decay", "--at", "2026-12-01T02:00:00")
    assert TaskRun.objects.get(task="decay").as_of == AS_OF


def test_dry_run_prints_and_changes_nothing():
    faded = make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    events = Event.objects.count()
    output = run("archive", "--at", "2026-12-01T02:00:00Z", "--dry-run")
    assert "archive (dry run, as of 2026-12-01 02:00:00 UTC): would change 1 of 1 rows examined" in output
    assert f"#{faded.pk} archive: decayed to 0.257 (below 0.3)" in output
    assert Entry.objects.get(pk=faded.pk).status == Status.ACTIVE
    assert Entry.objects.get(pk=faded.pk).version == faded.version
    assert Event.objects.count() == events


def test_dry_run_says_how_many_it_did_not_list():
    for _ in range(sweeps.SAMPLE_LIMIT + 3):
        make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    output = run("archive", "--at", "2026-12-01T02:00:00Z", "--dry-run")
    assert f"would change {sweeps.SAMPLE_LIMIT + 3} of" in output
    assert "  ... and 3 more" in output


def test_all_runs_every_task_in_order():
    make_entry(base_confidence=0.3, last_verified_at=days_before(90))
    output = run("all", "--at", "2026-12-01T02:00:00Z")
    lines = output.strip().splitlines()
    assert [line.split(" ")[0] for line in lines] == list(sweeps.TASK_NAMES)
    assert list(TaskRun.objects.order_by("id").values_list("task", "state")) == [
        (name, TaskRun.State.SUCCEEDED) for name in sweeps.TASK_NAMES
    ]


def test_a_locked_task_says_it_skipped():
    with holding_lock("decay"):
        output = run("decay")
    assert output.startswith("decay: skipped: another decay run holds the lock")


@pytest.mark.parametrize(
    "args, message",
    [
        (("archive", "--at", "yesterday"), "is not an ISO 8601 time"),
        (("vacuum",), "invalid choice: 'vacuum'"),
        (("decay", "--batch-size", "0"), "--batch-size must be at least 1"),
    ],
)
def test_bad_input_is_refused_clearly(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not TaskRun.objects.exists()


def test_a_failing_task_is_recorded_and_the_command_fails(monkeypatch):
    def broken(sweep):
        raise RuntimeError("disk full")

    monkeypatch.setattr(sweeps.SWEEPS["revive"], "run", broken)
    with pytest.raises(CommandError, match="failed: revive"):
        run("all", "--at", "2026-12-01T02:00:00Z")
    states = dict(TaskRun.objects.values_list("task", "state"))
    assert states["revive"] == TaskRun.State.FAILED and states["capacity"] == TaskRun.State.SUCCEEDED
    assert TaskRun.objects.get(task="revive").error == "RuntimeError: disk full"
