"""Near duplicates through MinHash band keys: the write path keeps each entry's keys with its text (none once
the text is forgotten), and a lookup reads only the entries sharing a key and finds what the exact ranking
over every overlapping entry finds."""

import random

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import F, FloatField, Func, TextField, Value
from django.db.models.functions import Concat
from django.test.utils import CaptureQueriesContext

from curation import services
from curation.models import Entry, EntryBand, Status
from curation.rules import access, config, minhash
from curation.rules.similarity import (
    as_read_from_float4,
    jaccard,
    similarity,
    trigram_codes,
    trigram_similarity,
    trigrams,
)
from curation.selectors import similar, similar_active_entries, similar_active_entries_many
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.sweeps import run_sweep
from tests.factories import AS_OF, active, candidate_data, days_before

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


def make_candidate_at(at):
    return services.create_candidate(data=candidate_data(**LESSON), evidence=[], actor_label="agent:ci", at=at)


def _text(fields) -> str:
    return f"{fields['trigger']} {fields['content']}"


def _keys(text: str) -> tuple[int, ...]:
    """The keys this database stores of a text: its measure's number of bands."""
    return minhash.band_keys(text, minhash.bands_for(connection.vendor))


def _stored_bands(entry) -> set[tuple[str, int]]:
    return set(EntryBand.objects.filter(entry=entry).values_list("scope", "band"))


def test_a_paraphrase_shares_a_band_key_and_an_unrelated_text_none():
    lesson, paraphrase, unrelated = (
        set(minhash.band_keys(_text(f), minhash.BANDS)) for f in (LESSON, PARAPHRASE, UNRELATED)
    )
    assert len(lesson) == minhash.BANDS
    assert lesson & paraphrase
    assert not lesson & unrelated
    assert minhash.band_keys(_text(LESSON), minhash.BANDS) == minhash.band_keys(
        _text(LESSON).upper(), minhash.BANDS
    )  # the measure's words
    assert minhash.band_keys("the of and", minhash.BANDS) == ()  # no word, no key
    # fewer bands are the first ones: a migration that adds bands leaves the stored keys as they are
    assert (
        minhash.band_keys(_text(LESSON), minhash.WORD_MEASURE_BANDS)
        == minhash.band_keys(_text(LESSON), minhash.BANDS)[:32]
    )


def test_the_write_path_stores_an_entrys_keys_and_the_lookup_finds_the_paraphrase_only(reviewer, make_candidate):
    known = active(reviewer, scope="acme/billing-api", **LESSON)
    assert _stored_bands(known) == {("acme/billing-api", key) for key in _keys(_text(LESSON))}
    paraphrase = make_candidate(scope="acme/billing-api", **PARAPHRASE)
    unrelated = make_candidate(scope="acme/billing-api", **UNRELATED)
    assert [pk for pk, _ in similar_active_entries(paraphrase)] == [known.pk]
    assert similar_active_entries(unrelated) == []
    # the link the queue card shows, made at the candidate's arrival
    assert list(paraphrase.similar_links.values_list("similar_id", flat=True)) == [known.pk]


