"""Memory tests: a lead's tests with their Events, run at every publish on the version about to be published
(a failure holds it until a lead acknowledges it), on the draft for the releases page, from the command, and
the test a person's correction brings with it."""

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from curation import services
from curation.models import Event, EventAction, MemoryTest, MemoryVersion, ReleasedEntry
from curation.rules import config
from curation.selectors import memory_tests as test_reads
from curation.selectors import releases as reads
from curation.services import conflicts
from curation.services.candidates import send_back_for_recheck
from curation.services.memory_tests import change_memory_test, create_memory_test, retire_memory_test
from curation.services.releases import UnacknowledgedWarnings, memory_tests_on_draft, publish_version
from tests.factories import active, clock_moving_a_day_a_reading, make_user, publish_pending

SCOPE = "acme/billing-api"
QUERY = "Editing config files in the container"


def a_test(lead, expectations, *, scope=SCOPE, query=QUERY, **fields):
    return create_memory_test(
        data={
            "scope": scope,
            "name": fields.pop("name", "config lesson"),
            "query": query,
            "k": fields.pop("k", "5"),
            "budget_tokens": fields.pop("budget_tokens", "500"),
            "expectations": expectations,
        },
        actor=lead,
    )


def runs(test):
    return list(
        Event.objects.filter(memory_test=test, action__in=["memory_test_passed", "memory_test_failed"]).order_by("pk")
    )


def test_a_lead_creates_changes_and_retires_a_test_each_with_its_event(lead):
    test = a_test(lead, "top #12\nunder 300 tokens")
    assert test.expectations == [{"kind": "top", "entry": 12}, {"kind": "under_tokens", "tokens": 300}]
    created = Event.objects.get(memory_test=test)
    assert (created.action, created.actor, created.after["query"]) == (EventAction.MEMORY_TEST_CREATED, lead, QUERY)

    data = {
        "scope": SCOPE,
        "name": "renamed",
        "query": QUERY,
        "k": "3",
        "budget_tokens": "500",
        "expectations": "absent #12",
    }
    changed = change_memory_test(test.pk, data=data, actor=lead, expected_version=1)
    assert (changed.version, changed.k, changed.expectations) == (2, 3, [{"kind": "absent", "entry": 12}])
    event = Event.objects.filter(memory_test=test).latest("pk")
    assert event.action == EventAction.MEMORY_TEST_CHANGED
    assert (event.before["name"], event.after["name"], event.before["k"], event.after["k"]) == (
        "config lesson",
        "renamed",
        5,
        3,
    )

    same = change_memory_test(test.pk, data=data, actor=lead, expected_version=2)
    assert same.version == 2 and Event.objects.filter(memory_test=test).count() == 2  # nothing changed: no Event
    with pytest.raises(ValidationError, match="changed since you opened it"):
        change_memory_test(test.pk, data=data, actor=lead, expected_version=1)

    retired = retire_memory_test(test.pk, actor=lead, expected_version=2, reason="the lesson moved")
    assert retired.retired_at is not None
    event = Event.objects.filter(memory_test=test).latest("pk")
    assert (event.action, event.reason, event.after["retired"]) == (
        EventAction.MEMORY_TEST_RETIRED,
        "the lesson moved",
        True,
    )
    with pytest.raises(ValidationError, match="is retired"):
        retire_memory_test(test.pk, actor=lead, expected_version=3)


def test_only_a_lead_within_their_scopes_keeps_tests(lead, reviewer):
    with pytest.raises(PermissionDenied, match="Only a lead"):
        a_test(reviewer, "top #1")
    scoped = make_user("lea", "lead", scopes=["acme/web"])
    with pytest.raises(PermissionDenied, match="outside them"):
        a_test(scoped, "top #1")
    test = a_test(lead, "top #1")
    with pytest.raises(MemoryTest.DoesNotExist):  # outside the scoped lead's scopes: as if unknown
        retire_memory_test(test.pk, actor=scoped, expected_version=1)
    mine = a_test(scoped, "top #1", scope="acme/web")
    data = {"scope": SCOPE, "name": "moved", "query": "q", "k": "5", "budget_tokens": "500", "expectations": "top #1"}
    with pytest.raises(PermissionDenied):  # nor moved out of them
        change_memory_test(mine.pk, data=data, actor=scoped, expected_version=1)
    assert MemoryTest.objects.get(pk=mine.pk).scope == "acme/web"


