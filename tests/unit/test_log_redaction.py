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


def test_an_access_line_with_a_secret_in_its_path_is_redacted_and_still_formatted(caplog):
    """uvicorn's access formatter reads the record's arguments by position: redacting must keep them."""
    from uvicorn.logging import AccessFormatter

    key = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", f"/api/v1/skills/{key}", "1.1", 200
        )
    record = caplog.records[-1]
    line = AccessFormatter(fmt='%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False).format(record)
    assert key not in line and "GET /api/v1/skills/" in line and "HTTP/1.1\" 200" in line
