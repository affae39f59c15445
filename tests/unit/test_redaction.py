"""Secrets and personal data in submitted text are redacted before anything is stored or logged."""

import logging

import pytest
from django.core.management import call_command
from django.test import Client

from curation import services
from curation.models import Entry, Event, Evidence
from curation.redaction import redact
from tests.factories import candidate_data

SECRETS = {
    "aws access key": "AKIAIOSFODNN7EXAMPLE",
    "github token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "password": "hunter2hunter2",
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456",
    "e-mail": "jane.doe@example.com",
    "phone": "+1 (415) 555-0134",
    "private key": "MIIEpAIBAAKCAQEAx4FAKEKEYMATERIAL",
}


@pytest.mark.parametrize("text, secret", [
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", SECRETS["aws access key"]),
    ("clone with ghp_abcdefghijklmnopqrstuvwxyz0123456789 first", SECRETS["github token"]),
    ("use password = 'hunter2hunter2' on staging", SECRETS["password"]),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456'", SECRETS["bearer token"]),
    ("ask jane.doe@example.com", SECRETS["e-mail"]),
    ("call +1 (415) 555-0134 if it breaks", SECRETS["phone"]),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx4FAKEKEYMATERIAL\n-----END RSA PRIVATE KEY-----", SECRETS["private key"]),
    ("postgres://admin:s3cr3tpass@db.internal/app", "s3cr3tpass"),
])
def test_redact_removes_the_secret(text, secret):
    redacted, findings = redact(text, "content")
    assert secret not in redacted and "[REDACTED" in redacted and findings


@pytest.mark.parametrize("text", [
    "Confirm the repository root with git rev-parse --show-toplevel before editing config.",
    "Run pytest -k test_2041 on version 1.2.3 at 2026-12-01 for task-2041 on port 5432.",
])
def test_ordinary_lessons_are_left_alone(text):
    assert redact(text, "content") == (text, [])


@pytest.mark.django_db
def test_secrets_never_reach_the_database_or_the_logs(caplog, capsys, tmp_path):
    caplog.set_level(logging.DEBUG)
    text = (f"key {SECRETS['aws access key']}, {SECRETS['github token']}, password: {SECRETS['password']}, "
            f"Authorization: Bearer {SECRETS['bearer token']}, mail {SECRETS['e-mail']}, tel {SECRETS['phone']}\n"
            f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS['private key']}\n-----END RSA PRIVATE KEY-----")
    entry = services.create_candidate(
        data=candidate_data(content=f"Deploy with {SECRETS['github token']} and password: {SECRETS['password']}",
                            trigger=f"When {SECRETS['e-mail']} asks", boundary=f"call {SECRETS['phone']}"),
        evidence=[{"kind": "tool_output", "signal": "external", "excerpt": text}],
        actor_label="agent:ci",
    )
    fresh = Entry.objects.get(pk=entry.pk)
    assert "[REDACTED" in fresh.content and "[REDACTED" in fresh.trigger
    assert {f["kind"] for f in fresh.flags} == {"redacted"}
    assert any("github token" in f["detail"] for f in fresh.flags)
    assert "redacted" in Event.objects.get(entry=entry).reason
    services.add_evidence(entry.pk, data={"kind": "tool_output", "signal": "self", "excerpt": text}, actor_label="agent:ci")
    dump = tmp_path / "dump.json"
    call_command("dumpdata", "curation", output=str(dump))
    everything = dump.read_text() + caplog.text + "".join(capsys.readouterr())
    assert Evidence.objects.filter(entry=entry).count() == 2
    for secret in SECRETS.values():
        assert secret not in everything


@pytest.mark.django_db
def test_queue_card_shows_the_flag(reviewer):
    services.create_candidate(data=candidate_data(content="Token: ghp_abcdefghijklmnopqrstuvwxyz0123456789 works"),
                              actor_label="agent:ci")
    client = Client()
    client.force_login(reviewer)
    page = client.get("/review/candidates/").content.decode()
    assert "⚑ redacted: " in page and "removed from content" in page
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in page
