"""A lead's memory tests: created, changed and retired within the lead's scopes, each with its Event; their runs
and the acknowledgement of a failure recorded as Events; and the test a person's correction brings with it.

Running a test is a read (selectors.memory_tests.run_test); what is written here is that it ran and what it
found, about the test and, when it ran on a published version, about that version too."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from curation.rules import access, clock, config, memory_tests
from curation.models import Entry, EventAction, MemoryTest, MemoryVersion
from curation.rules.permissions import MANAGE_MEMORY_TESTS
from curation.selectors.memory_tests import TestResult

from .events import actor_label_for, build_event, record_event, record_events

CORRECTION_BUDGET_TOKENS = 500  # the API's default context budget (2,000 characters), in tokens


def _require_lead(actor, scope: str) -> None:
    if not actor.has_perm(MANAGE_MEMORY_TESTS):
        raise PermissionDenied("Only a lead keeps memory tests.")
    if not access.user_can_see_scope(actor, scope):
        raise PermissionDenied(f"You keep memory tests only within your scopes; {scope} is outside them.")


def create_memory_test(*, data: dict, actor, at=None) -> MemoryTest:
    """A new test from a form or a JSON body (memory_tests.clean_test); a lead's, within their scopes."""
    if not actor.has_perm(MANAGE_MEMORY_TESTS):
        raise PermissionDenied("Only a lead keeps memory tests.")
    fields = memory_tests.clean_test(data)
    _require_lead(actor, fields["scope"])
    now = at or clock.now()
    with transaction.atomic():
        test = MemoryTest.objects.create(
            **fields, created_by_label=actor.get_username(), created_at=now, updated_at=now
        )
        record_event(test, actor=actor, action=EventAction.MEMORY_TEST_CREATED, after=test.shown, at=now)
    return test


def _locked(test_id: int, actor, expected_version: int) -> MemoryTest:
    test = MemoryTest.objects.select_for_update().filter(pk=test_id).first()
    if test is None or not access.user_can_see_scope(actor, test.scope):
        raise MemoryTest.DoesNotExist  # outside the lead's scopes: as if it did not exist
    _require_lead(actor, test.scope)
    if test.retired_at is not None:
        raise ValidationError({"test": [f"Memory test #{test.pk} is retired: nothing to change."]})
    if test.version != expected_version:
        raise ValidationError(
            {"test": [f"Memory test #{test.pk} was changed since you opened it: reload it. Nothing was saved."]}
        )
    return test


def change_memory_test(test_id: int, *, data: dict, actor, expected_version: int, at=None) -> MemoryTest:
    """The test's fields replaced by `data`'s; the same value writes nothing."""
    fields = memory_tests.clean_test(data)
    now = at or clock.now()
    with transaction.atomic():
        test = _locked(test_id, actor, expected_version)
        _require_lead(actor, fields["scope"])
        before = test.shown
        if all(getattr(test, name) == value for name, value in fields.items()):
            return test
        for name, value in fields.items():
            setattr(test, name, value)
        test.version, test.updated_at = test.version + 1, now
        test.save()
        record_event(test, actor=actor, action=EventAction.MEMORY_TEST_CHANGED, before=before, after=test.shown, at=now)
    return test


def retire_memory_test(test_id: int, *, actor, expected_version: int, reason: str = "", at=None) -> MemoryTest:
    """The test stops running; it and its history stay."""
    now = at or clock.now()
    with transaction.atomic():
        test = _locked(test_id, actor, expected_version)
        _retire(test, actor=actor, reason=reason.strip(), at=now)
    return test


def retire_corrections_of_forgotten(test_ids, *, actor, reason: str, at) -> int:
    """Retire the correction tests whose correction a forget took (services.forgets names them): each asks
    that a forgotten entry outrank what it corrected, which no later version can pass. Part of the forget's
    approval, inside its transaction, with its actor; answers how many were running."""
    tests = MemoryTest.objects.select_for_update().filter(pk__in=list(test_ids), retired_at__isnull=True)
    retired = 0
    for test in tests.order_by("pk"):
        _retire(test, actor=actor, reason=reason, at=at)
        retired += 1
    return retired


def _retire(test: MemoryTest, *, actor, reason: str, at) -> None:
    before = test.shown
    test.retired_at, test.version, test.updated_at = at, test.version + 1, at
    test.save(update_fields=["retired_at", "version", "updated_at"])
    record_event(
        test, actor=actor, action=EventAction.MEMORY_TEST_RETIRED, reason=reason, before=before, after=test.shown, at=at
    )


def record_runs(
    results: list[TestResult], *, actor, actor_label: str = "", version: MemoryVersion | None = None, at=None
) -> None:
    """One Event per result, passed or failed, about the test (and the version it ran on, when published):
    in one insert, inside the caller's transaction when there is one."""
    now = at or clock.now()
    record_events(
        build_event(
            result.test,
            actor=actor,
            actor_label=actor_label or actor_label_for(actor),
            action=EventAction.MEMORY_TEST_PASSED if result.passed else EventAction.MEMORY_TEST_FAILED,
            reason="; ".join(result.failures),
            after=_run_after(result),
            at=now,
            also=(version,) if version is not None else (),
        )
        for result in results
    )


def _run_after(result: TestResult) -> dict:
    """What a run's Event records: the version it ran on (None: a draft), the verdict and the answer."""
    return {
        "memory_version": result.version,
        "passed": result.passed,
        "failures": result.failures,
        "received": result.received,
        "tokens": result.tokens,
    }


def record_acknowledgements(failed: list[TestResult], *, actor, actor_label: str, version: MemoryVersion, at) -> None:
    """A lead published `version` knowing these tests failed on it: an Event on each test and the version."""
    record_events(
        build_event(
            result.test,
            actor=actor,
            actor_label=actor_label,
            action=EventAction.MEMORY_TEST_ACKNOWLEDGED,
            reason=f"published as version {version.number} despite: " + "; ".join(result.failures),
            after={"memory_version": version.number, "failures": result.failures},
            at=at,
            also=(version,),
        )
        for result in failed
    )


def create_correction_test(corrected: Entry, correction: Entry, *, actor, at) -> MemoryTest:
    """A person's decision made `correction` supersede `corrected`: the test that the correction outranks what
    it corrects (the corrected entry is never received above it), asked at the correction's scope with its
    trigger. Part of that decision: called inside its transaction, with its actor."""
    test = MemoryTest.objects.create(
        scope=correction.scope,
        name=f"#{correction.pk} outranks #{corrected.pk}, which it corrects",
        query=correction.trigger[: memory_tests.QUERY_MAX],
        k=config.RETRIEVE_LIMIT.value,
        budget_tokens=CORRECTION_BUDGET_TOKENS,
        expectations=[{"kind": memory_tests.OUTRANKS, "entry": correction.pk, "over": corrected.pk}],
        corrects=corrected,
        created_by_label=actor.get_username(),
        created_at=at,
        updated_at=at,
    )
    record_event(
        test,
        actor=actor,
        action=EventAction.MEMORY_TEST_CREATED,
        reason=f"made with the correction: #{correction.pk} supersedes #{corrected.pk}",
        after=test.shown,
        at=at,
    )
    return test
