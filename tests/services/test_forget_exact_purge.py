"""The purge rewrites exactly the forgotten text, nowhere else: forget an entry whose conditions are common
words ("container", "initrode acquisition") beside a scope, a release summary, another entry's conflict
and evidence, and a retrieval that use the same words, and every row the purge does not name is byte for
byte what it was (every table read before and after), on both databases."""

import pytest
from django.db import connection

from curation import services
from curation.models import (
    Conflict,
    EntryBand,
    Event,
    Evidence,
    ForgetRequest,
    MemoryVersion,
    ReleasedEntry,
    RetrievedEntry,
)
from curation.selectors import forget_quotes
from curation.services.conflicts import detect_conflicts_for
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.releases import publish_version
from curation.services.tokens import create_agent_token
from curation.services.usage import record_retrieval
from tests.factories import active, database_dump, make_user

pytestmark = pytest.mark.django_db

FORGOTTEN = dict(
    scope="acme/billing-api",
    trigger="Rotating the ledger keys of the billing container",
    content="Always drain the container before rotating the ledger keys; Dana Whitfield countersigns.",
    conditions=["container", "initrode acquisition"],
)


def _rows() -> dict[tuple[str, str], str]:
    """Every row of every table, by (table, primary key), as text."""
    rows = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            key = connection.introspection.get_primary_key_column(cursor, table)
            cursor.execute(f'SELECT * FROM "{table}"')
            names = [c[0] for c in cursor.description]
            at = names.index(key) if key in names else None
            for row in cursor.fetchall():
                pk = (
                    str(row[at]).replace("-", "") if at is not None else repr(row)
                )  # a UUID as either database keeps it
                rows[(table, pk)] = repr(row)
    return rows


@pytest.fixture
def world(lead):
    forgotten = active(
        lead,
        evidence=[
            {
                "kind": "review",
                "signal": "independent",
                "polarity": "supports",
                "excerpt": "Dana Whitfield countersigned on 3 May",
                "task_ref": "OPS-881",
            }
        ],
        **FORGOTTEN,
    )
    # Another entry in a scope whose name holds a condition, contradicting the forgotten one (a conflict),
    # with evidence and conditions using the same common words.
    other = active(
        lead,
        scope="acme/billing-api/container",
        trigger="Rotating the ledger keys of the container",
        content="Never drain the container before rotating the ledger keys.",
        conditions=["container"],
        evidence=[
            {
                "kind": "tool_output",
                "signal": "external",
                "polarity": "supports",
                "excerpt": "container logs show the initrode acquisition batch",
                "task_ref": "container-42",
            }
        ],
    )
    detect_conflicts_for(other, detected_by="sweep")
    globex = active(
        lead,
        scope="globex/payments",
        trigger="Preparing the initrode acquisition notes",
        content="Ship the globex notes ahead of the initrode acquisition.",
        conditions=["initrode acquisition"],
    )
    publish_version(
        actor=lead, summary="Globex notes ahead of the initrode acquisition; container fixes", acknowledge=True
    )
    token, _ = create_agent_token(name="ops-agent", scopes=["acme", "globex"])
    returned_it = record_retrieval(
        token=token, scope="acme/billing-api", query="rotate ledger keys", task_ref="t-1", entries=[forgotten]
    )
    record_retrieval(
        token=token,
        scope="acme/billing-api/container",
        query="container restart initrode acquisition",
        task_ref="t-2",
        entries=[other],
    )
    return forgotten, other, globex, returned_it


