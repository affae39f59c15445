"""Secrets and personal data in submitted text are redacted before anything is stored or logged."""

import logging

import pytest
from django.core.management import call_command
from django.test import Client

from curation import services
from curation.models import Entry, Event, Evidence
from curation.rules.redaction import redact
from tests.factories import SECRET_CORPUS, SECRET_SURROUNDINGS, candidate_data

SECRETS = {
    "aws access key": "AKIAIOSFODNN7EXAMPLE",
    "github token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "password": "hunter2hunter2",
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456",
    "e-mail": "jane.doe@example.com",
    "phone": "+1 (415) 555-0134",
    "private key": "MIIEpAIBAAKCAQEAx4FAKEKEYMATERIAL",
}


@pytest.mark.parametrize(
    "text, secret",
    [
        ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", SECRETS["aws access key"]),
        ("clone with ghp_abcdefghijklmnopqrstuvwxyz0123456789 first", SECRETS["github token"]),
        ("use password = 'hunter2hunter2' on staging", SECRETS["password"]),
        (
            "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456'",
            SECRETS["bearer token"],
        ),
        ("ask jane.doe@example.com", SECRETS["e-mail"]),
        ("call +1 (415) 555-0134 if it breaks", SECRETS["phone"]),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx4FAKEKEYMATERIAL\n-----END RSA PRIVATE KEY-----",
            SECRETS["private key"],
        ),
        ("postgres://admin:s3cr3tpass@db.internal/app", "s3cr3tpass"),
    ],
)
def test_redact_removes_the_secret(text, secret):
    redacted, findings = redact(text, "content")
    assert secret not in redacted and "[REDACTED" in redacted and findings


@pytest.mark.parametrize(
    "text",
    [
        "Confirm the repository root with git rev-parse --show-toplevel before editing config.",
        "Run pytest -k test_2041 on version 1.2.3 at 2026-12-01 for task-2041 on port 5432.",
    ],
)
def test_ordinary_lessons_are_left_alone(text):
    assert redact(text, "content") == (text, [])


@pytest.mark.django_db
def test_secrets_never_reach_the_database_or_the_logs(caplog, capsys, tmp_path):
    caplog.set_level(logging.DEBUG)
    text = (
        f"key {SECRETS['aws access key']}, {SECRETS['github token']}, password: {SECRETS['password']}, "
        f"Authorization: Bearer {SECRETS['bearer token']}, mail {SECRETS['e-mail']}, tel {SECRETS['phone']}\n"
        f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS['private key']}\n-----END RSA PRIVATE KEY-----"
    )
    entry = services.create_candidate(
        data=candidate_data(
            content=f"Deploy with {SECRETS['github token']} and password: {SECRETS['password']}",
            trigger=f"When {SECRETS['e-mail']} asks",
            boundary=f"call {SECRETS['phone']}",
        ),
        evidence=[{"kind": "tool_output", "signal": "external", "excerpt": text}],
        actor_label="agent:ci",
    )
    fresh = Entry.objects.get(pk=entry.pk)
    assert "[REDACTED" in fresh.content and "[REDACTED" in fresh.trigger
    assert {f["kind"] for f in fresh.flags} == {"redacted"}
    assert any("github token" in f["detail"] for f in fresh.flags)
    assert "redacted" in Event.objects.get(entry=entry).reason
    services.add_evidence(
        entry.pk, data={"kind": "tool_output", "signal": "self", "excerpt": text}, actor_label="agent:ci"
    )
    dump = tmp_path / "dump.json"
    call_command("dumpdata", "curation", output=str(dump))
    everything = dump.read_text() + caplog.text + "".join(capsys.readouterr())
    assert Evidence.objects.filter(entry=entry).count() == 2
    for secret in SECRETS.values():
        assert secret not in everything


@pytest.mark.django_db
def test_queue_card_shows_the_flag(reviewer):
    services.create_candidate(
        data=candidate_data(content="Token: ghp_abcdefghijklmnopqrstuvwxyz0123456789 works"), actor_label="agent:ci"
    )
    client = Client()
    client.force_login(reviewer)
    page = client.get("/review/candidates/").content.decode()
    assert "⚑ redacted: " in page and "removed from content" in page
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in page


# --- the redaction suite: every format of the corpus, with punctuation around it ------------------------------


@pytest.mark.parametrize("surrounding", SECRET_SURROUNDINGS)
@pytest.mark.parametrize("name, text, secret", SECRET_CORPUS, ids=[name for name, *_ in SECRET_CORPUS])
def test_the_corpus_is_redacted_whatever_surrounds_it(name, text, secret, surrounding):
    redacted, findings = redact(f"Before the deploy {surrounding.format(text)} and after it.", "content")
    assert secret not in redacted and "[REDACTED" in redacted and findings
    assert redacted.startswith("Before the deploy ") and redacted.endswith(" and after it.")


def test_the_corpus_has_at_least_25_formats():
    assert len({name for name, *_ in SECRET_CORPUS}) >= 25


@pytest.mark.parametrize(
    "text",
    [
        "Deferred until 2026-12-03 15:50 UTC, then retried at 2026-12-04 09:05.",
        "The password is rotated monthly by the vault job.",
        "Version 1.22.333.4444 of the client; the API host is 192.168.100.200 on port 8443.",
        "Order 12345 shipped; it weighs 1.5 kg and costs 12.50.",
        "The token is refreshed every hour.",
        "We looked at example dot com for ideas; the pw field is optional.",
        "Meet at noon, then deploy at 9 dot 30.",
        "Basic configuration: set the basic settings first.",
        # a UUID whose first groups are digits only (an outcome's reason names its retrieval)
        "a task that used it succeeded (retrieval 29425224-6410-4623-b070-0d3d99f00dba)",
        "a task that used it failed (retrieval 35708686-2684-4371-a837-7d0bd9859eb7)",  # its digits pass Luhn's check
    ],
)
def test_ordinary_text_with_numbers_and_words_is_left_alone(text):
    assert redact(text, "reason") == (text, [])


@pytest.mark.parametrize(
    "text, secret, kind",
    [
        # the phone pattern once took the token's digit groups and left its last part behind
        ("use xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx.", "AbCdEfGhIjKlMnOpQrStUvWx", "slack token"),
        ("call +44 20 7946 0958.", "7946 0958", "phone number"),
        ("pay with 4111 1111 1111 1111.", "1111 1111", "card number"),
        ("transfer to GB82WEST12345698765432, then", "GB82WEST12345698765432", "IBAN"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw", "basic auth"),
        ("the admin password is Sup3rS3cret!x.", "Sup3rS3cret!x", "password"),
    ],
)
def test_the_gaps_an_outside_probe_found(text, secret, kind):
    redacted, findings = redact(text, "content")
    assert secret not in redacted and [f.kind for f in findings] == [kind]


def test_redacting_twice_changes_nothing():
    once, _ = redact(" ".join(text for _, text, _ in SECRET_CORPUS), "content")
    assert redact(once, "content") == (once, [])
