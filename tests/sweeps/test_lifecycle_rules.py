"""The background policies as tables: each row is a case a reviewer could check by hand, first against the
pure rule in curation/rules/lifecycle.py, then against the SQL the sweep runs on the same rows."""

import datetime

import pytest

from django.db import connection

from curation.rules import lifecycle
from curation.models import Entry, Status
from curation.selectors.confidence import confidence, confidence_sql
from curation.services.entry_writes import rewrite_decay_keys
from curation.sweeps import run_sweep
from tests.factories import AS_OF, add_evidence_row, days_before, make_archived, make_entry, retrieve

pytestmark = pytest.mark.django_db

R = None
P = None


@pytest.fixture(autouse=True)
def rules():
    global R, P
    R, P = lifecycle.rules(), lifecycle.policies()


# --- decay and archive -----------------------------------------------------------------------------------

DECAY_CASES = [
    # base, days since last verification, expected effective confidence
    (0.80, 0, 0.80),
    (0.80, 30, 0.76),  # 5% per 30 days
    (0.80, 60, 0.722),  # 0.8 × 0.95²
    (0.80, 15, 0.80 * 0.95**0.5),  # continuous, not stepwise
    (0.95, 365, 0.95 * 0.95 ** (365 / 30)),
    (0.85, 3650, 0.05),  # never below the floor
    (0.70, -5, 0.70),  # verified "in the future" (clock skew): no growth
    (0.05, 90, 0.05),
]


@pytest.mark.parametrize("base, days, expected", DECAY_CASES)
def test_decayed_rule(base, days, expected):
    assert lifecycle.decayed(base, days_before(days), AS_OF, R) == pytest.approx(expected, abs=1e-9)


def _confidence_in_sql(entries, at) -> dict:
    """Each entry's confidence at `at` as the queries compute it: the ORM expression, and on PostgreSQL
    also the raw SQL of the ranking queries."""
    ids = [e.pk for e in entries]
    found = {
        pk: [value]
        for pk, value in Entry.objects.filter(pk__in=ids).annotate(c=confidence(at, R)).values_list("pk", "c")
    }
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            live = confidence_sql("e.base_confidence", "COALESCE(e.last_verified_at, e.created_at)", R)
            cursor.execute(
                f"SELECT e.id, {live} FROM curation_entry e WHERE e.id = ANY(%(ids)s)", {"ids": ids, "now": at}
            )
            for pk, value in cursor.fetchall():
                found[pk].append(value)
    return found


def test_confidence_sql_equals_the_rule():
    entries = [
        (make_entry(base_confidence=base, last_verified_at=days_before(days)), base, days)
        for base, days, _ in DECAY_CASES
    ]
    in_sql = _confidence_in_sql([e for e, _, _ in entries], AS_OF)
    for entry, base, days in entries:
        expected = lifecycle.decayed(base, days_before(days), AS_OF, R)
        assert Entry.objects.get(pk=entry.pk).confidence_at(AS_OF) == pytest.approx(expected, abs=1e-9), (base, days)
        assert in_sql[entry.pk] == [pytest.approx(expected, abs=1e-9)] * len(in_sql[entry.pk]), (base, days)


def test_decay_counts_from_creation_when_never_verified():
    entry = make_entry(base_confidence=0.8, last_verified_at=None, created_at=days_before(30))
    assert Entry.objects.get(pk=entry.pk).confidence_at(AS_OF) == pytest.approx(0.76)
    assert _confidence_in_sql([entry], AS_OF)[entry.pk][0] == pytest.approx(0.76)


def test_nothing_rewrites_confidence_as_days_pass():
    entry = make_entry(base_confidence=0.8, last_verified_at=days_before(30))
    version = entry.version
    run_sweep("decay", as_of=AS_OF)
    stored = Entry.objects.get(pk=entry.pk)
    assert stored.version == version and stored.updated_at == entry.updated_at
    assert stored.confidence_at(AS_OF) == pytest.approx(0.76)
    assert stored.confidence_at(AS_OF + datetime.timedelta(days=30)) == pytest.approx(0.722)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.75])
