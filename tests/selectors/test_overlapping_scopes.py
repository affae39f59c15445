"""The entries that apply together with a scope: its ancestors, itself and the scopes below it, never a
sibling whose name only starts the same way. Both forms of the filter (the prefix LIKE, and the byte range
SQLite's index serves) read the same rows."""

import pytest

from curation.rules import access
from curation.models import Entry
from curation.selectors.partners import partner_pool
from curation.selectors.similar import similar_active_entries, similar_active_entries_many
from tests.factories import active, make_user

TEXT = {
    "trigger": "Rotating the signing key of the billing webhook",
    "content": "Always rotate the signing key before you drain the webhook queue.",
}


@pytest.fixture
def entries(db):
    curator = make_user("curator", "lead")
    return {
        scope: active(curator, scope=scope, **TEXT)
        for scope in (
            "acme",
            "acme/billing",
            "acme/billing/container",
            "acme/billing-api",
            "acme/billing0",
            "acme/billingx",
            "globex/billing",
        )
    }


@pytest.mark.parametrize("bytewise", [False, True])
def test_overlapping_scopes_are_ancestors_self_and_below(entries, bytewise):
    found = set(
        Entry.objects.filter(access.overlapping_scopes_q("acme/billing", bytewise=bytewise)).values_list(
            "scope", flat=True
        )
    )
    assert found == {"acme", "acme/billing", "acme/billing/container"}


def test_partner_and_near_duplicate_pools_reach_below_but_not_siblings(entries):
    pool = {e.scope for e in partner_pool("acme/billing", {"rotat", "drain"}, limit=50)}
    assert pool == {"acme", "acme/billing", "acme/billing/container"}
    similar = {Entry.objects.get(pk=pk).scope for pk, _ in similar_active_entries(entries["acme/billing"])}
    assert similar == {"acme", "acme/billing/container"}


def test_near_duplicates_of_many_entries_are_those_each_finds_alone(entries):
    """Entries of one scope looked up together (a batch) share their scopes' pool, yet each leaves itself
    out and finds what it finds alone, on either database."""
    twin = active(
        make_user("second", "lead"),
        scope="acme/billing",
        trigger=TEXT["trigger"],
        content=TEXT["content"] + " Then check the queue.",
    )
    entries = {**entries, "twin": twin}
    together = similar_active_entries_many(list(entries.values()))
    assert entries["acme/billing"].pk in {pk for pk, _ in together[twin.pk]}
    for scope, entry in entries.items():
        assert together[entry.pk] == similar_active_entries(entry)
        assert entry.pk not in {pk for pk, _ in together[entry.pk]}
    assert {Entry.objects.get(pk=pk).scope for pk, _ in together[entries["acme/billing"].pk]} == {
        "acme",
        "acme/billing",
        "acme/billing/container",
    }  # the twin in its own scope, itself left out


def test_a_batch_reads_its_pools_once_and_finds_what_each_entry_finds_alone(entries, monkeypatch):
    """On SQLite a batch reads each scope's newest overlapping entries once for its conflict partners (near
    duplicates are looked up by their band keys); a pool cut short before an entry found its partners falls back to the entry's
    own lookup, so the partners are the same either way, whatever the pool's size."""
    from curation.rules.contradiction import parse_lesson
    from curation.selectors import partners

    curator = make_user("third", "lead")
    for i in range(6):  # newer than the entries that mention "rotate", and mentioning none of its words
        active(curator, scope="acme/billing", trigger=f"Paging the on-call person {i}", content="Page twice.")
    new = [
        active(curator, scope=scope, trigger=TEXT["trigger"], content="Never rotate the signing key.")
        for scope in ("acme/billing", "acme/billing/container", "globex/billing")
    ]
    lessons = {e.pk: parse_lesson(e.trigger, e.content) for e in new}
    alone = {
        e.pk: [p.pk for p in partner_pool(e.scope, lessons[e.pk].search_words, limit=10, exclude=[e.pk])] for e in new
    }
    for rows in (3, 8, partners.BATCH_POOL_ROWS):
        monkeypatch.setattr(partners, "BATCH_POOL_ROWS", rows)
        pools = partners.batch_pools({e.scope for e in new})
        if pools is None:
            pytest.skip("PostgreSQL reads each entry's ranked pool in one statement per batch")
        together = partners.partner_pools(new, lessons, 10, pools)
        assert {pk: [p.pk for p in found] for pk, found in together.items()} == alone
    assert all(alone.values())


def test_a_lookup_reads_a_bounded_number_of_matches_however_many_share_a_word(db, on_postgres, monkeypatch):
    """In a scope where thousands of entries share the new one's words, the near-duplicate and partner
    lookups read OVERLAPPING_MATCHES_READ of them, not all: shown with a bound of 3 over 8 matches."""
    from curation.rules.contradiction import parse_lesson
    from curation.selectors import partners, sql

    curator = make_user("flooder", "lead")
    for i in range(8):
        active(curator, scope="acme/flood", trigger=TEXT["trigger"], content=f"{TEXT['content']} Note {i}.")
    new = active(curator, scope="acme/flood", trigger=TEXT["trigger"], content="Never rotate the signing key.")
    lessons = {new.pk: parse_lesson(new.trigger, new.content)}

    def found():
        near = similar_active_entries_many([new], limit=20)[new.pk]
        return len(near), len(partners.partner_pools([new], lessons, 20)[new.pk])

    assert found() == (8, 8)
    monkeypatch.setattr(sql, "OVERLAPPING_MATCHES_READ", 3)
    assert found() == (3, 3)
