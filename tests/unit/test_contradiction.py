"""Contradiction detection as pure functions: which pairs of lessons give opposite advice."""

import pytest

from curation.rules.contradiction import (
    conditions_overlap,
    directives,
    find_contradiction,
    parse_lesson,
    stem,
    triggers_overlap,
)

MERGE = "Merging a feature branch into main"

CONTRADICTIONS = [
    # (a trigger, a content, b trigger, b content, expected reason)
    (
        MERGE,
        "Always rebase before merging.",
        "Merging feature branches into main",
        "Never rebase shared branches.",
        '"always rebase" against "never rebase shared branches"',
    ),
    (
        "Restarting the billing worker",
        "Restart the worker first, then rerun the job.",
        "Billing worker restart during a migration",
        "Do not restart the worker while a migration runs.",
        '"restart the worker first" against "do not restart the worker"',
    ),
    (
        "Pushing a rewritten branch",
        "Use force push to update the branch.",
        "Pushing a rewritten branch to origin",
        "Avoid using force push; it destroys colleagues' work.",
        '"use force push" against "avoid using force push"',
    ),
    (
        "Committing configuration files",
        "You must not commit secrets to the repository.",
        "Committing configuration files with credentials",
        "Always commit the secrets file so CI can read it.",
        '"must not commit secrets" against "always commit the secrets file"',
    ),
    (
        "Merge strategy for release branches",
        "Prefer merge commits.",
        "Release branches merge strategy",
        "Don’t use merge commits on release branches.",
        '"prefer merge commits" against "don\'t use merge commits"',
    ),
    (
        "Deploying the web app",
        "Run the migrations; never skip the smoke tests.",
        "Deploying the web app to staging",
        "Skipping the smoke tests is fine; always skip the smoke tests on staging.",
        '"never skip the smoke tests" against "always skip the smoke tests"',
    ),
    (
        "Cache after a schema change",
        "The cache should be cleared.",
        "Cache after a schema change in billing",
        "The cache should not be cleared, it warms slowly.",
        '"should be cleared" against "should not be cleared"',
    ),
]

NOT_CONTRADICTIONS = [
    # same advice
    (MERGE, "Always rebase before merging.", "Merging a feature branch", "Rebase onto main first, always."),
    (MERGE, "Never rebase shared branches.", "Merging feature branches into main", "Do not rebase shared branches."),
    # opposite advice, unrelated triggers
    (
        "Rotating the staging TLS certificate",
        "Always restart nginx afterwards.",
        "Editing config files inside the billing-api container",
        "Never restart nginx by hand.",
    ),
    # overlapping triggers, different actions
    (MERGE, "Always rebase before merging.", "Merging feature branches into main", "Never squash commits."),
    (
        "Choosing a database for tests",
        "Use the staging database.",
        "Choosing a database for integration tests",
        "Never use the production database.",
    ),
    (
        "Pushing a rewritten branch",
        "Never force push to main.",
        "Pushing a rewritten branch to origin",
        "Always push the tags too.",
    ),
    # same verb, different objects
    (
        "Running the test suite",
        "Always run the unit tests.",
        "Running the test suite in CI",
        "Never run the browser tests locally.",
    ),
    # no directive at all
    (MERGE, "Rebases are rare here.", "Merging feature branches into main", "Merges happen on Fridays."),
    ("", "Always rebase.", "", "Never rebase."),
]


@pytest.mark.parametrize("a_trigger, a_content, b_trigger, b_content, reason", CONTRADICTIONS)
def test_opposite_advice_on_overlapping_triggers_is_a_contradiction(a_trigger, a_content, b_trigger, b_content, reason):
    assert find_contradiction(a_trigger, a_content, b_trigger, b_content) == reason


@pytest.mark.parametrize("a_trigger, a_content, b_trigger, b_content, reason", CONTRADICTIONS)
def test_it_is_found_from_either_side(a_trigger, a_content, b_trigger, b_content, reason):
    assert find_contradiction(b_trigger, b_content, a_trigger, a_content) is not None


@pytest.mark.parametrize("a_trigger, a_content, b_trigger, b_content", NOT_CONTRADICTIONS)
def test_no_contradiction(a_trigger, a_content, b_trigger, b_content):
    assert find_contradiction(a_trigger, a_content, b_trigger, b_content) is None
    assert find_contradiction(b_trigger, b_content, a_trigger, a_content) is None


@pytest.mark.parametrize(
    "word, stemmed",
    [
        ("rebase", "rebas"),
        ("rebasing", "rebas"),
        ("rebased", "rebas"),
        ("rebases", "rebas"),
        ("stop", "stop"),
        ("stopping", "stop"),
        ("commits", "commit"),
        ("committed", "commit"),
        ("pass", "pass"),
    ],
)
def test_stem(word, stemmed):
    assert stem(word) == stemmed


def test_directives_read_markers_and_bare_imperatives():
    found = directives("Confirm the repo root. Don't stop the queue; never merge on Fridays and always tag.")
    assert [(d.positive, d.marker, d.verb) for d in found] == [
        (True, "", "confirm"),
        (False, "don't", "stop"),
        (False, "never", "merg"),
        (True, "always", "tag"),
    ]


@pytest.mark.parametrize(
    "a, b, overlap",
    [
        ("Merging a feature branch", "Merging feature branches into main", True),
        ("Editing config in the billing container", "Editing config", True),  # the shorter is contained
        ("Rotating TLS certificates", "Editing config files", False),
        ("Deploying", "Deploying", True),
        ("", "Deploying", False),
    ],
)
def test_triggers_overlap(a, b, overlap):
    assert triggers_overlap(a, b) is overlap


@pytest.mark.parametrize(
    "a, b, overlap",
    [
        ([], ["ci"], True),  # no conditions: applies everywhere
        (["ci"], ["CI", "docker"], True),
        (["ci"], ["local"], False),
        ([], [], True),
    ],
)
def test_conditions_overlap(a, b, overlap):
    assert conditions_overlap(a, b) is overlap


def test_statements_are_not_orders():
    assert directives("It saved 34 minutes last time. 3 retries were enough. You restart it.") == []


def test_search_words_are_heads_or_the_objects_of_weak_heads():
    assert parse_lesson("t", "Always restart the worker; it saved 34 minutes.").search_words == {"restart"}
    assert parse_lesson("t", "The cache should be cleared.").search_words == {"clear"}
