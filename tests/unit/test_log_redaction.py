"""Secrets and personal data never reach a log line, whichever logger writes it."""

import logging

import pytest

from tests.factories import SECRET_CORPUS


@pytest.mark.parametrize("logger_name", ["curation.api", "django.server", "celery.worker", "gunicorn.error"])
def test_every_logger_writes_redacted_messages(caplog, logger_name):
    caplog.set_level(logging.INFO)
    text = " ".join(value for _, value, _ in SECRET_CORPUS)
    logging.getLogger(logger_name).info('"GET /api/v1/memory?q=ledger %s HTTP/1.1" 200', text)
    written = caplog.records[-1].getMessage()
    assert written.startswith('"GET /api/v1/memory?q=') and "[REDACTED" in written
    for _, _, secret in SECRET_CORPUS:
        assert secret not in written and secret not in caplog.text, secret


def test_a_traceback_is_redacted_too(caplog):
    try:
        raise ValueError("duplicate key (name)=(AKIAZ3MPLE7QWERTY123)")
    except ValueError:
        logging.getLogger("curation.sweeps.runs").exception("the run failed for jane.doe@example-corp.com")
    assert "AKIAZ3MPLE7QWERTY123" not in caplog.text and "jane.doe@example-corp.com" not in caplog.text
    assert "ValueError" in caplog.text and "[REDACTED" in caplog.text


def test_clean_messages_are_left_as_they_are(caplog):
    caplog.set_level(logging.INFO)
    logging.getLogger("curation.sweeps.runs").info("lifecycle %s as of %s: examined %s", "decay", "2026-12-03", 12)
    assert caplog.records[-1].getMessage() == "lifecycle decay as of 2026-12-03: examined 12"
    assert caplog.records[-1].args == ("decay", "2026-12-03", 12)
