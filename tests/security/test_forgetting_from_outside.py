"""The forgetting promise tried from the outside: what a database reader (an auditor's dump, a backup)
and an agent token find once a forget request is approved and purged.

The tombstone keeps only hashes keyed with the install's key, so that nobody holding the database can test
guesses of the forgotten lesson against it offline. A plain hash of the lesson's normalised text anywhere
else would be that test: `similarity.fingerprint` (sha256, no key) is the exact-duplicate key of every
entry and released row."""

import pytest

from curation.models import Entry, ForgetRequest
from curation.rules.similarity import fingerprint
from curation.services.forgets import approve_forget_request
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
