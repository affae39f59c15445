"""The forgetting promise tried from the outside: what a database reader (an auditor's dump, a backup)
and an agent token find once a forget request is approved and purged.

The tombstone keeps only hashes keyed with the install's key, so that nobody holding the database can test
guesses of the forgotten lesson against it offline. A plain hash of the lesson's normalised text anywhere
else would be that test: `similarity.fingerprint` (sha256, no key) is the exact-duplicate key of every
entry and released row."""

import pytest

from curation import services
from curation.infra import redis
from curation.models import Entry, Event, Evidence, ForgetRequest, MemoryTest
from curation.services import conflicts
from curation.rules.similarity import fingerprint
from curation.selectors import retrieval_cache
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.memory_tests import create_memory_test
from tests.factories import active, database_dump, publish_pending

pytestmark = pytest.mark.django_db

LESSON = dict(
    scope="acme/billing-api",
    trigger="Rotating the billing webhook signing key",
    content="Ask Marguerite Okonkwo to approve the rotation; she owns the webhook signing key ZEPHYRQUILL-9931.",
)


@pytest.fixture
def forgotten(agent, reviewer, lead):
    """The lesson approved, published (so a released row holds it), then forgotten at an agent's request."""
    lesson = active(reviewer, **LESSON)
    publish_pending()
    filed = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "the user asked"}).json()
    approve_forget_request(filed["id"], actor=lead)
    return ForgetRequest.objects.get(pk=filed["id"])


@pytest.fixture
def agent(make_agent):
    return make_agent()


@pytest.fixture
def make_agent(db):
    from curation.services.tokens import create_agent_token
    from tests.factories import Agent

    def make(name="billing-agent", scopes=("acme/billing-api",)):
        token, key = create_agent_token(name=name, scopes=list(scopes))
        return Agent(key, token)

    return make


def test_no_plain_hash_of_the_forgotten_text_is_left_after_the_purge(forgotten):
    """The forgotten entry and its released rows (of every version) hold the marker's fingerprint, as they
    hold its text: a reader of the database cannot confirm a guess of the lesson by hashing it."""
    guess = fingerprint(LESSON["trigger"], LESSON["content"])
    assert guess not in database_dump()
    [entry] = Entry.objects.filter(pk__in=forgotten.forgotten_ids)
    assert entry.fingerprint == fingerprint(forgotten.marker, forgotten.marker)


@pytest.mark.xfail(
    strict=True,
    reason="A held submission stores the plain fingerprint of the text it repeats: it is what finds it again "
    "when the agent sends the same lesson twice (answered as a pending candidate's duplicate, so no oracle). "
    "Keying it means the exact-duplicate lookup (submissions._live_by_fingerprint, the batch's hot path) "
    "probing a keyed fingerprint too, with the tombstone key: not a small change.",
)
def test_a_held_resubmission_stores_no_plain_hash_of_the_forgotten_text(forgotten, agent):
    answer = agent.submit(**LESSON)
    assert answer.status_code == 201
    assert Entry.objects.get(pk=answer.json()["id"]).held_by_id == forgotten.pk
    assert fingerprint(LESSON["trigger"], LESSON["content"]) not in database_dump()


def test_a_read_served_while_the_approval_is_written_leaves_no_query_that_returned_it(
    agent, reviewer, lead, monkeypatch, request
):
    """An agent reads the lesson (still published) while the lead's approval is being written, after the
    approval flushed the buffered reads: the record of that read, which returned the entry, must not keep
    its query once the purge is done, as the records written before it do not."""
    from curation.rules import config
    from curation.models import Retrieval, RetrievedEntry
    from curation.services import forgets, retrieval_buffer

    lesson = active(reviewer, **LESSON)
    publish_pending()
    agent.publish_first = False
    filed = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "the user asked"}).json()
    query = "who approves ZEPHYRQUILL-9931 rotation"
    load_open, served = forgets._load_open, []

    def read_meanwhile(request_id, actor):
        served.append(agent.retrieve(scope=LESSON["scope"], q=query).json())  # another agent, another process
        return load_open(request_id, actor)

    monkeypatch.setattr(forgets, "_load_open", read_meanwhile)
    with config.overriding(BUFFER_RETRIEVALS=True):
        if retrieval_buffer.buffering():
            request.applymarker(
                pytest.mark.xfail(
                    strict=True,
                    reason="A read buffered in Redis after the approval's flush is written by the next flush, "
                    "after the purge, with its query. Fix: the flush (entry_writes.insert_counted_retrievals) "
                    "rewrites, in a second statement once it holds the entries' locks, the query of each record "
                    "it wrote that returned a tombstoned entry; the direct record (one statement per read) "
                    "needs the same, which costs every read a round trip: not a small change.",
                )
            )
        approve_forget_request(filed["id"], actor=lead)
        retrieval_buffer.flush()
    [answer] = served
    assert [e["id"] for e in answer["entries"]] == [lesson.pk]
    returned_it = Retrieval.objects.filter(
        pk__in=RetrievedEntry.objects.filter(entry_id=lesson.pk).values("retrieval_id")
    )
    assert returned_it.filter(pk=answer["retrieval_id"]).exists()
    marker = ForgetRequest.objects.get(pk=filed["id"]).marker
    assert set(returned_it.values_list("query", flat=True)) == {marker}