def test_every_row_the_purge_does_not_name_is_unchanged(world):
    forgotten, other, globex, returned_it = world
    assert Conflict.objects.filter(entry_a=forgotten, entry_b=other).exists()  # the story needs its conflict
    scoped_lead = make_user("lou", "lead", scopes=["acme/billing-api"])
    request = file_forget_request(entry_id=forgotten.pk, reason="Dana asked us to forget it", actor=scoped_lead)
    # The near-duplicate keys derived from the forgotten text go with it.
    bands = {
        ("curation_entryband", str(pk)) for pk in EntryBand.objects.filter(entry=forgotten).values_list("pk", flat=True)
    }
    assert bands
    before = _rows()

    approve_forget_request(request.pk, actor=scoped_lead)

    after = _rows()
    conflicts = set(Conflict.objects.filter(entry_a=forgotten).values_list("pk", flat=True))
    named = {
        ("curation_entry", str(forgotten.pk)),
        ("curation_forgetrequest", str(request.pk)),
        ("curation_retrieval", returned_it.pk.hex),
    } | bands
    named |= {
        ("curation_evidence", str(pk)) for pk in Evidence.objects.filter(entry=forgotten).values_list("pk", flat=True)
    }
    named |= {("curation_event", str(pk)) for pk in Event.objects.filter(entry=forgotten).values_list("pk", flat=True)}
    named |= {
        ("curation_event", str(pk)) for pk in Event.objects.filter(conflict__in=conflicts).values_list("pk", flat=True)
    }
    named |= {("curation_conflict", str(pk)) for pk in conflicts}
    named |= {
        ("curation_releasedentry", str(pk))
        for pk in ReleasedEntry.objects.filter(entry=forgotten).values_list("pk", flat=True)
    }
    # A warning the publisher acknowledged about the forgotten entry (the conflict) quoted its trigger.
    named |= {
        ("curation_memoryversion", str(pk))
        for pk, warnings in MemoryVersion.objects.values_list("pk", "acknowledged")
        if any(w.get("entry") == forgotten.pk for w in warnings)
    }
    changed = {key for key in before if after.get(key) != before[key]}
    # What a publish moves (the pointer to the version agents read) and SQLite's id counters.
    changed = {(table, pk) for table, pk in changed if table not in ("curation_publishedversion", "sqlite_sequence")}
    assert changed <= named, sorted(changed - named)
    # The other entry's own snapshot in the conflict's Events on its history is as it was.
    for event in Event.objects.filter(entry=other, conflict__in=conflicts):
        assert event.after.get("scope", other.scope) == "acme/billing-api/container"
    dump = database_dump()
    assert "Dana Whitfield" not in dump and "countersign" not in dump
    for kept in (
        "Globex notes ahead of the initrode acquisition; container fixes",
        "acme/billing-api/container",
        "container restart initrode acquisition",
        "container logs show the initrode acquisition batch",
    ):
        assert kept in dump
    assert RetrievedEntry.objects.filter(retrieval=returned_it).exists()


def test_a_ticked_quote_is_rewritten_and_only_its_quoted_text(world, lead):
    forgotten, other, globex, _ = world
    quoting = services.add_evidence(
        other.pk,
        actor=lead,
        data={
            "kind": "review",
            "signal": "independent",
            "polarity": "contradicts",
            "excerpt": f"Seen before: {FORGOTTEN['content']} That was the old rule for the container.",
        },
    )
    request = file_forget_request(entry_id=forgotten.pk, reason="user asked", actor=lead)
    quotes = forget_quotes.quotes_of(lead, request, [forgotten])
    assert [q.key for q in quotes] == [f"evidence:{quoting.pk}"]
    assert "Dana" not in quotes[0].where  # the card names where, never the text
    approve_forget_request(request.pk, actor=lead, quotes=[quotes[0].key])
    quoting.refresh_from_db()
    assert (
        quoting.excerpt == f"Seen before: [forgotten: request #{request.pk}] That was the old rule for the container."
    )
    request.refresh_from_db()
    assert request.reason == request.marker  # the request's reason goes with it


def test_a_quote_not_listed_cannot_be_ticked(world, lead):
    forgotten, other, globex, _ = world
    request = file_forget_request(entry_id=forgotten.pk, reason="user asked", actor=lead)
    unrelated = Evidence.objects.filter(entry=other).first()
    with pytest.raises(Exception) as exc:
        approve_forget_request(request.pk, actor=lead, quotes=[f"evidence:{unrelated.pk}"])
    assert "quotes" in str(exc.value) and ForgetRequest.objects.get(pk=request.pk).state == "open"


