"""Reads of memory tests: a lead's tests, which tests a release touches, a test run on a version, and the
results per version and per test (from their Events).

A test runs the retrieval agents get: `releases.retrieve_released` on the version's rows (not its Redis
cache, which is keyed by version number: a version about to be published has no number agents read yet),
the quarantined entries served as their placeholder, and the context block built to the test's budget."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Max

from curation.rules import access, clock, config, memory_tests
from curation.rules.context_block import build_context
from curation.models import Event, EventAction, MemoryTest, ReleasedSkill
from curation.rules.versions import Warning

from .releases import as_served, in_version, retrieve_released

RUN_ACTIONS = (EventAction.MEMORY_TEST_PASSED, EventAction.MEMORY_TEST_FAILED)
HISTORY_SHOWN = 50


@dataclass
class TestResult:
    """A test's verdict on one version: what the agent would receive and what it breaks."""

    test: MemoryTest
    version: int | None  # None: the draft, a version not yet published
    received: list[int] = field(default_factory=list)
    tokens: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_json(self) -> dict:
        return {
            "memory_test": self.test.pk,
            "name": self.test.name,
            "scope": self.test.scope,
            "version": self.version,
            "passed": self.passed,
            "failures": self.failures,
            "received": self.received,
            "tokens": self.tokens,
        }


def run_test(test: MemoryTest, number: int, *, shown_as: int | None = None, at=None) -> TestResult:
    """`test` asked of version `number`'s rows (`shown_as`: the number the result names; None for a draft
    built under a number not yet published). One ranking, one query for the quarantine, and one for the
    skills when the test names one. The context block's confidences are read at one moment, `at` (now when
    not given), as the agents' read reads its answer's (api.views)."""
    moment = at or clock.now()
    scopes = access.scope_ancestors(test.scope)
    ranked = retrieve_released(
        number, scopes=scopes, q=test.query, k=test.k, min_confidence=config.RETRIEVE_AT_LEAST.value
    )
    included, context = build_context(as_served(ranked), memory_tests.budget_chars(test.budget_tokens), moment)
    served = [memory_tests.Served(e.pk, e.scope, bool(getattr(e, "quarantined", False))) for e in included]
    skills = set()
    if any("skill" in expected for expected in test.expectations):
        skills = set(
            ReleasedSkill.objects.filter(in_version(number), scope__in=scopes).values_list("skill_id", flat=True)
        )
    return TestResult(
        test,
        shown_as,
        received=[s.entry_id for s in served],
        tokens=memory_tests.estimate_tokens(context),
        failures=memory_tests.failures(test.expectations, served, skills, context),
    )


def run_tests(tests, number: int, *, shown_as: int | None = None, at=None) -> list[TestResult]:
    """Each of `tests` on version `number`, all at one moment (`at`, now when not given)."""
    moment = at or clock.now()
    return [run_test(test, number, shown_as=shown_as, at=moment) for test in tests]


def active_tests(prefixes=None) -> list[MemoryTest]:
    """The active tests under `prefixes` (None: all), by scope."""
    found = MemoryTest.objects.filter(access.scope_q(prefixes), retired_at__isnull=True)
    return list(found.order_by("scope", "pk"))


def tests_touched_by(changes) -> list[MemoryTest]:
    """The active tests a release's changes may alter the answer of: those asked at a changed entry's or
    skill's scope or below it (a test reads its scope and the scopes above it)."""
    scopes = {scope for change in changes for scope in _scopes_of(change)}
    if not scopes:
        return []
    return [t for t in active_tests() if any(access.scope_covers(scope, t.scope) for scope in scopes)]


def _scopes_of(change) -> set[str]:
    return {values["scope"] for values in (change.before, change.after) if values}


def tests_for(user) -> list[MemoryTest]:
    """The tests `user` manages (within their scopes): active first, then the retired, each by scope."""
    found = MemoryTest.objects.filter(access.scope_q(access.user_scope_prefixes(user)))
    return sorted(found, key=lambda t: (t.retired_at is not None, t.scope, t.pk))


def test_for(user, test_id: int) -> MemoryTest:
    """MemoryTest.DoesNotExist when there is none, or it lies outside `user`'s scopes."""
    return MemoryTest.objects.filter(access.scope_q(access.user_scope_prefixes(user))).get(pk=test_id)


def last_runs(tests) -> dict[int, Event]:
    """Each test's latest run (its Event), by test id: two queries."""
    ids = [t.pk for t in tests]
    if not ids:
        return {}
    latest = (
        Event.objects.filter(memory_test_id__in=ids, action__in=RUN_ACTIONS)
        .values("memory_test_id")
        .annotate(last=Max("pk"))
        .values_list("last", flat=True)
    )
    return {e.memory_test_id: e for e in Event.objects.filter(pk__in=list(latest))}


def history_of(test: MemoryTest, limit: int = HISTORY_SHOWN) -> list[Event]:
    """A test's Events, newest first: created, changed, retired, each run and acknowledgement."""
    return list(Event.objects.filter(memory_test=test).order_by("-created_at", "-pk")[:limit])


def results_per_version(versions, user=None) -> dict[int, dict]:
    """{version id: {"passed": n, "failed": n, "acknowledged": n}}: the runs of the tests `user` may see at
    each version's publish, counted from their Events in one query."""
    counts: dict[int, dict] = {}
    ids = [v.pk for v in versions]
    if not ids:
        return counts
    prefixes = access.user_scope_prefixes(user) if user is not None else None
    rows = (
        Event.objects.filter(
            access.scope_q(prefixes, "memory_test__scope"),
            memory_version_id__in=ids,
            memory_test__isnull=False,
            action__in=(*RUN_ACTIONS, EventAction.MEMORY_TEST_ACKNOWLEDGED),
        )
        .values("memory_version_id", "action")
        .annotate(n=Count("pk"))
    )
    words = {
        EventAction.MEMORY_TEST_PASSED: "passed",
        EventAction.MEMORY_TEST_FAILED: "failed",
        EventAction.MEMORY_TEST_ACKNOWLEDGED: "acknowledged",
    }
    for row in rows:
        counts.setdefault(row["memory_version_id"], {"passed": 0, "failed": 0, "acknowledged": 0})[
            words[row["action"]]
        ] = row["n"]
    return counts


def as_warning(result: TestResult) -> Warning:
    """A failed test as the pre-publish warning a lead acknowledges."""
    test = result.test
    return Warning(
        "memory_test",
        None,
        f"memory test #{test.pk} ({test.name}) at {test.scope}: {'; '.join(result.failures)}.",
        memory_test=test.pk,
    )