WITNESS = "Marguerite Okonkwo said the ZEPHYRQUILL-9931 key is hers"
REBASE = dict(
    trigger="Merging a feature branch into main",
    content="Always rebase before merging, as Marguerite Okonkwo asks.",
    boundary="Not for release branches.",
    conditions=[],
)
NO_REBASE = dict(
    trigger="Merging feature branches into main",
    content="Never rebase shared branches.",
    boundary="Not for a branch only you use.",
    conditions=[],
)


def _merged_by_a_conflict(reviewer, lead):
    """The lesson's evidence copied onto the new entry a lead writes to resolve its conflict."""
    a = active(
        reviewer,
        scope="acme/billing-api",
        evidence=[
            {
                "kind": "user_statement",
                "signal": "external",
                "excerpt": WITNESS,
                "task_ref": "ZEPHYRQUILL-9931 rotation",
            }
        ],
        **REBASE,
    )
    b = active(reviewer, scope="acme/billing-api/container", **NO_REBASE)
    [conflict] = conflicts.detect_conflicts_for(Entry.objects.get(pk=b.pk))
    a, b = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)
    data = {
        "kind": "failure_lesson",
        "scope": "acme/billing-api",
        "trigger": "Updating shared branches",
        "content": "Merge main into shared branches; do not rebase them.",
        "boundary": "",
        "conditions": [],
        "signal": "external",
    }
    merged = conflicts.merge_conflict(conflict.pk, actor=lead, data=data, version_a=a.version, version_b=b.version)
    return a, merged.created


def _merged_into_an_entry(reviewer, lead):
    """A candidate merged into the active entry a reviewer judged the same lesson: its evidence copied there."""
    target = active(reviewer, scope="acme/billing-api", **NO_REBASE)
    candidate = services.create_candidate(
        data={**REBASE, "kind": "failure_lesson", "scope": "acme/billing-api", "signal": "self", "confidence": 0.7},
        evidence=[
            {
                "kind": "user_statement",
                "signal": "external",
                "excerpt": WITNESS,
                "task_ref": "ZEPHYRQUILL-9931 rotation",
            }
        ],
        actor_label="agent:ci",
    )
    services.merge_into(candidate.pk, target_id=target.pk, actor=reviewer, expected_version=candidate.version)
    return candidate, Entry.objects.get(pk=target.pk)


