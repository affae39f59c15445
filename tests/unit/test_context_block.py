"""How a lesson's line in the context block begins: its trigger as a situation, read as English."""

import pytest

from curation.rules import context_block


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


@pytest.mark.parametrize(
    "boundary, said",
    [
        ("Not for hotfix branches, which are tagged by the release manager.", "Not for hotfix branches, which"),
        ("Does not apply to read-only calls (GET /v1/charges).", "Does not apply to read-only calls"),
        ("does not hold on the host checkout", "Does not hold on the host checkout"),
        ("Never during an incident", "Never during an incident"),
        ("on the shared staging database", "Does not hold: on the shared staging database"),
    ],
)
def test_a_boundary_is_said_once(boundary, said):
    assert context_block.boundary_clause(boundary).startswith(said)
    assert "Does not hold: Not" not in context_block.boundary_clause(boundary)
    assert "Does not hold: Does" not in context_block.boundary_clause(boundary)
