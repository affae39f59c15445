"""A submission sent with an `Idempotency-Key` header is answered once: its first successful answer is
stored with the write it answers (one transaction), and a retry with the same key gets that answer
again, whatever happened in between (a timeout, a restart). Two requests with one key at the same
moment: the database keeps one answer, and the other request's writes are undone and it gets that one.
A refused request (4xx) stores nothing: sent again, it is checked again."""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass
from typing import Callable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from curation.rules import clock, config
from curation.models import AgentToken, IdempotentAnswer

KEY_MAX = 255


@dataclass(frozen=True)
class Answer:
    status: int
    data: dict
    replayed: bool = False


def clean_key(raw: str) -> str:
    """What is stored of an Idempotency-Key: its sha256, never the key (a client may send anything there)."""
    key = raw.strip()
    if not 0 < len(key) <= KEY_MAX or not key.isascii() or not key.isprintable():
        raise ValidationError({"Idempotency-Key": [f"1 to {KEY_MAX} printable ASCII characters, e.g. a UUID."]})
    return hashlib.sha256(key.encode()).hexdigest()


def request_hash(path: str, body: dict) -> str:
    return hashlib.sha256(f"{path}\n{json.dumps(body, sort_keys=True)}".encode()).hexdigest()


def _kept_since(now) -> datetime.datetime:
    return now - datetime.timedelta(hours=config.IDEMPOTENCY_KEEP_HOURS.value)


def _stored(token: AgentToken, key: str, digest: str, now) -> Answer | None:
    stored = IdempotentAnswer.objects.filter(token=token, key=key, created_at__gte=_kept_since(now)).first()
    if stored is None:
        return None
    if stored.request_hash != digest:
        raise ValidationError(
            {
                "Idempotency-Key": [
                    "This key was used for a different request: use a new key for "
                    "a new request, the same key only to retry one."
                ]
            }
        )
    return Answer(stored.status, stored.answer, replayed=True)


def answer_once(*, token: AgentToken, key: str, digest: str, produce: Callable[[], tuple[int, dict]]) -> Answer:
    """The stored answer to (token, key), or `produce()`'s, stored in the transaction of its writes."""
    now = clock.wall()
    if (stored := _stored(token, key, digest, now)) is not None:
        return stored
    try:
        with transaction.atomic():
            status, data = produce()
            # An expired answer leaves room for its key; the token's other expired answers go with it.
            IdempotentAnswer.objects.filter(token=token, created_at__lt=_kept_since(now)).delete()
            IdempotentAnswer.objects.create(
                token=token, key=key, request_hash=digest, status=status, answer=data, created_at=now
            )
    except IntegrityError:
        # The same key, sent again before the first answer was stored: that one's writes stand, ours are undone.
        if (stored := _stored(token, key, digest, now)) is not None:
            return stored
        raise
    return Answer(status, data)
