"""The forget battery through the database: a real approved forget request's tombstone, read back by
`tombstones_for` (what ingest asks) against every variant kind and every unrelated lesson of
tests/forget_battery.py; the keys (per install, rotation through SECRET_KEY_FALLBACKS, the legacy rows);
and which tokens a tombstone keeps. Prints the figures (pytest -s)."""

import pytest
from django.test import override_settings

from curation import services
from curation.rules import clock
from curation.rules.forgetting import key_id, tombstone_key
from curation.models import Tombstone
from curation.selectors import forgets as reads
from curation.services.errors import Forgotten
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.rules.similarity import fingerprint as legacy_fingerprint
from curation.rules.similarity import signature as legacy_signature
from tests.factories import active, candidate_data, database_dump
from tests.forget_battery import CONTENT, SCOPE, TRIGGER, UNRELATED, VARIANTS

pytestmark = pytest.mark.django_db


def _forget(reviewer, lead, entry):
    request = file_forget_request(entry_id=entry.pk, reason="the user asked us to forget it", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    return request


@pytest.fixture
def forgotten(reviewer, lead):
    """The lesson forgotten in a scope that already holds half of the unrelated lessons (the other half
    comes later), each an active entry."""
    entry = active(lead, scope=SCOPE, trigger=TRIGGER, content=CONTENT)
    for trigger, content in UNRELATED[::2]:
        active(lead, scope=SCOPE, trigger=trigger, content=content)
    return _forget(reviewer, lead, entry)


def _held(lessons, scope=SCOPE) -> list[bool]:
    return [stone is not None for stone in reads.tombstones_for([(scope, t, c) for t, c in lessons])]


def test_the_battery_through_a_real_tombstone(forgotten, settings):
    stone = Tombstone.objects.get(request=forgotten)
    assert stone.key_id == key_id(tombstone_key(settings.SECRET_KEY)) and len(stone.tokens) == 2
    held = dict(zip([kind for kind, *_ in VARIANTS], _held([(t, c) for _, t, c, _ in VARIANTS])))
    false_holds = [t for (t, _), h in zip(UNRELATED, _held(UNRELATED)) if h]
    print(
        f"\nvariants held: {sum(held.values())} of {len(VARIANTS)} kinds; passed: "
        f"{[kind for kind, h in held.items() if not h]}; unrelated lessons held: {len(false_holds)} of "
        f"{len(UNRELATED)}"
    )
    assert held == {kind: expected for kind, _, _, expected in VARIANTS}
    assert sum(held.values()) >= 20 and false_holds == []
    # Another project's lesson with the same words is not this one.
    assert _held([(TRIGGER, CONTENT)], scope="globex/billing-api") == [False]


def test_ingest_refuses_the_disguised_lesson(forgotten):
    kinds = {kind: (t, c) for kind, t, c, _ in VARIANTS}
    for kind in ("Cyrillic look-alikes", "leetspeak", "unique token kept, synonyms elsewhere"):
        trigger, content = kinds[kind]
        with pytest.raises(Forgotten):
            services.create_candidate(
                data=candidate_data(scope=f"{SCOPE}/eu", trigger=trigger, content=content), actor_label="agent:ci"
            )
    # Base64 never reaches the check through ingest: the secret scan stores it redacted (the tombstone's own
    # decoding is for what comes without that scan).
    trigger, content = kinds["base64 of the lesson"]
    entry = services.create_candidate(
        data=candidate_data(scope=SCOPE, trigger=trigger, content=content), actor_label="agent:ci"
    )
    assert "REDACTED" in entry.content and "FORGETMEAXOLOTL" not in entry.content
    trigger, content = UNRELATED[1]
    entry = services.create_candidate(
        data=candidate_data(scope=SCOPE, trigger=trigger, content=content), actor_label="agent:ci"
    )
    assert entry.pk


def test_the_tombstone_holds_no_word_and_the_code_s_fixed_key_tests_nothing(forgotten):
    stone = Tombstone.objects.get(request=forgotten)
    dump = database_dump().lower()
    assert "forgetmeaxolotl" not in dump and "pgbouncer pool first" not in dump
    # What a copy of the database and the code could test a word list with: the fixed key hashes nothing here.
    assert not set(stone.signature) & set(legacy_signature(f"{TRIGGER} {CONTENT}"))
    assert stone.fingerprint != legacy_fingerprint(TRIGGER, CONTENT)


def test_a_rotated_key_keeps_matching_while_it_is_a_fallback(forgotten, settings):
    old = settings.SECRET_KEY
    new = "another install secret of fifty characters or more, random enough"
    with override_settings(SECRET_KEY=new, SECRET_KEY_FALLBACKS=[old]):
        assert _held([(TRIGGER, CONTENT), VARIANTS[4][1:3]]) == [True, True]
    with override_settings(SECRET_KEY=new, SECRET_KEY_FALLBACKS=[]):
        # Dropped from the fallbacks, the old key is gone and so is what its tombstones could hold.
        assert _held([(TRIGGER, CONTENT)]) == [False]


def test_a_legacy_tombstone_keeps_matching_under_the_fixed_key(forgotten):
    """A tombstone written before keys per install (key id "", migration 0032) cannot be re-keyed without the
    text: it keeps matching by its fingerprint and signature, now on the readable text."""
    legacy_scope = "initech/payroll"
    Tombstone.objects.create(
        request=forgotten,
        scope=legacy_scope,
        fingerprint=legacy_fingerprint(TRIGGER, CONTENT),
        signature=legacy_signature(f"{TRIGGER} {CONTENT}"),
        forgotten_on=clock.now().date(),
    )
    kinds = {kind: (t, c) for kind, t, c, _ in VARIANTS}
    assert _held(
        [
            (TRIGGER, CONTENT),
            kinds["Cyrillic look-alikes"],
            kinds["zero-width spaces"],
            kinds["base64 of the lesson"],
            UNRELATED[0],
        ],
        scope=legacy_scope,
    ) == [True, True, True, True, False]


def test_a_token_other_lessons_use_is_not_kept_but_a_paraphrase_does_not_count(reviewer, lead):
    scope = "acme/crm"
    # "Initrode" is a name no word list knows; another lesson of the scope uses it: shared, not kept.
    forgotten = active(
        lead,
        scope=scope,
        trigger="Renewing the big accounts",
        content="Call Dana at Initrode before renewing, she negotiates the discount herself.",
    )
    active(lead, scope=scope, trigger="Invoices by post", content="Invoices for Initrode go by post, never email.")
    request = _forget(reviewer, lead, forgotten)
    assert Tombstone.objects.get(request=request).tokens == []
    assert _held([("Shipping to big accounts", "Ship the Initrode order with tracking.")], scope=scope) == [False]
    # Zorblaxian is used only by a paraphrase of the lesson (left pending): still this lesson's own token.
    lesson = active(
        lead,
        scope=scope,
        trigger="Renewing the Globex account",
        content="Call the Zorblaxian desk before renewing, they negotiate the discount themselves.",
    )
    services.create_candidate(
        data=candidate_data(
            scope=scope,
            trigger="Before renewing Globex",
            content="The Zorblaxian desk negotiates the discount: call them before renewing.",
        ),
        actor_label="agent:ci",
    )
    request = _forget(reviewer, lead, lesson)
    assert len(Tombstone.objects.get(request=request).tokens) == 1
    assert _held([("Escalations", "Escalate to the Zorblaxian desk after two days.")], scope=scope) == [True]


def test_a_text_request_keeps_the_text_s_tokens(reviewer, lead):
    request = file_forget_request(
        text="the batch tag FORGETMEAXOLOTL-4242", scope=SCOPE, reason="GDPR request", actor=reviewer
    )
    approve_forget_request(request.pk, actor=lead)
    stone = Tombstone.objects.get(request=request)
    assert (stone.entry_id, stone.fingerprint, len(stone.tokens)) == (None, "", 2)
    assert _held([("Bill dumps", "Use forget-me-axolotl_4242 as the tag."), UNRELATED[0]]) == [True, False]


def test_with_no_tombstone_in_the_scopes_nothing_is_read(forgotten, monkeypatch, django_assert_num_queries):
    def refuse(*args, **kwargs):
        raise AssertionError("a lesson was read with no tombstone to compare it with")

    monkeypatch.setattr(reads.Lesson, "of", refuse)
    with django_assert_num_queries(1):
        assert reads.tombstones_for([("globex/web", TRIGGER, CONTENT)] * 50) == [None] * 50


def test_a_tombstone_holds_in_its_scope_below_and_above_it_but_not_beside_it(forgotten):
    """A lesson is held where its scope and the tombstone's overlap (one is the other or lies under it); a
    sibling whose name starts the same is not, nor a scope whose "_" a LIKE would take for any character."""
    first = SCOPE.split("/")[0]
    assert _held([(TRIGGER, CONTENT)] * 5, scope=SCOPE) == [True] * 5
    assert _held([(TRIGGER, CONTENT)], scope=f"{SCOPE}/deeper/still") == [True]
    assert _held([(TRIGGER, CONTENT)], scope=first) == [True]
    assert _held([(TRIGGER, CONTENT)], scope=f"{SCOPE}-beside") == [False]
    assert _held([(TRIGGER, CONTENT)], scope=first[:-1] + "_") == [False]


def test_the_tombstones_of_many_scopes_are_read_by_one_condition_whatever_their_number(forgotten):
    """A release or a batch names hundreds of scopes: the read of their tombstones is one statement whose
    text does not grow with them (a prefix condition per scope cost more to build and plan than the rows)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    scopes = [f"{SCOPE}/team{i}" for i in range(60)] + [f"other{i}/web" for i in range(60)]
    with CaptureQueriesContext(connection) as queries:
        held = reads.tombstones_for([(scope, TRIGGER, CONTENT) for scope in scopes])
    assert [stone is not None for stone in held] == [True] * 60 + [False] * 60
    assert len(queries) == 1
    assert queries[0]["sql"].upper().count("LIKE") == 1
