"""Retrieval past one machine: answers cached per published version (a publish is the invalidation, a
token never meets another scope's answer, every answer still records its Retrieval), and the reads routed
to a replica when one is configured."""

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from curation.models import Retrieval, RetrievedEntry
from curation.selectors import retrieval_cache
from curation.services.releases import publish_version

# A second connection name for the one test database, as DATABASE_REPLICA_URL makes for a real replica
# (the same parameters, its tests mirroring the primary's database). Retrieval reads go there only where
# settings.RETRIEVAL_ON_REPLICA says so, as DATABASE_REPLICA_URL makes it: in the test that says so.
if "replica" not in connections.settings:
    connections.settings["replica"] = {**connections.settings["default"], "TEST": {"MIRROR": "default"}}


def _ids(response):
    assert response.status_code == 200, response.content
    return [e["id"] for e in response.json()["entries"]]


def _version_reads(queries):
    return [q["sql"] for q in queries if "curation_releasedentry" in q["sql"]]


@pytest.fixture
def cached(settings):
    settings.CURATION = {**settings.CURATION, "RETRIEVAL_CACHE_SECONDS": 300}


def test_an_unchanged_version_answers_from_the_cache_and_still_records_the_retrieval(cached, agent, approved, lead):
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="billing")
    first = agent.retrieve(q="restarting worker")
    with CaptureQueriesContext(connections["default"]) as queries:
        second = agent.retrieve(q="restarting worker")
    assert _ids(first) == _ids(second) == [entry.pk]
    assert _version_reads(queries.captured_queries) == []  # ranked from the cache, not the version's rows
    # Each answer is its own Retrieval, naming what it gave: outcomes and usage counters need it.
    assert first.json()["retrieval_id"] != second.json()["retrieval_id"]
    for answer in (first, second):
        retrieval = Retrieval.objects.get(pk=answer.json()["retrieval_id"])
        assert list(RetrievedEntry.objects.filter(retrieval=retrieval).values_list("entry_id", flat=True)) == [entry.pk]
    # Another query is another answer, read from the database.
    with CaptureQueriesContext(connections["default"]) as queries:
        agent.retrieve(q="invoices")
    assert _version_reads(queries.captured_queries)


def test_a_publish_changes_the_answer(cached, agent, approved, lead):
    agent.publish_first = False
    old = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="first")
    assert _ids(agent.retrieve(q="restarting worker")) == [old.pk]
    new = approved(
        scope="acme/billing-api",
        trigger="Restarting the billing worker at night",
        content="Page the on-call before restarting.",
    )
    publish_version(actor=lead, summary="second")
    answer = agent.retrieve(q="restarting worker")
    assert answer.json()["memory_version"] == 3 and sorted(_ids(answer)) == sorted([old.pk, new.pk])


def test_a_token_never_sees_another_scopes_cached_answer(cached, make_agent, approved, lead):
    billing = make_agent("billing-agent", scopes=("acme/billing-api",))
    web = make_agent("web-agent", scopes=("acme/web",))
    for agent in (billing, web):
        agent.publish_first = False
    secret = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="billing")
    assert _ids(billing.retrieve(scope="acme/billing-api", q="restarting worker")) == [secret.pk]
    assert _ids(web.retrieve(scope="acme/web", q="restarting worker")) == []
    assert web.retrieve(scope="acme/billing-api", q="restarting worker").status_code in (403, 404)


def test_a_forgotten_generation_reads_the_database_again(cached, agent, approved, lead):
    agent.publish_first = False
    approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="billing")
    agent.retrieve(q="restarting worker")
    retrieval_cache.forget_cached_answers()
    with CaptureQueriesContext(connections["default"]) as queries:
        agent.retrieve(q="restarting worker")
    assert _version_reads(queries.captured_queries)


@pytest.mark.django_db(transaction=True, databases=["default", "replica"])
def test_retrieval_reads_go_to_the_replica_and_everything_else_to_the_primary(settings, agent, approved, lead):
    settings.CURATION = {**settings.CURATION, "RETRIEVAL_CACHE_SECONDS": 0}
    settings.RETRIEVAL_ON_REPLICA = True
    agent.publish_first = False
    entry = approved(scope="acme/billing-api", trigger="Restarting the billing worker", content="Drain it first.")
    publish_version(actor=lead, summary="billing")
    with (
        CaptureQueriesContext(connections["replica"]) as on_replica,
        CaptureQueriesContext(connections["default"]) as on_primary,
    ):
        answer = agent.retrieve(q="restarting worker")
    assert _ids(answer) == [entry.pk]
    replica_sql = " ".join(q["sql"] for q in on_replica.captured_queries)
    assert "curation_releasedentry" in replica_sql and "curation_publishedversion" in replica_sql
    assert _version_reads(on_primary.captured_queries) == []
    # The token check and the Retrieval record are the primary's.
    primary = [" ".join(q["sql"].split()) for q in on_primary.captured_queries]
    assert any("FROM curation_agenttoken" in sql for sql in primary)
    assert any("INSERT INTO" in sql.upper() and "curation_retrieval" in sql for sql in primary)
    assert not any(q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE")) for q in on_replica.captured_queries)
