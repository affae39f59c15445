"""What a scope may look like: one rule (access.clean_scope), no database."""

import re

import pytest
from django.core.exceptions import ValidationError

from curation.rules import access

DOTTED = [
    "acme/../globex",
    "acme/./billing-api",
    "..",
    ".",
    "./acme",
    "acme/.",
    "acme/..",
    ".acme",
    "acme.",
    "acme/billing-api.",
    "acme/.hidden",
]


@pytest.mark.parametrize("scope", DOTTED)
def test_dot_segments_are_refused_and_the_message_says_why(scope):
    with pytest.raises(ValidationError, match=r"may not be '\.' or '\.\.', nor start or end with '\.'"):
        access.clean_scope(scope)


@pytest.mark.parametrize("scope", ["acme", "acme/billing-api", "acme/v1.2/api", "a/b.c_d-e", "x1..2"])
def test_dots_inside_a_segment_stay_allowed(scope):
    assert access.clean_scope(scope) == scope


@pytest.mark.parametrize("scope", [" acme/billing-api", "acme/billing-api ", "\tacme\n", " acme "])
def test_spaces_around_a_scope_are_refused_not_stripped(scope):
    with pytest.raises(ValidationError, match=r"No spaces before or after a scope .*segments of a-z, 0-9"):
        access.clean_scope(scope)
    assert not re.match(access.SCOPE_PATTERN, scope)  # the pattern clients are given says the same


def test_the_pattern_published_for_clients_refuses_them_too():
    pattern = re.compile(access.SCOPE_PATTERN)
    assert not any(pattern.match(scope) for scope in DOTTED)
    assert pattern.match("acme/v1.2/api")


@pytest.mark.parametrize(
    "scope, governing",
    [
        ("acme/billing-api/worker", "acme/billing-api"),
        ("acme/billing-api", "acme/billing-api"),
        ("acme/billing", "acme"),
        ("acme", "acme"),
        ("globex/x", None),
        ("acmeco/x", None),
    ],
)
def test_the_longest_covering_prefix_governs_a_scope(scope, governing):
    assert access.governing_prefix(["acme", "acme/billing-api", "globex/y"], scope) == governing
