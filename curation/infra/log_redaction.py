"""Log lines never carry a secret: every log record, from any logger in any process (the web server, a
Celery worker, beat, a management command), has its message and its traceback redacted when it is made.
A record factory rather than a handler filter: Celery replaces the root logger's handlers, and Django's
server logger has its own, but every record is made by the one factory."""

from __future__ import annotations

import logging

from curation.rules.redaction import redact


def _redacted_record_factory(make):
    def make_record(*args, **kwargs) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: logging reports it when the record is formatted
            return record
        clean, found = redact(message, "log")
        if found and not _redact_in_shape(record):
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), "log")[0]
        return record

    make_record.redacts = True
    return make_record


def _redact_in_shape(record: logging.LogRecord) -> bool:
    """Redact the message's format and each argument apart, keeping `args` a tuple: a formatter that reads
    the arguments by position (uvicorn's access log: client, method, path, version, status) still can.
    False when that leaves a secret (one split between the format and an argument): then the caller keeps
    only the redacted whole message."""
    if not isinstance(record.args, tuple) or not record.args or not isinstance(record.msg, str):
        return False
    msg = redact(record.msg, "log")[0]
    args = tuple(redact(a, "log")[0] if isinstance(a, str) else a for a in record.args)
    try:
        if redact(msg % args, "log")[1]:
            return False
    except (TypeError, ValueError):
        return False
    record.msg, record.args = msg, args
    return True


def redact_every_log_record() -> None:
    """Install the redacting record factory once per process (AppConfig.ready)."""
    make = logging.getLogRecordFactory()
    if not getattr(make, "redacts", False):
        logging.setLogRecordFactory(_redacted_record_factory(make))
