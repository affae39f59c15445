"""A merge keeps the better-supported text and adds only the other's sentences that say something new."""

from curation.rules.similarity import merged_content


def test_only_new_sentences_are_added_and_each_says_where_it_came_from():
    best = "Rebase feature branches onto main before merging. Never rebase a shared branch."
    other = (
        "Rebase the feature branch onto main before you merge it. Run the test suite after the rebase.\n"
        "Never rebase shared branches."
    )
    content, [added] = merged_content([best, other])
    assert added == ["Run the test suite after the rebase."]
    assert content == f"{best} Run the test suite after the rebase."
    assert merged_content([best, best]) == (best, [[]])
    assert merged_content([best]) == (best, [])
