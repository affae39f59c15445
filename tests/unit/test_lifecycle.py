"""The confidence rules as a table: each row is one case a reviewer could check by hand."""

import datetime

import pytest

from curation.rules import lifecycle

R = None


@pytest.fixture(autouse=True)
def rules(settings):
    global R
    R = lifecycle.rules()


NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    "kind, signal, proposed, external, expected",
    [
        ("failure_lesson", "self", 0.9, False, 0.85),  # self-made lessons start at most 0.85
        ("failure_lesson", "self", 0.6, False, 0.6),
        ("failure_lesson", "self", None, False, 0.7),  # default for a self-signal lesson
        ("procedure", "independent", 0.9, False, 0.85),  # no external support yet: still capped
        ("procedure", "independent", 0.9, True, 0.9),  # external evidence lifts the cap
        ("procedure", "external", 0.99, False, 0.95),  # the ceiling is 0.95
        ("fact", "self", 0.01, False, 0.05),  # the floor is 0.05
        ("human_correction", "self", 0.2, False, 0.95),  # human corrections start at 0.95
        ("human_correction", "external", None, True, 0.95),
    ],
)
def test_initial_confidence(kind, signal, proposed, external, expected):
    got = lifecycle.initial_confidence(
        kind=kind, signal=signal, proposed=proposed, has_external_support=external, rules=R
    )
    assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    "base, external, expected",
    [
        (0.70, False, 0.75),  # +0.05 on success
        (0.82, False, 0.85),  # cannot pass 0.85 without external support
        (0.85, False, 0.85),
        (0.85, True, 0.90),  # with external support it can
        (0.93, True, 0.95),  # the ceiling holds
        (0.95, False, 0.95),  # a human correction above the self cap is not pulled down
    ],
)
def test_after_success(base, external, expected):
    assert lifecycle.after_success(base, has_external_support=external, rules=R) == pytest.approx(expected)


@pytest.mark.parametrize("base, expected", [(0.7, 0.5), (0.3, 0.1), (0.2, 0.05), (0.05, 0.05)])
def test_after_failure(base, expected):
    assert lifecycle.after_failure(base, R) == pytest.approx(expected)


@pytest.mark.parametrize(
    "base, days, expected",
    [
        (0.8, 0, 0.8),
        (0.8, 30, 0.8 * 0.95),
        (0.8, 60, 0.8 * 0.95**2),
        (0.8, 15, 0.8 * 0.95**0.5),
        (0.8, 365, 0.8 * 0.95 ** (365 / 30)),
        (0.1, 3650, 0.05),  # decays to the floor, never below
        (0.8, -5, 0.8),  # a verification in the future does not raise confidence
    ],
)
def test_decay_from_base_and_time(base, days, expected):
    verified = NOW - datetime.timedelta(days=days)
    assert lifecycle.decayed(base, verified, NOW, R) == pytest.approx(expected)


def test_decay_never_compounds():
    """Running the sweep twice at the same moment gives the result of running it once."""
    verified = NOW - datetime.timedelta(days=90)
    once = lifecycle.decayed(0.8, verified, NOW, R)
    twice = lifecycle.decayed(0.8, verified, NOW, R)
    assert once == twice == pytest.approx(0.8 * 0.95**3)


@pytest.mark.parametrize(
    "confidence, archive, retrievable",
    [
        (0.29, True, False),
        (0.3, False, False),
        (0.49, False, False),
        (0.5, False, True),
        (0.95, False, True),
    ],
)
def test_thresholds(confidence, archive, retrievable):
    assert lifecycle.should_archive(confidence, R) is archive
    assert lifecycle.is_retrievable(confidence, R) is retrievable


def test_thresholds_come_from_settings(settings):
    settings.CURATION = {**settings.CURATION, "ARCHIVE_BELOW": 0.4, "SELF_SIGNAL_CAP": 0.8}
    r = lifecycle.rules()
    assert lifecycle.should_archive(0.35, r)
    assert (
        lifecycle.initial_confidence(kind="fact", signal="self", proposed=0.9, has_external_support=False, rules=r)
        == 0.8
    )


@pytest.mark.parametrize(
    "signals, expected",
    [
        (["self"], "self"),
        (["self", "external"], "external"),
        (["independent", "self"], "independent"),
        ([], None),
    ],
)
def test_strongest_signal(signals, expected):
    assert lifecycle.strongest_signal(signals) == expected
