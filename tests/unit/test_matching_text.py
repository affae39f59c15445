"""What the tombstone check reads: disguises undone (readable), words folded (pieces, stems), the tokens that
make a forgotten text unique and the forms a submission could carry them in, and the keys they are hashed
with."""

import base64

import pytest

from curation.rules import forgetting
from curation.rules.matching_text import distinctive_tokens, fold, pieces, readable, stems, token_forms
from curation.rules.similarity import signature as legacy_signature


@pytest.mark.parametrize(
    "disguised",
    [
        "Pa\u200bu\u200bse the po\u200dol",  # zero-width space and joiner
        "Pau\u00adse the po\u00adol",  # soft hyphens
        "\ufeffPause\u2060 the \u202epool\u202c",  # BOM, word joiner, bidi controls
        "Раusе thе рооl",  # Cyrillic look-alikes
        "Ραuse the ροοl",  # Greek look-alikes
        "Ｐａｕｓｅ　ｔｈｅ　ｐｏｏｌ",  # fullwidth
        "Páùsé thè pöõl",  # accents
        "P\u0301a\u0317use the pool",  # combining marks
        "PAUSE THE POOL",  # case
        "Pause&#32;the&nbsp;<b>pool</b>",  # entities and tags
        "Pause%20the%20pool",  # %-escapes
    ],
)
def test_readable_undoes_what_changes_the_characters_and_not_the_words(disguised):
    assert pieces(disguised) == pieces("pause the pool") == ["pause", "the", "pool"]


def test_a_long_base64_run_is_read_with_what_it_encodes():
    encoded = base64.b64encode(b"Pause the pgbouncer pool before the export").decode()
    assert "pgbouncer" in readable(encoded)
    assert "pgbouncer" in readable(f"Run this: {encoded} (from the runbook).")
    assert "pgbouncer" in readable(base64.urlsafe_b64encode(b"Pause the pgbouncer pool before exports").decode())
    # A hash or an identifier that decodes to no text is left as it is.
    digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert readable(digest) == digest
    assert readable("retry_backoff_max_seconds_total") == "retry_backoff_max_seconds_total"


def test_leetspeak_becomes_letters_and_a_number_stays_a_number():
    assert (
        pieces("P4u5e th3 p00l, t@g 4242")
        == pieces("Pause the pool, tag 4242")
        == ["pause", "the", "pool", "tag", "4242"]
    )
    assert fold("4242") == "4242" and fold("2024") == "2024"
    assert fold("1nstall") == fold("install") == fold("Install".casefold())
    assert fold("rnerge") == fold("merge")


def test_stems_are_taken_before_the_letters_are_folded():
    assert stems("M3rg1ng the branches") == stems("merging branch") == stems("merge branch")
    assert "the" not in stems("the pool") and len(stems("th3 pool")) == 1


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Tag the batch FORGETMEAXOLOTL-4242 first.", {"forgetmeaxolotl4242", "forgetmeaxolotl"}),
        ("It is tracked as BILL-4821 in the tracker.", {fold("bill") + "4821"}),
        ("Deployed commit a1b2c3d4e5 broke it.", {fold("a1b2c3d4e5")}),
        ("Charge account 1234567890 monthly.", {"1234567890"}),
        ("The card 4111-1111-1111-1111 is blocked.", {"4111111111111111"}),
        ("Ask the people at Initrode about it.", {fold("initrode")}),
    ],
)
def test_distinctive_tokens_are_identifiers_long_numbers_and_made_up_names(text, expected):
    assert {t.folded for t in distinctive_tokens(text)} == expected


@pytest.mark.parametrize(
    "ordinary",
    [
        "Hash with sha256 and SHA-256, timestamps in ISO-8601, timeouts of 500ms and 30s.",
        "Run python3.11 on 10.0.0.12 port 5432 since 2024-01-15; version v2.14.3.",
        "pgbouncer, kubectl, gunicorn and autovacuum are ordinary words here; so are ECONNREFUSED and SIGTERM.",
        "Set max_connections to 200 and retry_backoff_max to 30; back off on HTTP 429; use x86_64 and utf-8.",
        "Initrode asked for it.",  # a name at the start of a sentence: could be any capitalised word
        "Use the test card 4242 4242 4242 4242 and keys starting sk_test_ in the sandbox.",
        "Invoices, refunds, ledger, billing and exports are the words of this scope.",
        # Hosts, ports and paths, and a program's identifiers (the demo's lessons have these).
        "Poll localhost:8080/healthz until it answers; a PermissionError means the volume is read-only.",
        "Send the Idempotency-Key header; call advanceTimersByTime, run showmigrations and supervisorctl status.",
    ],
)
def test_ordinary_words_and_technical_vocabulary_are_not_distinctive(ordinary):
    assert distinctive_tokens(ordinary) == []


@pytest.mark.parametrize(
    "carrier",
    [
        "use FORGETMEAXOLOTL-4242",
        "use forgetmeaxolotl_4242",
        "use FORGETME AXOLOTL 4242",
        "use forget-me-axolotl-4242",
        "use F0RG3TM34X0L0TL-4242",
        "use F O R G E T M E A X O L O T L 4242",
        "use ＦＯＲＧＥＴＭＥＡＸＯＬＯＴＬ-４２４２",
        "use FORGET\u200bME\u00adAXOLOTL-4242",
    ],
)
def test_a_token_is_found_in_every_form_a_submission_could_carry_it(carrier):
    assert "forgetmeaxolotl4242" in token_forms(carrier) or "forgetmeaxolotl" in token_forms(carrier)


def test_token_forms_of_ordinary_text_do_not_make_up_the_token():
    forms = token_forms("Forget me not: the axolotl tank holds 4242 litres.")
    assert "forgetmeaxolotl4242" not in forms and "forgetmeaxolotl" not in forms


def test_keys_are_per_install_and_the_key_id_does_not_reveal_the_key():
    one, two = forgetting.tombstone_key("a" * 50), forgetting.tombstone_key("b" * 50)
    assert one != two and len(one) == 32
    assert forgetting.key_id(one) != forgetting.key_id(two) and one.hex()[:12] != forgetting.key_id(one)
    stone = forgetting.forgotten_lesson(
        one, "Exporting invoices", "Pause the pool, tag FORGETMEAXOLOTL-4242", ["forgetmeaxolotl4242"]
    )
    again = forgetting.forgotten_lesson(
        two, "Exporting invoices", "Pause the pool, tag FORGETMEAXOLOTL-4242", ["forgetmeaxolotl4242"]
    )
    assert not set(stone.signature) & set(again.signature) and stone.tokens != again.tokens
    # The code's fixed key (what a copy of the database and the code could test a word list with) is not it.
    assert not set(stone.signature) & set(legacy_signature("Exporting invoices Pause the pool tag"))


def test_a_lesson_matches_a_tombstone_only_under_its_key():
    key, other = forgetting.tombstone_key("a" * 50), forgetting.tombstone_key("b" * 50)
    stone = forgetting.forgotten_lesson(key, "Exporting invoices at month end", "Pause the pgbouncer pool first.", [])
    lesson = forgetting.Lesson.of("acme", "Exporting invoices at month end", "Pause the pgbouncer pool first.")
    fields = {"scope": "acme", "fingerprint": stone.fingerprint, "signature": stone.signature, "tokens": stone.tokens}
    assert forgetting.same_lesson(lesson, key=key, **fields)
    assert not forgetting.same_lesson(lesson, key=other, **fields)
    assert not forgetting.same_lesson(lesson, key=key, **{**fields, "scope": "globex"})
