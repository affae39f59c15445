"""The provenance trust rule as a table: what a sender may claim, the level a piece gets, where a lesson starts,
and when it rises (only on a confirmation from another source at a higher level)."""

import pytest

from curation.rules import trust
from curation.rules.trust import Piece, Sender, Source, Trust


def test_the_levels_are_ordered_from_untrusted_to_a_person():
    assert [level.label for level in sorted(Trust)] == ["untrusted", "agent", "independent", "verified", "person"]
    assert trust.parse(" Person ") is Trust.PERSON
    with pytest.raises(ValueError, match="One of: untrusted, agent, independent, verified, person"):
        trust.parse("trusted")


@pytest.mark.parametrize(
    "source, kind, evaluator, sender, refused",
    [
        (Source.OWN, "reflection", "", Sender.AGENT, None),
        (Source.RELAYED, "tool_output", "", Sender.AGENT, None),
        (Source.PERSON, "user_statement", "", Sender.AGENT, "cannot record a person's decision"),
        (Source.PERSON, "review", "", Sender.PERSON, None),
        (Source.PERSON, "user_statement", "", Sender.IMPORT, None),  # a file people wrote
        (Source.VERIFICATION, "test_result", "pytest tests/billing", Sender.AGENT, None),
        (Source.VERIFICATION, "test_result", "  ", Sender.AGENT, "check named in 'evaluator'"),
        (Source.VERIFICATION, "tool_output", "pytest", Sender.AGENT, "kind 'test_result'"),
        (Source.VERIFICATION, "reflection", "pytest", Sender.PERSON, "kind 'test_result'"),
    ],
)
def test_what_a_sender_may_claim(source, kind, evaluator, sender, refused):
    said = trust.claim_refusal(source, kind=kind, evaluator=evaluator, sender=sender)
    assert (said is None) if refused is None else (refused in said)


@pytest.mark.parametrize(
    "source, sender, independent, level",
    [
        (Source.RELAYED, Sender.AGENT, False, Trust.UNTRUSTED),
        (Source.RELAYED, Sender.AGENT, True, Trust.UNTRUSTED),
        (Source.RELAYED, Sender.PERSON, True, Trust.UNTRUSTED),  # a person relaying a web page relays it
        (Source.OWN, Sender.AGENT, False, Trust.AGENT),
        (Source.OWN, Sender.AGENT, True, Trust.INDEPENDENT),
        (Source.VERIFICATION, Sender.AGENT, False, Trust.VERIFIED),
        (Source.VERIFICATION, Sender.AGENT, True, Trust.VERIFIED),
        (Source.OWN, Sender.PERSON, True, Trust.PERSON),
        (Source.PERSON, Sender.PERSON, False, Trust.PERSON),
        (Source.PERSON, Sender.IMPORT, False, Trust.PERSON),  # CLAUDE.md
        (Source.OWN, Sender.IMPORT, False, Trust.AGENT),  # an auto-memory line
    ],
)
def test_the_level_of_a_piece(source, sender, independent, level):
    assert trust.evidence_trust(source, sender=sender, independent=independent) is level


@pytest.mark.parametrize(
    "sources, sender, origin",
    [
        ([], Sender.AGENT, Trust.AGENT),
        ([Source.OWN], Sender.AGENT, Trust.AGENT),
        ([Source.VERIFICATION], Sender.AGENT, Trust.AGENT),  # its own test does not confirm its own lesson
        ([Source.OWN, Source.RELAYED], Sender.AGENT, Trust.UNTRUSTED),
        ([Source.PERSON], Sender.PERSON, Trust.PERSON),
        ([Source.RELAYED], Sender.PERSON, Trust.UNTRUSTED),
        ([Source.PERSON], Sender.IMPORT, Trust.PERSON),
        ([Source.OWN], Sender.IMPORT, Trust.AGENT),
    ],
)
def test_where_a_new_lesson_starts(sources, sender, origin):
    assert trust.origin_trust(sources, sender=sender) is origin


AUTHOR = "agent:writer"


@pytest.mark.parametrize(
    "origin, pieces, level, why",
    [
        # Nothing from its own author raises it, whatever the author claims.
        (Trust.AGENT, [Piece(1, Trust.VERIFIED, True, AUTHOR)], Trust.AGENT, "not confirmed by another source"),
        (Trust.UNTRUSTED, [Piece(1, Trust.AGENT, True, AUTHOR)], Trust.UNTRUSTED, "relayed from elsewhere"),
        # Another agent's own word is an independent confirmation.
        (
            Trust.AGENT,
            [Piece(7, Trust.INDEPENDENT, True, "agent:other")],
            Trust.INDEPENDENT,
            "agent:other (evidence #7)",
        ),
        (Trust.UNTRUSTED, [Piece(7, Trust.INDEPENDENT, True, "agent:other")], Trust.INDEPENDENT, "agent:other"),
        # Another source relaying content is no confirmation.
        (Trust.AGENT, [Piece(7, Trust.UNTRUSTED, True, "agent:other")], Trust.AGENT, "not confirmed"),
        # A contradiction or a merge's copy never raises it.
        (Trust.AGENT, [Piece(7, Trust.PERSON, False, "rita")], Trust.AGENT, "not confirmed"),
        (Trust.AGENT, [Piece(7, Trust.PERSON, True, "rita", copied=True)], Trust.AGENT, "not confirmed"),
        # The highest confirmation wins; nothing lowers what a person confirmed.
        (
            Trust.AGENT,
            [Piece(3, Trust.INDEPENDENT, True, "agent:other"), Piece(4, Trust.VERIFIED, True, "agent:ci")],
            Trust.VERIFIED,
            "agent:ci (evidence #4)",
        ),
        (Trust.PERSON, [Piece(4, Trust.UNTRUSTED, True, "agent:other")], Trust.PERSON, "written by a person"),
        (Trust.AGENT, [Piece(9, Trust.PERSON, True, "rita")], Trust.PERSON, "confirmed by rita"),
    ],
)
def test_an_entry_rises_only_with_another_source_at_a_higher_level(origin, pieces, level, why):
    got, said = trust.entry_trust(origin, pieces, author=AUTHOR)
    assert got is level and said.startswith(level.label) and why in said


def test_what_is_made_of_several_sources_takes_the_lowest():
    assert trust.lowest([Trust.PERSON, Trust.UNTRUSTED, Trust.VERIFIED]) is Trust.UNTRUSTED
    assert trust.lowest([Trust.PERSON, Trust.INDEPENDENT]) is Trust.INDEPENDENT
    assert trust.lowest([]) is Trust.UNTRUSTED


@pytest.mark.parametrize(
    "level, approvals",
    [(Trust.UNTRUSTED, 2), (Trust.AGENT, 1), (Trust.INDEPENDENT, 1), (Trust.PERSON, 1)],
)
def test_a_skill_of_untrusted_sources_needs_two_leads(level, approvals):
    assert trust.skill_approvals_needed(level) == approvals


@pytest.mark.parametrize(
    "format, signal, source",
    [
        ("claude-code", "external", Source.PERSON),  # CLAUDE.md
        ("claude-code", "self", Source.OWN),  # auto memory
        ("codex", "external", Source.PERSON),  # AGENTS.md
        ("codex", "self", Source.OWN),
        ("markdown", "external", Source.PERSON),
        ("mem0", "self", Source.OWN),
        ("jsonl", "self", Source.OWN),
        ("some-new-format", "external", Source.OWN),  # not listed: no more than an agent's claim
    ],
)
def test_imported_files_map_to_a_source_by_who_wrote_them(format, signal, source):
    assert trust.import_source(format, signal) == source
