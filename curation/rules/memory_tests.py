"""Memory tests, as pure functions: what a lead says an answer must and must not hold, written one line per
expectation, and the verdict on an answer an agent would receive.

An expectation line is one of:

    top #12              entry 12 is among the lessons received (the top k that fit the budget)
    top skill #3         skill 3 is among the skills served at the test's scope
    absent #12           entry 12 is not received (nor skill 3: `absent skill #3`)
    no scope acme/web    nothing received comes from acme/web or below it
    under 400 tokens     the context block stays under 400 tokens
    #12 above #9         entry 9 is never received above entry 12 (a correction outranks what it corrects)

A budget and a token count are in tokens, estimated as a quarter of the characters (rounded up): the
context block is plain English and Markdown, where four characters a token is the usual measure, and the
block is built to a character budget (context_block.build_context)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from curation.rules.access import clean_scope, scope_covers

CHARS_PER_TOKEN = 4
TOKENS_MIN, TOKENS_MAX = 50, 12_500  # the API's context budget, 200 to 50,000 characters, in tokens
K_MAX = 50
EXPECTATIONS_MAX = 20
NAME_MAX = 200
QUERY_MAX = 2000

TOP, ABSENT, NO_SCOPE, UNDER_TOKENS, OUTRANKS = "top", "absent", "no_scope", "under_tokens", "outranks"

_ID = r"#?(\d{1,10})"
_LINES = (
    (re.compile(rf"top\s+skill\s+{_ID}"), lambda m: {"kind": TOP, "skill": int(m[1])}),
    (re.compile(rf"top\s+{_ID}"), lambda m: {"kind": TOP, "entry": int(m[1])}),
    (re.compile(rf"absent\s+skill\s+{_ID}"), lambda m: {"kind": ABSENT, "skill": int(m[1])}),
    (re.compile(rf"absent\s+{_ID}"), lambda m: {"kind": ABSENT, "entry": int(m[1])}),
    (re.compile(r"no\s+scope\s+(\S+)"), lambda m: {"kind": NO_SCOPE, "scope": clean_scope(m[1].rstrip("/"))}),
    (re.compile(r"under\s+(\d{1,6})\s+tokens?"), lambda m: {"kind": UNDER_TOKENS, "tokens": int(m[1])}),
    (re.compile(rf"{_ID}\s+above\s+{_ID}"), lambda m: {"kind": OUTRANKS, "entry": int(m[1]), "over": int(m[2])}),
)
SYNTAX_HELP = (
    "top #12 · top skill #3 · absent #12 · absent skill #3 · no scope acme/web · under 400 tokens · #12 above #9"
)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def budget_chars(tokens: int) -> int:
    """A budget in tokens as the character budget the context block is built to."""
    return tokens * CHARS_PER_TOKEN


def parse_expectations(text: str) -> list[dict]:
    """The expectations of a test, one per line; ValidationError naming each line that is not one."""
    found, errors = [], []
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    for number, line in enumerate(lines, 1):
        try:
            found.append(_parse_line(line.lower()))
        except ValueError:
            errors.append(f"Line {number} ({line[:60]!r}) is not an expectation: write one of {SYNTAX_HELP}.")
        except ValidationError as exc:
            errors.append(f"Line {number}: {' '.join(exc.messages)}")
    if not lines:
        errors.append(f"Say what the answer must or must not hold, one per line: {SYNTAX_HELP}.")
    if len(lines) > EXPECTATIONS_MAX:
        errors.append(f"At most {EXPECTATIONS_MAX} expectations per test.")
    if errors:
        raise ValidationError({"expectations": errors})
    return found


def _parse_line(line: str) -> dict:
    for pattern, build in _LINES:
        if match := pattern.fullmatch(line):
            return build(match)
    raise ValueError(line)


def expectation_line(expectation: dict) -> str:
    """An expectation as the line a lead writes (parse_expectations reads it back)."""
    kind = expectation["kind"]
    subject = f"skill #{expectation['skill']}" if "skill" in expectation else f"#{expectation.get('entry')}"
    if kind == TOP:
        return f"top {subject}"
    if kind == ABSENT:
        return f"absent {subject}"
    if kind == NO_SCOPE:
        return f"no scope {expectation['scope']}"
    if kind == UNDER_TOKENS:
        return f"under {expectation['tokens']} tokens"
    return f"#{expectation['entry']} above #{expectation['over']}"


def clean_test(data: dict) -> dict:
    """A test's fields from a form or a JSON body: scope, name, query, k, budget (tokens) and expectations
    (lines); one ValidationError naming every bad field."""
    errors, cleaned = {}, {}
    try:
        cleaned["scope"] = clean_scope(str(data.get("scope", "")).rstrip("/"))
    except ValidationError as exc:
        errors["scope"] = exc.messages
    name = " ".join(str(data.get("name", "")).split())
    if not name or len(name) > NAME_MAX:
        errors["name"] = [f"Name the test in at most {NAME_MAX} characters."]
    cleaned["name"] = name
    query = str(data.get("query", "")).strip()
    if not query or len(query) > QUERY_MAX:
        errors["query"] = [f"The query an agent would ask, at most {QUERY_MAX:,} characters."]
    cleaned["query"] = query
    for field, low, high, words in (
        ("k", 1, K_MAX, "lessons asked for"),
        ("budget_tokens", TOKENS_MIN, TOKENS_MAX, "tokens of context"),
    ):
        try:
            cleaned[field] = int(str(data.get(field, "")).strip())
            if not low <= cleaned[field] <= high:
                raise ValueError
        except ValueError:
            errors[field] = [f"From {low} to {high:,} {words}."]
    try:
        cleaned["expectations"] = parse_expectations(str(data.get("expectations", "")))
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    return cleaned


@dataclass(frozen=True)
class Served:
    """One lesson of an answer: its entry, its scope, and whether it was withheld (served as a placeholder)."""

    entry_id: int
    scope: str
    withheld: bool = False


def failures(expectations: list[dict], served: list[Served], skills: set[int], context: str) -> list[str]:
    """What the answer (`served` in rank order, the skills served at the scope, the context block) breaks of
    `expectations`, in words; none when it passes."""
    ranks = {s.entry_id: rank for rank, s in enumerate(served, 1) if not s.withheld}
    withheld = {s.entry_id for s in served if s.withheld}
    found = []
    for expected in expectations:
        kind = expected["kind"]
        if kind in (TOP, ABSENT) and "skill" in expected:
            held = expected["skill"] in skills
            if held != (kind == TOP):
                found.append(f"skill #{expected['skill']} is {'not ' if kind == TOP else ''}served")
        elif kind == TOP and expected["entry"] not in ranks:
            why = "withheld for review" if expected["entry"] in withheld else "not among the lessons received"
            found.append(f"#{expected['entry']} is {why}")
        elif kind == ABSENT and expected["entry"] in ranks:
            found.append(f"#{expected['entry']} is received, at rank {ranks[expected['entry']]}")
        elif kind == NO_SCOPE:
            from_there = [s.entry_id for s in served if scope_covers(expected["scope"], s.scope)]
            if from_there:
                found.append(f"{', '.join(f'#{i}' for i in from_there)} received from {expected['scope']}")
        elif kind == UNDER_TOKENS and (tokens := estimate_tokens(context)) >= expected["tokens"]:
            found.append(f"the context is {tokens} tokens, not under {expected['tokens']}")
        elif kind == OUTRANKS and (over := ranks.get(expected["over"])) is not None:
            rank = ranks.get(expected["entry"])
            if rank is None or rank > over:
                where = f"at rank {rank}" if rank else "not at all"
                found.append(f"#{expected['over']} is received at rank {over}, #{expected['entry']} {where}")
    return found