@pytest.mark.parametrize("days_later", [0, 1, 45, 400])
def test_the_decay_index_finds_what_is_below_a_threshold_and_at_most_what_is_at_it(threshold, days_later):
    at = AS_OF + datetime.timedelta(days=days_later)
    entries = [
        make_entry(base_confidence=base, last_verified_at=days_before(days))
        for base, days, _ in DECAY_CASES + [(b, d, None) for b, d, _ in ARCHIVE_CASES]
        if days >= 0
    ]
    below = {e.pk for e in entries if lifecycle.decayed(e.base_confidence, e.last_verified_at, at, R) < threshold}
    in_range = set(
        Entry.objects.filter(status=Status.ACTIVE, decay_key__lt=lifecycle.key_below(threshold, at, R)).values_list(
            "pk", flat=True
        )
    )
    # The range leans to taking an entry exactly at the threshold (the sweeps then decide it by the rule).
    at_it = {
        e.pk
        for e in entries
        if lifecycle.decayed(e.base_confidence, e.last_verified_at, at, R) == pytest.approx(threshold, abs=1e-9)
    }
    assert below <= in_range <= below | at_it


def test_the_decay_key_in_sql_equals_the_rule():
    entries = [make_entry(base_confidence=base, last_verified_at=days_before(days)) for base, days, _ in DECAY_CASES]
    entries.append(make_entry(base_confidence=0.8, last_verified_at=None, created_at=days_before(30)))
    python = dict(Entry.objects.values_list("pk", "decay_key"))  # written by the write path, in Python
    Entry.objects.update(decay_key=0.0)
    assert rewrite_decay_keys(Entry.objects.all()) == len(entries)
    for pk, key in Entry.objects.values_list("pk", "decay_key"):
        assert key == pytest.approx(python[pk], abs=1e-7)


ARCHIVE_CASES = [
    # base, days, archived?
    (0.30, 0, False),  # exactly at the threshold: kept
    (0.30, 30, True),  # 0.285
    (0.32, 30, False),  # 0.304
    (0.60, 400, False),  # 0.3028
    (0.60, 420, True),  # 0.2926
    (0.95, 700, True),  # even a human correction fades after two unverified years: 0.287
]


@pytest.mark.parametrize("base, days, archived", ARCHIVE_CASES)
def test_should_archive_rule(base, days, archived):
    assert lifecycle.should_archive(lifecycle.decayed(base, days_before(days), AS_OF, R), R) is archived


def test_archive_sql_equals_the_rule():
    entries = [(make_entry(base_confidence=b, last_verified_at=days_before(d)), b, d) for b, d, _ in ARCHIVE_CASES]
    run_sweep("archive", as_of=AS_OF)
    for (entry, base, days), (_, _, archived) in zip(entries, ARCHIVE_CASES):
        assert (Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED) is archived, (base, days)


# --- revive ----------------------------------------------------------------------------------------------

ARCHIVED_AT = days_before(20)


@pytest.mark.parametrize(
    "evidence, expected_base",
    [
        ([("self", "supports", days_before(1), days_before(1))], None),  # self never revives
        ([("independent", "supports", days_before(1), days_before(1))], 0.80),
        ([("external", "supports", days_before(1), days_before(1))], 0.85),
        ([("external", "supports", days_before(25), days_before(25))], None),  # before the archiving
        ([("external", "contradicts", days_before(1), days_before(1))], None),
        ([("external", "supports", days_before(1), AS_OF + datetime.timedelta(hours=1))], None),  # after as_of
        (
            [
                ("independent", "supports", days_before(2), days_before(2)),
                ("external", "supports", days_before(5), days_before(5)),
            ],
            0.85,
        ),  # the strongest decides
        ([("external", "supports", days_before(3000), days_before(1))], None),  # old news: would re-archive
    ],
)
def test_revival_rule(evidence, expected_base):
    decision = lifecycle.revival(evidence, archived_at=ARCHIVED_AT, now=AS_OF, rules=R)
    if expected_base is None:
        assert decision is None
    else:
        assert decision.base_confidence == pytest.approx(expected_base)