def test_bad_input_is_refused_whole(lead):
    with pytest.raises(ValidationError) as bad:
        a_test(lead, "must mention rebase", k="0")
    assert set(bad.value.message_dict) == {"k", "expectations"}
    assert not MemoryTest.objects.exists() and not Event.objects.exists()


def test_a_publish_runs_the_touched_tests_on_the_version_it_publishes(lead, reviewer):
    entry = active(reviewer, scope=f"{SCOPE}/container")
    asked_below = a_test(lead, f"top #{entry.pk}", scope=f"{SCOPE}/container")
    elsewhere = a_test(lead, "top #999", scope="acme/web")  # not touched by this release

    version = publish_version(actor=lead, summary="config lesson")

    [run] = runs(asked_below)
    assert (run.action, run.memory_version, run.actor, run.after["memory_version"]) == (
        EventAction.MEMORY_TEST_PASSED,
        version,
        lead,
        version.number,
    )
    assert run.after["received"] == [entry.pk] and run.after["tokens"] > 0
    assert runs(elsewhere) == []
    published = Event.objects.get(memory_version=version, action=EventAction.VERSION_PUBLISHED)
    assert published.after["memory_tests"] == {"passed": 1, "failed": 0}


def test_a_failing_test_holds_the_publish_until_a_lead_acknowledges_it(lead, reviewer):
    entry = active(reviewer, scope=SCOPE)
    test = a_test(lead, f"absent #{entry.pk}", name="no config lesson")

    with pytest.raises(UnacknowledgedWarnings) as held:
        publish_version(actor=lead, summary="config lesson")
    [warning] = held.value.warnings
    assert (warning.check, warning.memory_test, warning.entry_id) == ("memory_test", test.pk, None)
    assert warning.text == (
        f"memory test #{test.pk} (no config lesson) at {SCOPE}: #{entry.pk} is received, at rank 1."
    )
    assert MemoryVersion.objects.count() == 1 and not ReleasedEntry.objects.exists()  # the rows went with it
    [refused] = runs(test)  # what held it stays in the test's history
    assert (refused.action, refused.memory_version, refused.after["memory_version"]) == (
        EventAction.MEMORY_TEST_FAILED,
        None,
        2,
    )
    assert refused.reason == f"#{entry.pk} is received, at rank 1"

    version = publish_version(actor=lead, summary="config lesson", acknowledge=True)
    assert version.number == 2 and reads.published_version() == version
    assert version.acknowledged == [warning.as_json()] and version.acknowledged[0]["memory_test"] == test.pk
    acknowledged = Event.objects.get(memory_test=test, action=EventAction.MEMORY_TEST_ACKNOWLEDGED)
    assert (acknowledged.actor, acknowledged.memory_version) == (lead, version)
    assert acknowledged.reason == f"published as version 2 despite: #{entry.pk} is received, at rank 1"
    assert [r.action for r in runs(test)] == [EventAction.MEMORY_TEST_FAILED] * 2


def test_a_test_reads_the_rows_about_to_be_published_not_the_published_ones(lead, reviewer):
    entry = active(reviewer, scope=SCOPE)
    test = a_test(lead, f"top #{entry.pk}")
    publish_version(actor=lead, summary="v2")
    entry = send_back_for_recheck(entry.pk, actor=reviewer, expected_version=entry.version)
    services.reject_candidate(entry.pk, actor=reviewer, expected_version=entry.version, reason="wrong")  # retired
    with pytest.raises(UnacknowledgedWarnings) as held:
        publish_version(actor=lead, summary="v3: the lesson goes")
    assert held.value.warnings[0].text.endswith(f"#{entry.pk} is not among the lessons received.")
    assert [r.action for r in runs(test)] == [EventAction.MEMORY_TEST_PASSED, EventAction.MEMORY_TEST_FAILED]