def test_a_candidate_gets_its_keys_when_approved_an_edit_rewrites_them_and_a_forget_removes_them(
    reviewer, lead, make_candidate
):
    # pending, no lookup reads it: no keys (most of what ingest writes waits in the queue)
    entry = make_candidate(scope="acme/payroll", **LESSON)
    assert _stored_bands(entry) == set()
    entry = services.edit_and_approve(
        entry.pk, actor=lead, expected_version=entry.version, changes={"content": PARAPHRASE["content"]}
    )
    assert _stored_bands(entry) == {
        ("acme/payroll", key) for key in _keys(f"{LESSON['trigger']} {PARAPHRASE['content']}")
    }
    request = file_forget_request(entry_id=entry.pk, reason="The user asked us to forget this", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    assert not EntryBand.objects.filter(entry=entry).exists()
    probe = Entry(scope="acme/payroll", trigger=LESSON["trigger"], content=PARAPHRASE["content"])
    assert similar_active_entries_many([probe]) == {None: []}


def test_an_archived_entry_keeps_its_keys_and_a_revival_writes_them_again(reviewer):
    entry = make_candidate_at(days_before(700))
    services.approve_candidate(entry.pk, actor=reviewer, expected_version=1, at=days_before(700))
    keys = {(entry.scope, key) for key in _keys(_text(vars(entry)))}
    assert _stored_bands(entry) == keys
    with CaptureQueriesContext(connection) as archive:
        run_sweep("archive", as_of=days_before(1))
    assert Entry.objects.get(pk=entry.pk).status == Status.ARCHIVED
    assert _stored_bands(entry) == keys  # the daily run's archive leaves them
    assert not [q["sql"] for q in archive.captured_queries if "curation_entryband" in q["sql"]]
    # as an entry archived without keys (none is now: the archive keeps them) would be: the revival writes them
    EntryBand.objects.filter(entry=entry).delete()
    services.add_evidence(
        entry.pk,
        data={"kind": "review", "signal": "independent", "excerpt": "second judge agrees"},
        actor=reviewer,
        at=days_before(0.25),
    )
    run_sweep("revive", as_of=AS_OF)
    assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE
    assert _stored_bands(entry) == keys  # written by the bulk write that made it active
    probe = Entry(scope=entry.scope, trigger=entry.trigger, content=entry.content)
    assert [pk for pk, _ in similar_active_entries_many([probe])[None]] == [entry.pk]


def test_the_migration_to_active_keys_removes_the_keys_no_lookup_reads_and_puts_them_back(reviewer, make_candidate):
    from importlib import import_module

    migration = import_module("curation.migrations.0063_bands_of_active_entries")
    kept = active(reviewer, scope="acme/payroll", **LESSON)
    pending = make_candidate(scope="acme/payroll", **UNRELATED)
    EntryBand.objects.bulk_create(  # as the write path before it left a candidate
        EntryBand(entry=pending, scope=pending.scope, band=key) for key in _keys(_text(UNRELATED))
    )
    migration.remove_unread_bands(apps, connection.schema_editor())
    assert _stored_bands(pending) == set()
    assert _stored_bands(kept) == {("acme/payroll", key) for key in _keys(_text(LESSON))}
    migration.write_them_back(apps, connection.schema_editor())
    assert _stored_bands(pending) == {("acme/payroll", key) for key in _keys(_text(UNRELATED))}
    assert EntryBand.objects.filter(entry=kept).count() == len(_keys(_text(LESSON)))


def test_the_migration_fills_the_keys_of_existing_entries_but_not_of_forgotten_ones(reviewer, lead):
    from importlib import import_module

    fill_bands = import_module("curation.migrations.0047_entry_bands").fill_bands
    kept = active(reviewer, scope="acme/payroll", **LESSON)
    gone = active(reviewer, scope="acme/payroll", **UNRELATED)
    approve_forget_request(file_forget_request(entry_id=gone.pk, reason="forget it", actor=reviewer).pk, actor=lead)
    EntryBand.objects.all().delete()
    fill_bands(apps, None)
    assert _stored_bands(kept) == {("acme/payroll", key) for key in minhash.band_keys(_text(LESSON), 32)}
    # Then the bands added since (0060, on PostgreSQL): each key of this database's measure once, no more.
    import_module("curation.migrations.0060_forty_eight_bands").add_bands(apps, connection.schema_editor())
    assert _stored_bands(kept) == {("acme/payroll", key) for key in _keys(_text(LESSON))}
    assert EntryBand.objects.filter(entry=kept).count() == len(_keys(_text(LESSON)))
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


postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the trigram measure is PostgreSQL's")


@postgres_only
def test_the_trigrams_of_an_ascii_text_are_the_ones_postgresql_counts():
    """similarity.trigrams rules pairs out before the database scores them: for an ASCII text they must be
    exactly pg_trgm's (words of letters and digits, lowercased, padded); any other text is left to it."""
    texts = [
        _text(LESSON),
        'Quoting "C:\\deploy\\keys" in the {billing, webhook} config_v2 -- x1 A b',
        "snake_case and kebab-case, CamelCase; 3.14 v2.0 O'Brien's a",
        "  spaces   everywhere\tand\nlines  ",
    ]
    with connection.cursor() as cursor:
        for text in texts:
            cursor.execute("SELECT show_trgm(%s)", [text])
            assert sorted(trigrams(text)) == sorted(cursor.fetchone()[0]), text
            cursor.execute("SELECT similarity(%s, %s)", [text, _text(PARAPHRASE)])
            assert jaccard(trigrams(text), trigrams(_text(PARAPHRASE))) == pytest.approx(cursor.fetchone()[0], abs=1e-6)
    assert trigrams("Сброс кэша webhook") is None


# Shares a band key with PARAPHRASE (checked below) but only 0.19 alike in trigrams.
DECOY = {
    "trigger": "Upgrading the pin first on the proxy helm",
    "content": "Pin the drain upgrade in rollout before a image.",
}


@postgres_only
def test_an_ascii_pair_is_scored_here_exactly_as_the_database_scores_it():
    """similarity() of two ASCII texts is computed in the process (trigram_similarity): the same float4 the
    database returns, to the last bit, whatever the words, their case, punctuation or an empty text."""
    rng = random.Random(7)
    vocabulary = " ".join(_text(fields) for fields in (LESSON, PARAPHRASE, UNRELATED, DECOY)).split()
    vocabulary += ["x", "AB", "config_v2", "3.14", "--", "O'Brien's", "kebab-case", "\t"]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(1, 40))) for _ in range(300)] + ["", "!!!", "a"]
    pairs = [(rng.choice(texts), rng.choice(texts)) for _ in range(1000)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT similarity(a, b) FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS p(a, b, i) ORDER BY i",
            [[a for a, _ in pairs], [b for _, b in pairs]],
        )
        database = [score for (score,) in cursor.fetchall()]
    here = [trigram_similarity(frozenset(trigram_codes(trigrams(a))), trigram_codes(trigrams(b))) for a, b in pairs]
    assert [as_read_from_float4(score) for score in here] == database
    assert len({score for score in database}) > 100  # many distinct quotients, not a few easy ones


