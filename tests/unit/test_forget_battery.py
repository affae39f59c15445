"""The forget battery on the rules alone: a tombstone made of the forgotten lesson (its hashes and its
distinctive tokens, under one install's key) against every variant kind of tests/forget_battery.py and every
unrelated lesson of the same scope. Prints the figures (pytest -s)."""

from curation.rules.forgetting import Lesson, forgotten_lesson, same_lesson, tombstone_key
from curation.rules.matching_text import distinctive_tokens
from tests.forget_battery import CONTENT, SCOPE, TRIGGER, UNRELATED, VARIANTS

KEY = tombstone_key("an install's secret, fifty characters or more, random")


def _held(stone, trigger: str, content: str) -> bool:
    return same_lesson(
        Lesson.of(SCOPE, trigger, content),
        scope=SCOPE,
        fingerprint=stone.fingerprint,
        signature=stone.signature,
        tokens=stone.tokens,
        key=KEY,
    )


def test_the_battery_holds_the_variants_and_no_unrelated_lesson():
    tokens = distinctive_tokens(f"{TRIGGER}\n{CONTENT}")
    assert [t.written for t in tokens] == ["forgetmeaxolotl-4242", "forgetmeaxolotl"]
    stone = forgotten_lesson(KEY, TRIGGER, CONTENT, [t.folded for t in tokens])
    outcome = {kind: _held(stone, trigger, content) for kind, trigger, content, _ in VARIANTS}
    false_holds = [trigger for trigger, content in UNRELATED if _held(stone, trigger, content)]
    print(
        f"\nvariants held: {sum(outcome.values())} of {len(VARIANTS)} kinds; passed: "
        f"{[kind for kind, held in outcome.items() if not held]}"
    )
    print(f"unrelated lessons held: {len(false_holds)} of {len(UNRELATED)}")
    assert len(VARIANTS) >= 23 and len(UNRELATED) >= 40
    assert outcome == {kind: held for kind, _, _, held in VARIANTS}  # each kind as the README says
    assert sum(outcome.values()) >= 20
    assert false_holds == []


def test_without_its_tokens_the_synonyms_keeping_the_token_would_pass():
    """The rare tokens are what hold a rewording that keeps them: the signature alone does not."""
    stone = forgotten_lesson(KEY, TRIGGER, CONTENT, [])
    kinds = {kind: (t, c) for kind, t, c, _ in VARIANTS}
    assert not _held(stone, *kinds["unique token kept, synonyms elsewhere"])
    assert not _held(stone, *kinds["token alone in another sentence"])