def test_the_draft_is_tested_and_nothing_is_kept(lead, reviewer):
    entry = active(reviewer, scope=SCOPE)
    test = a_test(lead, f"absent #{entry.pk}")
    events = Event.objects.count()

    [result] = memory_tests_on_draft()

    assert (result.test, result.passed, result.version) == (test, False, None)
    assert result.failures == [f"#{entry.pk} is received, at rank 1"]
    assert MemoryVersion.objects.count() == 1 and not ReleasedEntry.objects.exists()
    assert Event.objects.count() == events
    assert memory_tests_on_draft(scope_prefix="acme/web") == []  # nothing pending there


def test_a_correction_that_supersedes_an_entry_brings_its_test(lead, reviewer):
    wrong = active(
        reviewer,
        scope=SCOPE,
        trigger="Merging a feature branch into main",
        content="Always rebase before merging.",
        conditions=[],
    )
    right = active(
        reviewer,
        scope=f"{SCOPE}/container",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        conditions=[],
    )
    [conflict] = conflicts.detect_conflicts_for(right)
    wrong.refresh_from_db()
    right.refresh_from_db()

    conflicts.keep_entry(conflict.pk, actor=lead, keep=right.pk, version_a=wrong.version, version_b=right.version)

    test = MemoryTest.objects.get(corrects=wrong)
    assert test.expectations == [{"kind": "outranks", "entry": right.pk, "over": wrong.pk}]
    assert (test.scope, test.query, test.name) == (
        right.scope,
        right.trigger,
        f"#{right.pk} outranks #{wrong.pk}, which it corrects",
    )
    created = Event.objects.get(memory_test=test)
    assert (created.action, created.actor) == (EventAction.MEMORY_TEST_CREATED, lead)
    assert created.reason == f"made with the correction: #{right.pk} supersedes #{wrong.pk}"

    version = publish_version(actor=lead, summary="the correction", acknowledge=True)
    [run] = runs(test)
    assert (run.action, run.memory_version) == (EventAction.MEMORY_TEST_PASSED, version)
    assert run.after["received"] == [right.pk]


def test_the_command_runs_the_tests_and_fails_on_a_failure(lead, reviewer, capsys):
    entry = active(reviewer, scope=SCOPE)
    publish_version(actor=lead, summary="v2")
    passing = a_test(lead, f"top #{entry.pk}", name="has it")
    failing = a_test(lead, f"absent #{entry.pk}", name="lacks it")

    with pytest.raises(CommandError, match="1 passed, 1 failed.") as failed:
        call_command("run_memory_tests", "--scope", SCOPE)
    assert failed.value.returncode == 1
    out = capsys.readouterr().out
    assert f"passed  #{passing.pk} has it ({SCOPE}, on version 2" in out
    assert f"FAILED  #{failing.pk} lacks it ({SCOPE}, on version 2" in out and f"#{entry.pk} is received" in out
    [run] = runs(failing)
    assert (run.actor_label, run.memory_version.number) == ("manage.py run_memory_tests", 2)

    retire_memory_test(failing.pk, actor=lead, expected_version=1)
    call_command("run_memory_tests", "--version", "2")
    assert capsys.readouterr().out.endswith("1 passed, 0 failed.\n")
    with pytest.raises(CommandError, match="No memory version 9"):
        call_command("run_memory_tests", "--version", "9")


def test_a_run_reads_its_context_blocks_confidences_at_one_moment(lead, reviewer, monkeypatch):
    """As an agent's read does (tests/api/test_read_answer.py, test_an_answer_says_one_confidence_per_entry):
    with a clock that moves a day at each reading, lessons of one confidence still say one in the block."""
    for case in ("the web container", "the worker container", "the cron container"):
        active(reviewer, scope=SCOPE, trigger=f"Editing config files in {case}", content="Edit the mounted copy.")
    publish_pending()
    number = reads.published_version().number
    test = a_test(lead, "under 3000 tokens")
    blocks = []
    built = test_reads.build_context

    def building(*args):
        blocks.append(built(*args))
        return blocks[-1]

    monkeypatch.setattr(test_reads, "build_context", building)
    clock_moving_a_day_a_reading(monkeypatch)
    with config.overriding(DECAY_FACTOR=0.5):
        [result] = test_reads.run_tests([test], number)
    [(included, context)] = blocks
    confidences = re.findall(r"confidence (\d\.\d\d)", context)
    assert len(included) == len(confidences) == 3 and len(set(confidences)) == 1, confidences
    assert result.passed
