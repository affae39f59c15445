"""Near duplicates through MinHash band keys: the write path keeps each entry's keys with its text (none once
the text is forgotten), and a lookup reads only the entries sharing a key and finds what the exact ranking
over every overlapping entry finds."""

import random

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import F, FloatField, Func, TextField, Value
from django.db.models.functions import Concat

from curation import services
from curation.models import Entry, EntryBand, Status
from curation.rules import access, config, minhash
from curation.rules.similarity import similarity
from curation.selectors import similar_active_entries, similar_active_entries_many
from curation.services.forgets import approve_forget_request, file_forget_request
from tests.factories import active

pytestmark = pytest.mark.django_db

LESSON = {
    "trigger": "Rotating the signing key of the billing webhook",
    "content": "Always drain the webhook queue before you rotate the signing key.",
}
PARAPHRASE = {
    "trigger": "When rotating the billing webhook signing key",
    "content": "Drain the webhook queue first, then rotate the signing key.",
}
UNRELATED = {
    "trigger": "Upgrading the nginx proxy on the edge hosts",
    "content": "Pin the image version in helm before a rollout.",
}


def _text(fields) -> str:
    return f"{fields['trigger']} {fields['content']}"


def _stored_bands(entry) -> set[tuple[str, int]]:
    return set(EntryBand.objects.filter(entry=entry).values_list("scope", "band"))


def test_a_paraphrase_shares_a_band_key_and_an_unrelated_text_none():
    lesson, paraphrase, unrelated = (set(minhash.band_keys(_text(f))) for f in (LESSON, PARAPHRASE, UNRELATED))
    assert len(lesson) == minhash.BANDS
    assert lesson & paraphrase
    assert not lesson & unrelated
    assert minhash.band_keys(_text(LESSON)) == minhash.band_keys(_text(LESSON).upper())  # the measure's words
    assert minhash.band_keys("the of and") == ()  # no word, no key


def test_the_write_path_stores_an_entrys_keys_and_the_lookup_finds_the_paraphrase_only(reviewer, make_candidate):
    known = active(reviewer, scope="acme/billing-api", **LESSON)
    assert _stored_bands(known) == {("acme/billing-api", key) for key in minhash.band_keys(_text(LESSON))}
    paraphrase = make_candidate(scope="acme/billing-api", **PARAPHRASE)
    unrelated = make_candidate(scope="acme/billing-api", **UNRELATED)
    assert [pk for pk, _ in similar_active_entries(paraphrase)] == [known.pk]
    assert similar_active_entries(unrelated) == []
    # the link the queue card shows, made at the candidate's arrival
    assert list(paraphrase.similar_links.values_list("similar_id", flat=True)) == [known.pk]


