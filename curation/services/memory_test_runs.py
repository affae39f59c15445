"""Running memory tests on demand (the command, the API): the active tests under a scope, on a published
version or on the draft about to be published, each result recorded as an Event of its test."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from curation.rules import access
from curation.models import MemoryVersion
from curation.selectors import memory_tests as test_reads
from curation.selectors import releases as reads
from curation.selectors.memory_tests import TestResult

from .memory_tests import record_runs
from .releases import memory_tests_on_draft


def run_memory_tests(
    *, actor=None, actor_label: str, scope: str = "", prefixes=None, version: int | None = None, draft: bool = False
) -> list[TestResult]:
    """The active tests under `scope` (all when ""), within `prefixes` (None: every scope), run on version
    `version` (default: the published one) or, `draft`, on the version a publish would make now. Their
    results are Events (about the version too, when it is a published one). ValidationError for a version
    never published."""
    tests = [t for t in test_reads.active_tests(prefixes) if not scope or access.scope_covers(scope, t.scope)]
    if draft:
        results, ran_on = memory_tests_on_draft(tests=tests), None
    else:
        try:
            ran_on = reads.version_by_number(version if version is not None else reads.published_number())
        except MemoryVersion.DoesNotExist:
            raise ValidationError({"version": [f"No memory version {version}."]}) from None
        results = test_reads.run_tests(tests, ran_on.number, shown_as=ran_on.number)
    with transaction.atomic():
        record_runs(results, actor=actor, actor_label=actor_label, version=ran_on)
    return results