def test_every_residue_the_outside_tester_found_is_gone_and_the_receipt_says_so(lead, reviewer):
    """The residues of the outside probe, each made as a user would: the text in the forget request's own
    reason, in the reviewer's edit note, in the task ref of the entry's evidence, in another entry's
    evidence quoting it, and in a retrieval query that did not return it. After approval (the quoting rows
    ticked), the receipt searches every surface and finds nothing."""
    from curation.models import Event, EventAction
    from curation.services.candidates import edit_and_approve

    content = "Run rotate-keys with FORGETMEAXOLOTL-4242 and then restart the signer before noon."
    candidate = services.create_candidate(
        data={
            "scope": "acme/payroll",
            "kind": "procedure",
            "trigger": "Rotating the payroll signing key",
            "content": content.replace("noon", "lunch"),
            "signal": "independent",
        },
        evidence=[
            {
                "kind": "tool_output",
                "signal": "external",
                "excerpt": "rotation log",
                "task_ref": "FORGETMEAXOLOTL-4242 rotation",
            }
        ],
        actor_label="agent:ci",
    )
    entry = edit_and_approve(
        candidate.pk,
        actor=reviewer,
        expected_version=candidate.version,
        changes={"content": content},
        reason=f"fixed it to: {content}",
    )
    other = active(
        lead, scope="acme/payroll/eu", trigger="Rotating the EU payroll keys", content="Follow the EU checklist."
    )
    quoting = services.add_evidence(
        other.pk,
        actor=lead,
        data={
            "kind": "review",
            "signal": "independent",
            "polarity": "supports",
            "excerpt": f"Same as before: {content}",
        },
    )
    token, _ = create_agent_token(name="payroll-agent", scopes=["acme/payroll"])
    query = record_retrieval(
        token=token, scope="acme/payroll/eu", query=f"how to: {content}", task_ref="t-9", entries=[other]
    )
    request = file_forget_request(entry_id=entry.pk, reason=f"The user asked: forget '{content}'", actor=reviewer)
    keys = sorted(q.key for q in forget_quotes.quotes_of(lead, request, [entry]))
    assert keys == sorted([f"evidence:{quoting.pk}", f"retrieval:{query.pk}"])

    approve_forget_request(request.pk, actor=lead, quotes=keys)

    receipt = Event.objects.get(forget_request=request, action=EventAction.FORGET_RECEIPT)
    assert receipt.after["residues"] == [] and receipt.reason.startswith("0 residues in "), receipt.reason
    dump = database_dump()
    assert "FORGETMEAXOLOTL" not in dump and "restart the signer" not in dump
    assert "Follow the EU checklist." in dump and "Same as before: [forgotten: request" in dump


def test_evidence_added_after_the_lesson_leaves_no_text_in_its_history(lead):
    """A piece added on the entry's page is recorded in an Event that holds its excerpt and task reference:
    forgetting the lesson takes them out of that Event too, as out of the piece itself."""
    from curation.models import EventAction

    entry = active(lead, scope="acme/payroll", trigger="Signing the payroll batch", content="Sign it twice.")
    piece = services.add_evidence(
        entry.pk,
        actor=lead,
        data={
            "kind": "review",
            "signal": "independent",
            "polarity": "supports",
            "excerpt": "Confirmed with QUOKKAWITNESS on the night run",
            "task_ref": "QUOKKATICKET-77",
        },
    )
    recorded = Event.objects.get(entry=entry, action=EventAction.ADD_EVIDENCE, after__evidence_id=piece.pk)
    assert "QUOKKAWITNESS" in recorded.after["excerpt"]  # what the purge must reach
    request = file_forget_request(entry_id=entry.pk, reason="The user asked to forget it", actor=lead)
    approve_forget_request(request.pk, actor=lead, quotes=[])

    recorded.refresh_from_db()
    assert recorded.after["excerpt"] == recorded.after["task_ref"] == request.marker
    dump = database_dump()
    assert "QUOKKAWITNESS" not in dump and "QUOKKATICKET" not in dump


def test_the_database_purge_replaces_the_keys_the_rule_names(on_postgres):
    """curation_forget_purge holds its own copy of the text keys (it runs past the append-only trigger):
    they are the rule's, so a key added to one is not forgotten by the other."""
    import re

    from curation.rules import forgetting

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef('curation_forget_purge(bigint, text[], bigint[], bigint[])'::regprocedure)"
        )
        source = cursor.fetchone()[0]

    def array(name):
        return tuple(re.findall(r"'([a-z_]+)'", re.search(rf"{name} text\[\] := ARRAY\[([^\]]*)\]", source).group(1)))

    assert array("entry_keys") == forgetting.ENTRY_TEXT_KEYS
    assert array("entry_lists") == forgetting.ENTRY_TEXT_LISTS
    assert array("derived_keys") == forgetting.DERIVED_TEXT_KEYS
    assert array("derived_lists") == forgetting.DERIVED_TEXT_LISTS
