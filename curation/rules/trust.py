"""Provenance trust: how far a piece of evidence, and the lesson it supports, can be believed given where it
came from. Pure: the levels, what a sender may claim, a piece's level, and an entry's level from its evidence.

From highest to lowest: a person's decision or correction; an external verification (a test or check
result); an independent agent (a token other than the lesson's author); the submitting agent itself;
untrusted content (web pages, fetched documents, tool output an agent relays). A sender says what kind of
source a piece is (`Source`); the server decides its level (`evidence_trust`), never above what the sender
(`Sender`) can vouch for: an agent token cannot speak as a person, and a verification must be shaped like
one. An entry starts at its author's level (lower when it rests on relayed content) and rises only when a
different source confirms it at a higher level (`entry_trust`): nothing it says about itself, and nothing a
merge copies, can raise it. What is made of several entries (a merge, a skill) takes the lowest (`lowest`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from django.db import models


class Trust(models.IntegerChoices):
    """The levels, lowest first: "at least X" is a comparison of numbers."""

    UNTRUSTED = 1, "untrusted"
    AGENT = 2, "agent"
    INDEPENDENT = 3, "independent"
    VERIFIED = 4, "verified"
    PERSON = 5, "person"


class Sender(models.TextChoices):
    """Who sends a piece: an agent (a token), a person in the console, or a person importing files (who may
    pass on a file people wrote as a person's statement, and an agent's line as the agent's claim)."""

    AGENT = "agent", "an agent"
    PERSON = "person", "a person"
    IMPORT = "import", "an import of files"


class Source(models.TextChoices):
    """What a sender says a piece of evidence is (the API's and the MCP tools' `source`)."""

    OWN = "own", "the sender's own observation or reasoning"
    VERIFICATION = "verification", "a test or check result"
    RELAYED = "relayed", "content relayed from elsewhere (a web page, a fetched document, tool output)"
    PERSON = "person", "a person's statement or decision"


# What a verification looks like to the server: a test result naming the check that produced it. The server
# cannot rerun an agent's test; it can insist that the claim names a check, and it counts a verification
# towards a lesson only when it comes from a source other than the lesson's author (entry_trust).
VERIFICATION_KINDS = frozenset({"test_result"})

# Below this, a skill built from the entry needs two leads' approvals (services.skills). A skill already needs
# its trials and a lead; an agent's own lesson that passed them is the ordinary case, one lead publishes it.
# What rests on relayed content (a web page, a fetched document) is the way a planted instruction becomes a
# procedure every agent follows: two leads must each read it.
SKILL_SINGLE_APPROVAL_AT = Trust.AGENT

NAMES = {level.label: level for level in Trust}


def name(level: int) -> str:
    return Trust(level).label


def parse(value: str) -> Trust:
    """A level from its name ("agent", "person", ...); ValueError naming the choices otherwise."""
    try:
        return NAMES[str(value).strip().lower()]
    except KeyError:
        raise ValueError(f"One of: {', '.join(NAMES)}.") from None


def claim_refusal(source: str, *, kind: str, evaluator: str, sender: str) -> str | None:
    """Why `sender` may not send this piece as `source`, in words; None when it may. An agent may not speak
    as a person; a person in the console, or one importing files people wrote, may."""
    if source == Source.PERSON and sender == Sender.AGENT:
        return (
            "An agent cannot record a person's decision: send what a user told you as 'own' (your account of it); "
            "a person confirms a lesson in the console."
        )
    if source == Source.VERIFICATION and (kind not in VERIFICATION_KINDS or not (evaluator or "").strip()):
        return "A verification is a test or check result: kind 'test_result' with the check named in 'evaluator'."
    return None


def _source_level(source: str, sender: str) -> Trust:
    if source == Source.RELAYED:
        return Trust.UNTRUSTED
    if source == Source.VERIFICATION:
        return Trust.VERIFIED
    if source == Source.PERSON or sender == Sender.PERSON:
        return Trust.PERSON
    return Trust.AGENT  # an agent's own word, or a line an agent wrote in an imported file


def evidence_trust(source: str, *, sender: str, independent: bool) -> Trust:
    """A piece's level: relayed content is untrusted whoever relays it; a verification is one; a person's piece
    (a console user's, a file people wrote) is a person's; an agent's own piece is the agent's, or an
    independent agent's when it is about a lesson another source wrote (`independent`)."""
    level = _source_level(source, sender)
    return Trust.INDEPENDENT if level == Trust.AGENT and independent else level


def origin_trust(sources: Iterable[str], *, sender: str) -> Trust:
    """The level a new lesson starts at (`sources`: its supporting pieces' sources): its author's (a person's,
    or an agent's, or for an import the file's writer's), and no more than the least of what it rests on:
    untrusted when that includes relayed content. A verification sent with it does not raise it: the author
    cannot confirm its own lesson."""
    author = Trust.AGENT if sender == Sender.AGENT else Trust.PERSON
    levels = [_source_level(s, sender) for s in sources if s != Source.VERIFICATION]
    return min([author, *levels])


@dataclass(frozen=True)
class Piece:
    """What entry_trust reads of a piece of evidence."""

    id: int | None
    trust: int
    supports: bool
    recorder: str  # the label of who recorded it: a token's, a person's, an import's
    copied: bool = False  # copied from another entry by a merge: that entry's, never a confirmation here


ORIGIN_WHY = {
    Trust.UNTRUSTED: "it rests on content relayed from elsewhere",
    Trust.AGENT: "the submitting agent's own claim",
    Trust.INDEPENDENT: "the lowest of the entries it was made from",
    Trust.VERIFIED: "the lowest of the entries it was made from",
    Trust.PERSON: "written by a person",
}


def entry_trust(origin: int, pieces: Iterable[Piece], *, author: str) -> tuple[Trust, str]:
    """An entry's level and why: its origin, raised to the highest supporting piece that is a confirmation:
    recorded by a source other than its author (`author`, the label it was created under) and not copied
    by a merge. A second source at the same or a lower level changes nothing; nothing lowers it (a
    contradiction weighs on confidence, not on where the text came from)."""
    level, confirmation = Trust(origin), None
    for piece in pieces:
        if not piece.supports or piece.copied or piece.recorder == author:
            continue
        if piece.trust > level:
            level, confirmation = Trust(piece.trust), piece
    if confirmation is None:
        return level, f"{level.label}: {ORIGIN_WHY[level]}, not confirmed by another source"
    where = f" (evidence #{confirmation.id})" if confirmation.id else ""
    return level, f"{level.label}: confirmed by {confirmation.recorder}{where}"


def lowest(levels: Iterable[int]) -> Trust:
    """What is made of several sources is no more trusted than the least of them (untrusted when none)."""
    return Trust(min(levels, default=Trust.UNTRUSTED))


def skill_approvals_needed(level: int) -> int:
    """A skill made from low-trust sources needs two leads' approvals, one otherwise."""
    return 1 if level >= SKILL_SINGLE_APPROVAL_AT else 2


# Imported memory: the evidence source each format's files are, by who writes them (the lesson's `signal`
# says it: `external` for a file people write and keep, `self` for a line an agent wrote). A new format
# adds its lines; one not listed is an agent's claim.
IMPORT_SOURCES: dict[tuple[str, str], str] = {
    ("claude-code", "external"): Source.PERSON,  # CLAUDE.md and .claude/rules, written by people
    ("claude-code", "self"): Source.OWN,  # Claude Code's auto memory, written by the agent
    ("claude-code", "independent"): Source.OWN,  # this console's own export read back: no more than an agent
    ("codex", "external"): Source.PERSON,  # AGENTS.md
    ("codex", "self"): Source.OWN,  # Codex's memories folder
    ("markdown", "external"): Source.PERSON,  # a team's notes
    ("jsonl", "self"): Source.OWN,
    ("mem0", "self"): Source.OWN,  # memories an LLM extracted from a conversation
    ("letta", "self"): Source.OWN,  # a Letta agent's MemFS blocks, memory files and skills, written by the agent
    ("skills", "external"): Source.PERSON,  # an Agent Skills folder, written by people
}


def import_source(format: str, signal: str) -> str:
    return IMPORT_SOURCES.get((format, str(signal)), Source.OWN)
