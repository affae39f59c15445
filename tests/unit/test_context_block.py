"""How a lesson's line in the context block begins: its trigger as a situation, read as English."""

import pytest


@pytest.mark.parametrize(
    "trigger, clause",
    [
        ("Rotating the billing webhook signing key", "When rotating the billing webhook signing key"),
        ("When deploying payroll on a Friday.", "When deploying payroll on a Friday"),
        ("when deploying", "When deploying"),
        ("If the cache is cold", "If the cache is cold"),
        ("AWS keys expire", "When AWS keys expire"),
        ("Dana is away", "When Dana is away"),
        ("After a failed migration", "After a failed migration"),
        ("The cache is cold", "When the cache is cold"),
    ],
)
def test_a_trigger_reads_as_the_clause_after_when(trigger, clause):
    from curation.rules.context_block import situation

    assert situation(trigger) == clause