def test_an_edit_rewrites_the_keys_and_a_forget_removes_them(reviewer, lead, make_candidate):
    entry = make_candidate(scope="acme/payroll", **LESSON)
    assert _stored_bands(entry) == {("acme/payroll", key) for key in minhash.band_keys(_text(LESSON))}
    entry = services.edit_and_approve(
        entry.pk, actor=lead, expected_version=entry.version, changes={"content": PARAPHRASE["content"]}
    )
    assert _stored_bands(entry) == {
        ("acme/payroll", key) for key in minhash.band_keys(f"{LESSON['trigger']} {PARAPHRASE['content']}")
    }
    request = file_forget_request(entry_id=entry.pk, reason="The user asked us to forget this", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    assert not EntryBand.objects.filter(entry=entry).exists()
    probe = Entry(scope="acme/payroll", trigger=LESSON["trigger"], content=PARAPHRASE["content"])
    assert similar_active_entries_many([probe]) == {None: []}


def test_the_migration_fills_the_keys_of_existing_entries_but_not_of_forgotten_ones(reviewer, lead):
    from importlib import import_module

    fill_bands = import_module("curation.migrations.0047_entry_bands").fill_bands
    kept = active(reviewer, scope="acme/payroll", **LESSON)
    gone = active(reviewer, scope="acme/payroll", **UNRELATED)
    approve_forget_request(file_forget_request(entry_id=gone.pk, reason="forget it", actor=reviewer).pk, actor=lead)
    EntryBand.objects.all().delete()
    fill_bands(apps, None)
    assert _stored_bands(kept) == {("acme/payroll", key) for key in minhash.band_keys(_text(LESSON))}
    assert not EntryBand.objects.filter(entry=gone).exists()


def _exact(entry, limit=5) -> list[int]:
    """The exact ranking over every active entry of the overlapping scopes (no index)."""
    threshold = config.SIMILAR_THRESHOLD.value
    rows = Entry.objects.filter(
        access.overlapping_scopes_q(entry.scope, bytewise=connection.vendor == "sqlite"), status=Status.ACTIVE
    ).exclude(pk=entry.pk)
    if connection.vendor == "postgresql":
        measure = Func(
            Concat(F("trigger"), Value(" "), F("content"), output_field=TextField()),
            Value(_text(vars(entry))),
            function="similarity",
            output_field=FloatField(),
        )
        scored = [(pk, round(s, 3)) for pk, s in rows.annotate(s=measure).values_list("pk", "s")]
    else:
        scored = [
            (pk, round(similarity(_text(vars(entry)), f"{t} {c}"), 3))
            for pk, t, c in rows.values_list("pk", "trigger", "content")
        ]
    scored = [(pk, s) for pk, s in scored if s >= threshold]
    return [pk for pk, _ in sorted(scored, key=lambda p: (-p[1], -p[0]))[:limit]]


def test_the_lookup_finds_what_the_exact_ranking_finds(reviewer, make_candidate):
    """On a fixture of lesson families (each a lesson and its rewordings) in overlapping scopes, the band-key
    lookup finds at least 95 % of the near duplicates the exact ranking finds over every entry."""
    rng = random.Random(5)
    verbs = "drain rotate restart migrate rebase deploy pin retry lock flush".split()
    things = "queue key worker schema branch image cache ledger token proxy".split()
    scopes = ["acme", "acme/billing", "acme/billing/jobs", "acme/web"]

    def lesson(i, variant):
        verb, thing, other = verbs[i % 10], things[(i * 3) % 10], things[(i * 7 + 1) % 10]
        openers = ("When", "Whenever", "Before", "If")
        return {
            "trigger": f"{openers[variant]} you {verb} the {thing} of service{i}",
            "content": f"{('Always', 'First', 'Do', 'Please')[variant]} check the {other} and {verb} slowly, case {i}.",
        }

    for i in range(12):
        for variant in range(3):
            active(reviewer, scope=rng.choice(scopes), **lesson(i, variant))
    probes = [make_candidate(scope=rng.choice(scopes), **lesson(i, 3)) for i in range(12)]
    found = similar_active_entries_many(probes)
    wanted = hit = 0
    for probe in probes:
        exact = _exact(probe)
        wanted += len(exact)
        hit += len(set(exact) & {pk for pk, _ in found[probe.pk]})
    assert wanted >= 12  # the fixture has near duplicates to find
    assert hit / wanted >= 0.95, (hit, wanted)


def test_the_lookup_reads_the_ancestors_the_scope_and_below_but_no_sibling_that_shares_its_name(
    reviewer, make_candidate
):
    """The scope and the range below it are one probe per key, from the scope to the scope followed by "0": a
    sibling whose name starts with the scope's ("billing-api" beside "billing") sorts inside that range and
    is left out; an ancestor holding an active entry is probed, one holding none is not needed."""
    above = active(reviewer, scope="acme", **LESSON)
    below = active(reviewer, scope="acme/billing/jobs", **{**LESSON, "content": LESSON["content"] + " Twice."})
    sibling = active(reviewer, scope="acme/billing-api", **{**LESSON, "content": LESSON["content"] + " Again."})
    probe = make_candidate(scope="acme/billing", **PARAPHRASE)
    found = [pk for pk, _ in similar_active_entries(probe)]
    assert set(found) == {above.pk, below.pk} and sibling.pk not in found
    # a scope with nothing active above it: the same answer for its own and its descendants' entries
    lone = make_candidate(scope="other/team", **PARAPHRASE)
    assert similar_active_entries(lone) == []


def test_a_text_with_quotes_backslashes_and_braces_is_looked_up_as_written(reviewer, make_candidate):
    """The batch's texts and scopes travel to PostgreSQL as array literals: quotes, backslashes, commas and
    braces in a lesson reach the measure as the agent wrote them."""
    odd = {
        "trigger": 'Quoting "C:\\deploy\\keys" in the {billing, webhook} signing config',
        "content": 'Escape every backslash in "C:\\deploy\\keys" before the webhook signing key rotates, {twice}.',
    }
    known = active(reviewer, scope="acme/billing-api", **odd)
    probe = make_candidate(scope="acme/billing-api", **{**odd, "content": odd["content"] + " Again."})
    assert [(pk, score >= 0.8) for pk, score in similar_active_entries(probe)] == [(known.pk, True)]