@pytest.mark.parametrize("merge", [_merged_by_a_conflict, _merged_into_an_entry], ids=["conflict", "merge-into"])
def test_the_copies_a_merge_made_of_the_forgotten_entrys_evidence_are_purged(reviewer, lead, merge):
    """A merge copies a lesson's evidence onto another entry (copied_from names each original): forgetting the
    lesson later, the copies are its evidence as much as the originals, and go with them, whatever the lead
    ticks; the other entry keeps its own text and the note naming where each copy came from."""
    forgotten_entry, other = merge(reviewer, lead)
    copies = list(Evidence.objects.filter(entry=other, copied_from__entry=forgotten_entry))
    assert copies and all(WITNESS in c.excerpt for c in copies)
    request = file_forget_request(entry_id=forgotten_entry.pk, reason="the user asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)  # nothing ticked under "Also found in"

    dump = database_dump()
    assert "ZEPHYRQUILL" not in dump and "Okonkwo" not in dump
    for copy in Evidence.objects.filter(pk__in=[c.pk for c in copies]):
        assert copy.excerpt.startswith(f"[forgotten: request #{request.pk}]")
        assert f"[copied from evidence #{copy.copied_from_id} of entry #{forgotten_entry.pk}]" in copy.excerpt or (
            copy.excerpt == f"[forgotten: request #{request.pk}]"
        )
    other.refresh_from_db()
    assert other.status == "active" and other.content in (
        NO_REBASE["content"],
        "Merge main into shared branches; do not rebase them.",
    )
    assert ForgetRequest.objects.get(pk=request.pk).state == ForgetRequest.State.APPROVED  # the receipt found nothing


CORRECTION = dict(
    trigger="Merging feature branches into main for ZEPHYRQUILL-9931",
    content="Never rebase shared branches, Marguerite Okonkwo says.",
    boundary="Not for a branch only you use.",
    conditions=[],
)


def test_the_memory_test_made_of_a_forgotten_correction_keeps_none_of_its_text(reviewer, lead):
    """A lead keeping one side of a conflict makes it a correction, and the product writes a memory test asked
    with its trigger ("#B outranks #A"). Forgetting the correction later, that query is made of it: it goes
    with it, in the test and in the Event that recorded the test, and the receipt finds nothing."""
    a = active(reviewer, scope="acme/billing-api", **{**REBASE, "content": "Always rebase before merging."})
    b = active(reviewer, scope="acme/billing-api/container", **CORRECTION)
    [conflict] = conflicts.detect_conflicts_for(Entry.objects.get(pk=b.pk))
    a, b = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)
    conflicts.keep_entry(conflict.pk, actor=lead, keep=b.pk, reason="policy", version_a=a.version, version_b=b.version)
    [test] = MemoryTest.objects.filter(corrects=a)
    assert test.query == CORRECTION["trigger"]

    request = file_forget_request(entry_id=b.pk, reason="the user asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    dump = database_dump()
    assert "ZEPHYRQUILL" not in dump and "Merging feature branches into main for" not in dump
    test.refresh_from_db()
    assert test.query == request.marker and test.name == f"#{b.pk} outranks #{a.pk}, which it corrects"
    assert ForgetRequest.objects.get(pk=request.pk).state == ForgetRequest.State.APPROVED
    # No later version can pass it (the correction it asks for is gone): it retires with the forget, said so in
    # its history, instead of failing at every publish after.
    assert test.retired_at is not None
    [retired] = Event.objects.filter(memory_test=test, action="memory_test_retired")
    assert (retired.actor_label, retired.reason) == (
        lead.username,
        f"its correction was forgotten (request #{request.pk})",
    )


def test_the_receipt_reads_the_memory_tests(reviewer, lead):
    """A lead's own memory test that quotes the lesson is not made of it (the purge leaves it), but it is a
    place the text survives in: the receipt names it, as it names every other stored text."""
    lesson = active(reviewer, **LESSON)
    test = create_memory_test(
        data={
            "scope": LESSON["scope"],
            "name": "the signing key's owner",
            "query": "who owns ZEPHYRQUILL-9931",
            "k": 5,
            "budget_tokens": 500,
            "expectations": "under 400 tokens",
        },
        actor=lead,
    )
    request = file_forget_request(entry_id=lesson.pk, reason="the user asked", actor=reviewer)
    approve_forget_request(request.pk, actor=lead)
    request.refresh_from_db()
    [receipt] = Event.objects.filter(forget_request=request, action="forget_receipt")
    assert request.state == ForgetRequest.State.REOPENED
    assert {"place": "curation_memorytest.query", "ids": [test.pk], "count": 1} in receipt.after["residues"]


def _cached_answers_holding(text: str) -> list[bytes]:
    """The keys of the retrieval cache in Redis whose value holds `text`."""
    client = redis.cache_client()
    keys = client.scan_iter(match=redis.cache_key(f"{retrieval_cache.KEY_PREFIX}:*"), count=1000)
    return [key for key in keys if text.encode() in (client.get(key) or b"")]


def test_no_cached_answer_in_redis_holds_the_forgotten_text(
    reviewer, lead, make_agent, django_capture_on_commit_callbacks
):
    """An agent's read cached the lesson's ranking in Redis. Once the approval commits, no cached answer is
    read again (a new generation) and none is left holding the text either: a copy in Redis (and in its
    snapshot on disk) until it expired was a copy the purge did not reach."""
    if redis.cache_client() is None:
        pytest.skip("the retrieval cache is Redis's (the embedded default caches nothing across processes)")
    agent = make_agent()
    lesson = active(reviewer, **LESSON)
    publish_pending()
    agent.publish_first = False
    assert "ZEPHYRQUILL" in agent.retrieve(scope=LESSON["scope"], q="webhook signing key").content.decode()
    assert _cached_answers_holding("ZEPHYRQUILL")
    filed = agent.post("forget-requests", {"entry_id": lesson.pk, "reason": "the user asked"}).json()
    with django_capture_on_commit_callbacks(execute=True):
        approve_forget_request(filed["id"], actor=lead)
    assert _cached_answers_holding("ZEPHYRQUILL") == []
    assert "ZEPHYRQUILL" not in agent.retrieve(scope=LESSON["scope"], q="webhook signing key").content.decode()