def test_revive_sql_follows_the_rule():
    cases = {
        "self": make_archived(archived_at=ARCHIVED_AT),
        "independent": make_archived(archived_at=ARCHIVED_AT),
        "external": make_archived(archived_at=ARCHIVED_AT),
    }
    for signal, entry in cases.items():
        add_evidence_row(entry, signal=signal, observed_at=days_before(3))
    run_sweep("revive", as_of=AS_OF)
    got = {signal: Entry.objects.get(pk=e.pk) for signal, e in cases.items()}
    assert got["self"].status == Status.ARCHIVED
    assert got["independent"].status == Status.ACTIVE and got["independent"].base_confidence == pytest.approx(0.80)
    assert got["external"].status == Status.ACTIVE and got["external"].base_confidence == pytest.approx(0.85)
    assert got["external"].last_verified_at == days_before(3)
    assert got["external"].confidence_at(AS_OF) == pytest.approx(lifecycle.decayed(0.85, days_before(3), AS_OF, R))


# --- periodic deletion (unused) ---------------------------------------------------------------------------

W = 30  # days, the default window


@pytest.mark.parametrize(
    "created_days, verified_days, retrievals, expected",
    [
        (W, W, 0, True),  # exactly W old, never retrieved: archived
        (W - 0.01, W - 0.01, 0, False),  # younger than W (approved when submitted)
        (400, W - 1, 0, False),  # verified inside the window
        (400, None, 0, True),
        (400, 100, 1, False),  # retrieved once: more than alpha = 0
    ],
)
def test_unused_rule_and_sql(created_days, verified_days, retrievals, expected):
    verified = days_before(verified_days) if verified_days is not None else None
    assert (
        lifecycle.is_unused(
            created_at=days_before(created_days),
            last_verified_at=verified,
            retrievals_in_window=retrievals,
            now=AS_OF,
            policies=P,
        )
        is expected
    )
    entry = make_entry(created_at=days_before(created_days), last_verified_at=verified)
    if retrievals:
        retrieve(entry, at=days_before(2), times=retrievals)
    run_sweep("unused", as_of=AS_OF)
    assert (Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED) is expected


def test_unused_without_sparing_verified_entries(settings):
    """UNUSED_SPARES_VERIFIED off (the replay's paper rules): a recent verification does not spare an old,
    unretrieved entry; the rule and the sweep agree."""
    settings.CURATION = {**settings.CURATION, "UNUSED_SPARES_VERIFIED": False}
    policies = lifecycle.policies()
    assert lifecycle.is_unused(
        created_at=days_before(400),
        last_verified_at=days_before(W - 1),
        retrievals_in_window=0,
        now=AS_OF,
        policies=policies,
    )
    verified = make_entry(created_at=days_before(400), last_verified_at=days_before(W - 1))
    young = make_entry(created_at=days_before(W - 1), last_verified_at=None)
    run_sweep("unused", as_of=AS_OF)
    assert Entry.objects.get(pk=verified.pk).status == Status.ARCHIVED
    assert Entry.objects.get(pk=young.pk).status == Status.ACTIVE


def test_unused_counts_only_retrievals_inside_the_window(settings):
    settings.CURATION = {**settings.CURATION, "UNUSED_MAX_RETRIEVALS": 2}
    inside = make_entry(last_verified_at=days_before(100))
    over = make_entry(last_verified_at=days_before(100))
    retrieve(inside, at=days_before(5), times=2)  # alpha times: still unused
    retrieve(inside, at=days_before(40), times=5)  # outside the window: not counted
    retrieve(over, at=days_before(5), times=3)  # alpha + 1: used
    run_sweep("unused", as_of=AS_OF)
    assert Entry.objects.get(pk=inside.pk).archive_reason == "unused"
    assert Entry.objects.get(pk=over.pk).status == Status.ACTIVE


# --- history-based deletion (low utility) -----------------------------------------------------------------


