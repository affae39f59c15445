"""A lead's upload, kept between its dry-run preview and the import the lead confirms: the bytes as sent,
in a file of the data folder only the server reads (never in the database, the session or the task queue:
the text is not redacted until the import submits it), removed when the import ran or was cancelled."""

from __future__ import annotations

import os
import re
import secrets
import time

from django.conf import settings

UPLOAD_MAX_BYTES = 10 * 1024 * 1024  # a file or a zip sent through the page
UPLOAD_KEPT_SECONDS = 2 * 24 * 3600  # a preview nobody confirmed: its upload goes after two days
_UPLOAD_ID = re.compile(r"^[0-9a-f]{32}$")


class UploadGone(LookupError):
    """The previewed upload is no longer here (imported, cancelled, or the server's folder was emptied)."""


def _path(upload_id: str):
    if not _UPLOAD_ID.match(upload_id or ""):
        raise UploadGone(upload_id)
    return settings.DATA_DIR / "uploads" / upload_id


def stage_upload(data: bytes) -> str:
    """Keep `data` for the import the lead may confirm; answers its id."""
    upload_id = secrets.token_hex(16)
    folder = settings.DATA_DIR / "uploads"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _discard_stale(folder)
    descriptor = os.open(_path(upload_id), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as staged:
        staged.write(data)
    return upload_id


def staged_upload(upload_id: str) -> bytes:
    try:
        return _path(upload_id).read_bytes()
    except OSError:
        raise UploadGone(upload_id) from None


def discard_upload(upload_id: str) -> None:
    try:
        _path(upload_id).unlink(missing_ok=True)
    except UploadGone:
        pass


def _discard_stale(folder) -> None:
    """Uploads previewed and never imported nor cancelled, older than UPLOAD_KEPT_SECONDS."""
    cutoff = time.time() - UPLOAD_KEPT_SECONDS
    for staged in folder.iterdir():
        try:
            if _UPLOAD_ID.match(staged.name) and staged.stat().st_mtime < cutoff:
                staged.unlink()
        except OSError:
            continue  # another process removed it meanwhile
