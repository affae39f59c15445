"""POST /api/v1/memory/search: the retrieval of GET /api/v1/memory with its parameters in a JSON body, so
that what an agent asks never sits in a URL."""

import pytest

from curation.models import Retrieval
from tests.api.test_contract import MEMORY_PARAMETER_ERRORS

pytestmark = pytest.mark.django_db


def search(agent, **body):
    return agent.post("memory/search", body)


def test_search_answers_as_the_get_does(agent, approved):
    ledger = approved(
        scope="acme/billing-api",
        trigger="Running the ledger migration",
        content="Take the ledger lock before migrating ledger tables.",
    )
    approved(scope="acme/billing-api", trigger="Writing invoices as PDF", content="Embed the fonts.")
    params = {
        "scope": "acme/billing-api",
        "q": "ledger migration",
        "k": 1,
        "budget_chars": 400,
        "min_confidence": 0.6,
        "task_ref": "task-2417",
    }
    got = agent.retrieve(**{name: str(value) for name, value in params.items()})
    posted = search(agent, **params)
    assert got.status_code == posted.status_code == 200
    got, posted = got.json(), posted.json()
    assert [e["id"] for e in posted["entries"]] == [ledger.pk]
    assert {**posted, "retrieval_id": ""} == {**got, "retrieval_id": ""}
    retrieval = Retrieval.objects.get(pk=posted["retrieval_id"])
    assert (retrieval.query, retrieval.task_ref, retrieval.entry_ids) == ("ledger migration", "task-2417", [ledger.pk])


def test_numbers_may_be_sent_as_text_as_in_a_query_string(agent, approved):
    approved(scope="acme/billing-api")
    assert search(agent, scope="acme/billing-api", k="1", min_confidence="0.5").status_code == 200


@pytest.mark.parametrize("params, field", MEMORY_PARAMETER_ERRORS)
def test_the_same_parameters_are_refused_with_the_same_errors(agent, params, field):
    got, posted = agent.get("memory", **params), search(agent, **params)
    assert got.status_code == posted.status_code == 422
    assert posted.json() == got.json() and field in posted.json()["errors"]
    assert not Retrieval.objects.exists()


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"scope": "acme/billing-api", "k": True}, "k", "A number."),
        ({"scope": "acme/billing-api", "k": [5]}, "k", "A number."),
        ({"scope": "acme/billing-api", "q": ["ledger"]}, "q", "Text."),
        ({"scope": "acme/billing-api", "task_ref": 0}, "task_ref", "Text."),
        ({"scope": 5}, "scope", "Text."),
        ({"scope": {"name": "acme"}}, "scope", "Text."),
        ({"scope": "acme/billing-api", "embedding": "0.1,0.2"}, "embedding", "A list of numbers."),
        ({"scope": "acme/billing-api", "k": 2.5}, "k", "A whole number."),
        ({"scope": "acme/billing-api", "query": "ledger"}, "query", "Unknown field."),
        ({"scope": "acme/billing-api", "q": "x" * 2001}, "q", "At most 2,000 characters."),
    ],
)
def test_a_bad_body_is_a_422_naming_the_field(agent, body, field, message):
    response = search(agent, **body)
    assert response.status_code == 422 and response.json()["errors"] == {field: [message]}


def test_a_body_that_is_not_a_json_object_is_refused(agent):
    assert (
        agent.post("memory/search", b"scope=acme", content_type="application/x-www-form-urlencoded").status_code == 415
    )
    assert agent.post("memory/search", "[1, 2]").status_code == 400
    assert agent.get("memory/search", scope="acme/billing-api").status_code == 405


def test_outside_the_tokens_scopes_is_403(agent):
    assert search(agent, scope="acme/web").status_code == 403
    assert not Retrieval.objects.exists()


def test_in_the_schema_and_on_the_docs_page(client):
    schema = client.get("/api/v1/openapi.json").json()
    search_op = schema["paths"]["/memory/search"]["post"]
    assert search_op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/MemoryQuery"
    }
    body = schema["components"]["schemas"]["MemoryQuery"]
    get_names = {p["name"] for p in schema["paths"]["/memory"]["get"]["parameters"]}
    assert set(body["properties"]) == get_names and body["required"] == ["scope"]
    assert "POST /api/v1/memory/search" in client.get("/api/v1/docs").content.decode()