@pytest.mark.parametrize(
    "retrieval_count, utility_sum, utility_n, expected",
    [
        (3, 1.2, 3, False),  # average exactly 0.4 = beta: not below
        (3, 1.19, 3, True),
        (2, 0.0, 2, False),  # retrieved fewer than n = 3 times
        (5, 0.0, 0, False),  # no outcome reported yet
        (10, 0.9, 3, True),
        (10, 4.0, 5, False),
    ],
)
def test_low_utility_rule_and_sql(retrieval_count, utility_sum, utility_n, expected):
    assert (
        lifecycle.is_low_utility(
            retrieval_count=retrieval_count, utility_sum=utility_sum, utility_n=utility_n, policies=P
        )
        is expected
    )
    entry = make_entry(retrieval_count=retrieval_count, utility_sum=utility_sum, utility_n=utility_n)
    run_sweep("low_utility", as_of=AS_OF)
    assert (Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED) is expected


# --- review due -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "review_days, verified_days, expected",
    [
        (1, 100, True),  # review date was yesterday
        (0, 100, False),  # today: not passed yet
        (-10, 100, False),  # in the future
        (5, 2, False),  # verified (e.g. confirmed) since the review date
        (5, None, True),
    ],
)
def test_review_due_rule_and_sql(review_days, verified_days, expected):
    review_by = (AS_OF - datetime.timedelta(days=review_days)).date()
    verified = days_before(verified_days) if verified_days is not None else None
    assert lifecycle.is_review_due(review_by=review_by, last_verified_at=verified, today=AS_OF.date()) is expected
    entry = make_entry(review_by=review_by, last_verified_at=verified)
    run_sweep("review_due", as_of=AS_OF)
    assert (Entry.objects.get(pk=entry.pk).queued_at is not None) is expected


# --- capacity: who is displaced first ---------------------------------------------------------------------


def test_displacement_order_sql_equals_the_rule(settings):
    # (signal, supporting evidence signals, confidence, utility_sum, utility_n)
    rows = [
        ("external", [], 0.40, 0.0, 0),
        ("self", ["external"], 0.30, 0.0, 0),  # strength from its evidence: external
        ("self", [], 0.85, 0.9, 1),  # self, merit 0.765 (0.85: the self cap)
        ("self", [], 0.60, 0.1, 1),  # self, merit 0.06: the weakest
        ("independent", [], 0.50, 0.0, 0),  # merit 0.25 (unknown utility counts 0.5)
        ("independent", ["self"], 0.85, 1.0, 2),  # merit 0.425
        ("self", [], 0.50, 0.0, 0),  # self, merit 0.25
    ]
    entries = []
    for signal, evidence, base, utility_sum, utility_n in rows:
        e = make_entry(
            scope="acme/web", signal=signal, base_confidence=base, utility_sum=utility_sum, utility_n=utility_n
        )
        for ev in evidence:
            add_evidence_row(e, signal=ev, observed_at=days_before(50))
        entries.append((e, signal, evidence, base, utility_sum, utility_n))
    newest = make_entry(scope="acme/web/ci", signal="self", base_confidence=0.1)  # never displaced
    expected = sorted(
        entries,
        key=lambda t: lifecycle.displacement_key(
            strength=lifecycle.evidence_strength(t[1], t[2]),
            confidence=t[3],
            average_utility=t[4] / t[5] if t[5] else None,
            entry_id=t[0].pk,
        ),
    )
    settings.CURATION = {**settings.CURATION, "SCOPE_CAPACITY": {"acme/web": 5}}  # 8 active: 3 must go
    run_sweep("capacity", as_of=AS_OF)
    archived = list(Entry.objects.filter(status=Status.ARCHIVED).order_by("id").values_list("id", flat=True))
    assert archived == sorted(t[0].pk for t in expected[:3])
    assert [t[0].pk for t in expected[:3]] == [entries[3][0].pk, entries[6][0].pk, entries[2][0].pk]
    assert Entry.objects.get(pk=newest.pk).status == Status.ACTIVE
    assert set(Entry.objects.filter(status=Status.ARCHIVED).values_list("archive_reason", flat=True)) == {
        f"displaced by #{newest.pk}"
    }