@postgres_only
def test_the_ascii_pairs_sharing_a_key_are_scored_here_and_only_those_the_sketches_keep(
    reviewer, make_candidate, monkeypatch
):
    known = active(reviewer, scope="acme/payroll", **LESSON)
    decoy = active(reviewer, scope="acme/payroll", **DECOY)
    assert EntryBand.objects.filter(entry=decoy, band__in=_keys(_text(PARAPHRASE))).exists()
    probe = make_candidate(scope="acme/payroll", **PARAPHRASE)
    statements, scored_here = [], []
    monkeypatch.setattr(similar, "trigram_similarity", lambda a, b: scored_here.append(b) or trigram_similarity(a, b))

    with connection.execute_wrapper(lambda execute, sql, *rest: statements.append(sql) or execute(sql, *rest)):
        found = similar_active_entries(probe)

    with connection.cursor() as cursor:
        cursor.execute("SELECT similarity(%s, %s)", [_text(LESSON), _text(PARAPHRASE)])
        assert found == [(known.pk, round(cursor.fetchone()[0], 3))]  # the database's own score
    assert not [sql for sql in statements if "similarity(" in sql]  # nothing left to the database to score
    assert len(scored_here) == 1  # the lesson alone: the decoy's sketch ruled it out


@postgres_only
def test_a_text_beyond_ascii_is_scored_by_the_database_whatever_its_ascii_words_say(reviewer, make_candidate):
    """Its Cyrillic words are words to pg_trgm and none to the ASCII trigrams: the pair goes to similarity()."""
    shared = "Перед ротацией ключа подписи всегда очищайте очередь вебхука и проверяйте журнал доставки"
    known = active(reviewer, scope="acme/payroll", trigger=f"{shared} omega", content="delta alpha lambda.")
    probe = make_candidate(scope="acme/payroll", trigger=f"{shared} omega", content="delta zeta gamma.")
    assert set(_keys(_text(vars(known)))) & set(_keys(_text(vars(probe))))
    ascii_only = (trigrams(_text(vars(e)).encode("ascii", "ignore").decode()) for e in (known, probe))
    assert jaccard(*ascii_only) < 0.35
    assert [pk for pk, _ in similar_active_entries(probe)] == [known.pk]


