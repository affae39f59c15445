"""What approving a candidate would change for agents, before anyone approves it: the scope's recent retrievals
replayed against the published version plus the candidate (which of them would have received it, at what
rank), and the memory tests whose verdict it would turn.

The candidate is added to the published version as a released row in a transaction that is rolled back, so
the replay is the agents' own ranking (`retrieve_released`) over the rows they would read, and nothing is kept.
Bounded: at most IMPACT_RETRIEVALS rankings and the memory tests asked at or below the candidate's scope."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from curation.rules import access, config
from curation.models import Entry, MemoryTest, ReleasedEntry, Retrieval, Status
from curation.rules.versions import RELEASED_FIELDS
from curation.selectors import memory_tests as test_reads
from curation.selectors import releases as reads
from curation.selectors.retrieval import retrievable_scopes

IMPACT_RETRIEVALS = 20  # the scope's most recent retrievals replayed


@dataclass(frozen=True)
class Reached:
    """A recent retrieval that would have received the candidate: at `rank` of `of`."""

    retrieval: Retrieval
    rank: int
    of: int


@dataclass(frozen=True)
class TurnedTest:
    test: MemoryTest
    passed_before: bool
    passed_after: bool
    failures: tuple[str, ...]


@dataclass
class Impact:
    replayed: int = 0
    reached: list[Reached] = field(default_factory=list)
    tests_run: int = 0
    turned: list[TurnedTest] = field(default_factory=list)


class _Replayed(Exception):
    def __init__(self, impact: Impact):
        self.impact = impact


def candidate_impact(entry_id: int, *, user) -> Impact:
    """The impact of approving candidate `entry_id`, as `user` may see it (Entry.DoesNotExist outside their
    scopes, or for an entry that is not a pending candidate)."""
    entry = Entry.objects.get(pk=entry_id, status=Status.PENDING)
    if not access.user_can_see_scope(user, entry.scope):
        raise Entry.DoesNotExist
    number = reads.published_number()
    retrievals = list(
        Retrieval.objects.filter(access.under_scope(entry.scope), arm="memory")
        .select_related("token")
        .order_by("-created_at")[:IMPACT_RETRIEVALS]
    )
    tests = [t for t in test_reads.active_tests() if access.scope_covers(entry.scope, t.scope)]
    before = {r.test.pk: r for r in test_reads.run_tests(tests, number)} if number else {}
    try:
        with transaction.atomic():
            ReleasedEntry.objects.create(
                entry=entry,
                valid_from=number,
                valid_to=number + 1,
                entry_version=entry.version,
                **{name: getattr(entry, name) for name in RELEASED_FIELDS},
            )
            raise _Replayed(_replay(entry, number, retrievals, tests, before))
    except _Replayed as done:
        return done.impact


def _replay(entry: Entry, number: int, retrievals, tests, before) -> Impact:
    impact = Impact(replayed=len(retrievals), tests_run=len(tests))
    floor = config.RETRIEVE_AT_LEAST.value
    for retrieval in retrievals:
        k = max(len(retrieval.entry_ids), config.RETRIEVE_LIMIT.value)
        scopes = retrievable_scopes(retrieval.scope, retrieval.token.scopes)
        ranked = reads.retrieve_released(number, scopes=scopes, q=retrieval.query, k=k, min_confidence=floor)
        ids = [r.entry.pk for r in ranked]
        if entry.pk in ids:
            impact.reached.append(Reached(retrieval, ids.index(entry.pk) + 1, len(ids)))
    for result in test_reads.run_tests(tests, number) if number else []:
        was = before[result.test.pk].passed
        if was != result.passed:
            impact.turned.append(TurnedTest(result.test, was, result.passed, tuple(result.failures)))
    return impact
