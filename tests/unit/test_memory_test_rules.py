"""The memory tests' rules: the expectation lines a lead writes, and the verdict on an answer."""

import pytest
from django.core.exceptions import ValidationError

from curation.rules import memory_tests as rules
from curation.rules.memory_tests import Served


def test_every_kind_of_line_is_read_and_written_back_the_same():
    text = "top #12\ntop skill #3\nabsent 9\nabsent skill #4\nno scope acme/web/\nunder 400 tokens\n#12 above #9"
    expectations = rules.parse_expectations(text)
    assert expectations == [
        {"kind": "top", "entry": 12},
        {"kind": "top", "skill": 3},
        {"kind": "absent", "entry": 9},
        {"kind": "absent", "skill": 4},
        {"kind": "no_scope", "scope": "acme/web"},
        {"kind": "under_tokens", "tokens": 400},
        {"kind": "outranks", "entry": 12, "over": 9},
    ]
    lines = [rules.expectation_line(e) for e in expectations]
    assert rules.parse_expectations("\n".join(lines)) == expectations


def test_a_line_that_is_not_an_expectation_is_named_with_the_syntax():
    with pytest.raises(ValidationError) as bad:
        rules.parse_expectations("top #12\nmust mention rebase\nno scope ../etc")
    messages = bad.value.message_dict["expectations"]
    assert len(messages) == 2
    assert messages[0].startswith("Line 2 ('must mention rebase') is not an expectation: write one of top #12")
    assert messages[1].startswith("Line 3:")
    with pytest.raises(ValidationError, match="Say what the answer must"):
        rules.parse_expectations("  \n")


def test_clean_test_names_every_bad_field():
    with pytest.raises(ValidationError) as bad:
        rules.clean_test({"scope": "", "name": "", "query": "", "k": "0", "budget_tokens": "10", "expectations": ""})
    assert set(bad.value.message_dict) == {"scope", "name", "query", "k", "budget_tokens", "expectations"}
    good = rules.clean_test(
        {
            "scope": "acme/api/",
            "name": " keys ",
            "query": "rotate",
            "k": "3",
            "budget_tokens": "100",
            "expectations": "top #1",
        }
    )
    assert good == {
        "scope": "acme/api",
        "name": "keys",
        "query": "rotate",
        "k": 3,
        "budget_tokens": 100,
        "expectations": [{"kind": "top", "entry": 1}],
    }


ANSWER = [Served(5, "acme/api"), Served(7, "acme/web/ui"), Served(9, "acme/api", withheld=True)]


@pytest.mark.parametrize(
    "line, failure",
    [
        ("top #5", None),
        ("top #6", "#6 is not among the lessons received"),
        ("top #9", "#9 is withheld for review"),
        ("absent #6", None),
        ("absent #9", None),  # withheld: its text is not received
        ("absent #7", "#7 is received, at rank 2"),
        ("no scope acme/db", None),
        ("no scope acme/web", "#7 received from acme/web"),
        ("top skill #3", None),
        ("top skill #4", "skill #4 is not served"),
        ("absent skill #3", "skill #3 is served"),
        ("under 30 tokens", None),
        ("under 25 tokens", "the context is 25 tokens, not under 25"),
        ("#5 above #7", None),
        ("#7 above #5", "#5 is received at rank 1, #7 at rank 2"),
        ("#6 above #5", "#5 is received at rank 1, #6 not at all"),
        ("#6 above #8", None),  # neither is received: nothing outranks the correction
    ],
)
def test_the_verdict_on_an_answer(line, failure):
    context = "x" * 100  # 25 tokens
    found = rules.failures(rules.parse_expectations(line), ANSWER, {3}, context)
    assert found == ([failure] if failure else [])


def test_tokens_are_a_quarter_of_the_characters_rounded_up():
    assert (rules.estimate_tokens(""), rules.estimate_tokens("abcd"), rules.estimate_tokens("abcde")) == (0, 1, 2)
    assert rules.budget_chars(500) == 2000