# Alike in trigrams (0.46) while their words are 0.29 alike: no key of the first 32 bands in common.
INDEX_LESSON = {
    "trigger": "Whilst altering a partition on mysql (3429)",
    "content": "Reliably create the index concurrently before you alter the partition.",
}
INDEX_PARAPHRASE = {
    "trigger": "Before you reindex the partition in alembic (partition-6708)",
    "content": "Create the index concurrently and reindex the partition only once alembic reports healthy.",
}


@postgres_only
def test_lessons_alike_in_trigrams_but_not_in_words_share_a_key_of_the_later_bands(reviewer, make_candidate):
    lesson, paraphrase = (minhash.band_keys(_text(f), minhash.BANDS) for f in (INDEX_LESSON, INDEX_PARAPHRASE))
    assert not set(lesson[:32]) & set(paraphrase[:32]) and set(lesson) & set(paraphrase)
    known = active(reviewer, scope="acme/db", **INDEX_LESSON)
    probe = make_candidate(scope="acme/db", **INDEX_PARAPHRASE)
    assert [pk for pk, _ in similar_active_entries(probe)] == _exact(probe) == [known.pk]


@postgres_only
def test_the_migration_adds_the_new_bands_keys_to_entries_with_keys_and_takes_them_back(reviewer, lead):
    from importlib import import_module

    migration = import_module("curation.migrations.0060_forty_eight_bands")
    kept = active(reviewer, scope="acme/payroll", **LESSON)
    gone = active(reviewer, scope="acme/payroll", **UNRELATED)
    approve_forget_request(file_forget_request(entry_id=gone.pk, reason="forget it", actor=reviewer).pk, actor=lead)
    keys = minhash.band_keys(_text(LESSON), minhash.BANDS)
    EntryBand.objects.filter(band__in=keys[32:]).delete()  # as 32 bands left it
    assert _stored_bands(kept) == {("acme/payroll", key) for key in keys[:32]}
    migration.add_bands(apps, connection.schema_editor())
    assert _stored_bands(kept) == {("acme/payroll", key) for key in keys}
    assert not EntryBand.objects.filter(entry=gone).exists()
    migration.remove_bands(apps, None)
    assert _stored_bands(kept) == {("acme/payroll", key) for key in keys[:32]}


@postgres_only
def test_a_lookup_sends_each_texts_keys_in_one_run_and_its_scope_once(reviewer):
    """The keys of a batch's texts reach the statement as one array, each text's run in turn, and its scope
    once: a batch of 500 is 24,000 probes, which the process built and sent as 24,000 rows of three values."""
    known = active(reviewer, scope="acme/billing-api", **LESSON)
    mine = Entry(scope="acme/billing-api", **PARAPHRASE)
    with CaptureQueriesContext(connection) as lookup:
        assert [pk for pk, _ in similar.similar_active_entries_many([mine])[None]] == [known.pk]
    (statement,) = [q["sql"] for q in lookup.captured_queries if "curation_entryband" in q["sql"]]
    assert statement.count("acme/billing-api") == 1
    assert all(str(key) in statement for key in _keys(_text(PARAPHRASE)))


def test_band_keys_take_no_key_check_at_commit_and_an_entrys_deletion_still_removes_them(reviewer):
    """The band rows have no key constraint in the database (its check at commit was a third of a batch's band
    insert): the write path writes them for entries it holds, and Django's cascade removes them before the entry."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, EntryBand._meta.db_table)
    assert [c for c in constraints.values() if c["foreign_key"]] == []
    assert any(c["columns"] == ["entry_id"] and c["index"] for c in constraints.values())  # a rewrite's lookup
    kept = active(reviewer, scope="acme/payroll", **LESSON)
    # written bare, with no Event (which would protect it from deletion), as no writer does
    bare = Entry.objects.create(scope="acme/payroll", status=Status.ACTIVE, base_confidence=0.5, **UNRELATED)
    EntryBand.objects.bulk_create(EntryBand(entry=bare, scope=bare.scope, band=key) for key in _keys(_text(UNRELATED)))
    bare.delete()
    assert not EntryBand.objects.filter(entry_id=bare.pk).exists()
    assert _stored_bands(kept) == {("acme/payroll", key) for key in _keys(_text(LESSON))}
