"""Secrets and personal data sent to the API never reach a table or a log line."""

import logging

import pytest

from curation.models import Entry, Retrieval
from tests.factories import SECRET_CORPUS, SECRET_SURROUNDINGS, database_dump

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAZ3MPLE7QWERTY123"
PASSWORD = "Tr0ub4dor-and-3-more"
EMAIL = "jane.doe@example-corp.com"
PHONE = "+44 20 7946 0958"
BEARER = "eyJhbGciOiJIUzI1NiJ9sadkjhasd8723hjkasd"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----"
SECRETS = (AWS_KEY, PASSWORD, EMAIL, PHONE, BEARER, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun")


def test_secrets_are_redacted_everywhere_and_never_stored_or_logged(agent, approved, caplog):
    caplog.set_level(logging.DEBUG)
    body = agent.submit(
        trigger=f"Calling the API as {EMAIL}",
        content=f"Use key {AWS_KEY} with password: {PASSWORD}; call +44 20 7946 0958 if it fails. {PRIVATE_KEY}",
        boundary=f"Authorization: Bearer {BEARER}",
        source_task=f"task for {EMAIL}",
        evidence=[
            {
                "kind": "tool_output",
                "signal": "external",
                "excerpt": f"curl -H 'Authorization: Bearer {BEARER}'",
                "task_ref": EMAIL,
            }
        ],
    ).json()
    kinds = {flag["detail"] for flag in body["flags"]}
    assert {
        "e-mail address removed from trigger",
        "private key removed from content",
        "phone number removed from content",
        "bearer token removed from evidence[0].excerpt",
    } <= kinds
    entry = Entry.objects.get(pk=body["id"])
    assert "[REDACTED: e-mail address]" in entry.trigger
    # the batch path, the evidence endpoint and the retrieval query are scanned too
    agent.post(
        "candidates/batch",
        {
            "candidates": [
                {
                    **{"scope": "acme/billing-api", "kind": "fact", "signal": "self", "trigger": "Reaching support"},
                    "content": f"Mail {EMAIL}, key {AWS_KEY}",
                }
            ]
        },
    )
    active = approved(scope="acme/billing-api")
    agent.post(
        f"entries/{active.pk}/evidence",
        {"kind": "review", "signal": "external", "excerpt": f"password={PASSWORD}", "task_ref": PHONE},
    )
    agent.retrieve(scope="acme/billing-api", q=f"what did {EMAIL} say about {AWS_KEY}")
    # a refused submission logs a warning: it must not carry the text either
    agent.submit(trigger="", content=f"password: {PASSWORD}")

    dump = database_dump()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for secret in SECRETS:
        assert secret not in dump, secret
        assert secret not in logged, secret
    assert "[REDACTED" in dump  # the dump really holds the submitted rows


# --- the redaction suite through the API: every format in every field, with punctuation around it ---------


@pytest.mark.parametrize("name, text, secret", SECRET_CORPUS, ids=[name for name, *_ in SECRET_CORPUS])
def test_every_format_in_every_field_is_redacted_before_it_is_stored(agent, approved, caplog, name, text, secret):
    caplog.set_level(logging.DEBUG)
    around = iter(SECRET_SURROUNDINGS * 2)
    placed = lambda: next(around).format(text)  # noqa: E731 (each field gets other punctuation)
    response = agent.submit(
        scope="acme/billing-api",
        trigger=f"When {placed()} shows up",
        content=f"Do not paste {placed()}",
        boundary=placed(),
        recheck_when=placed(),
        conditions=[placed(), "deploy"],
        source_task=placed()[:200],
        evidence=[{"kind": "tool_output", "signal": "external", "excerpt": placed(), "task_ref": placed()[:200]}],
    )
    assert response.status_code == 201, response.json()
    flagged = {flag["detail"].rsplit(" removed from ", 1)[1] for flag in response.json()["flags"]}
    assert {"trigger", "content", "boundary", "recheck_when", "conditions", "evidence[0].excerpt"} <= flagged
    entry = approved(scope="acme/billing-api")
    assert (
        agent.post(
            f"entries/{entry.pk}/evidence",
            {"kind": "review", "signal": "external", "excerpt": placed(), "task_ref": placed()[:200]},
        ).status_code
        == 201
    )
    assert (
        agent.post(
            "memory/search", {"scope": "acme/billing-api", "q": placed(), "task_ref": placed()[:200]}
        ).status_code
        == 200
    )
    dump = database_dump()
    assert secret not in dump and secret not in caplog.text


def test_a_value_longer_than_its_column_is_redacted_before_it_is_cut(agent):
    # The key straddles the task_ref column's 255 characters: cut first, its first part would be stored.
    task_ref = "t" * 240 + " " + AWS_KEY
    body = agent.post("memory/search", {"scope": "acme/billing-api", "task_ref": task_ref}).json()
    stored = Retrieval.objects.get(pk=body["retrieval_id"]).task_ref
    assert len(stored) == 255 and stored.startswith("t" * 240 + " [REDACTED")
    assert AWS_KEY[:12] not in stored
