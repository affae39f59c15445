"""The receipt's rules: which tokens of a forgotten text are distinctive, how a stored value is matched,
and what the receipt says."""

from curation.rules.forget_receipt import (
    Receipt,
    Residue,
    distinctive_tokens,
    holds_token,
    is_identifier,
    json_variants,
)


def test_identifiers_names_and_phrases_are_distinctive_and_prose_words_are_not():
    tokens = distinctive_tokens(["Always page Marguerite Okonkwo before running FORGETMEAXOLOTL-4242 with pg_repack."])
    assert {"FORGETMEAXOLOTL-4242", "pg_repack", "Marguerite", "Okonkwo"} <= set(tokens)
    assert not {"Always", "page", "before", "running"} & set(tokens)  # a sentence's first word is no name
    assert "Always page Marguerite Okonkwo before" in tokens  # a phrase, exactly as written


def test_what_stays_is_not_searched_for():
    tokens = distinctive_tokens(["Restart billing-api after the v15.2 upgrade"], kept=["acme/billing-api"])
    assert "billing-api" not in tokens and "v15.2" in tokens


def test_a_short_text_is_one_phrase_and_a_tiny_one_nothing():
    assert distinctive_tokens(["use tabs in makefiles"]) == ["use tabs in makefiles"]
    assert distinctive_tokens(["use tabs"]) == []


def test_identifier_shapes():
    assert all(is_identifier(w) for w in ("k8s-prod", "v2.3.1", "initrodeAcquisition", "ERRNO", "user_id"))
    assert not any(is_identifier(w) for w in ("container", "k8s", "Deploy", "API"))


def test_json_values_match_with_their_escapes():
    assert holds_token({"after": {"content": "Café Zürich-9"}}, ["zürich-9"])
    assert "Z\\u00fcrich-9" in json_variants("Zürich-9")
    assert not holds_token(None, ["x"]) and not holds_token("nothing here", ["FORGETME-1"])


def test_the_receipt_says_how_many_places_and_where_never_what():
    clean = Receipt(tokens=3, places_by_surface={"stored columns": 40, "exports rendered": 2}, rows_scanned=1200)
    assert clean.summary() == "0 residues in 42 places checked (1,200 rows scanned)"
    found = Receipt(
        tokens=3,
        residues=[Residue("curation_evidence.task_ref", [7, 9])],
        places_by_surface={"stored columns": 40},
        rows_scanned=10,
    )
    assert found.summary() == "1 residue in 40 places checked (10 rows scanned): curation_evidence.task_ref (#7, #9)"
    assert found.as_json()["residues"] == [{"place": "curation_evidence.task_ref", "ids": [7, 9], "count": 2}]
