"""Rows for the background-curation tests: active and archived entries with exact numbers, and the usage
history (retrievals) the policies count. Entries are inserted directly, as the state the sweeps find."""

import datetime
import uuid

from curation.models import AgentToken, Entry, Evidence, Retrieval, RetrievedEntry, Status

AS_OF = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc)


def days_before(days: float, moment: datetime.datetime = AS_OF) -> datetime.datetime:
    return moment - datetime.timedelta(days=days)


def make_entry(**fields) -> Entry:
    base = fields.pop("base_confidence", 0.8)
    values = {
        "kind": "procedure",
        "scope": "acme/billing-api/container",
        "trigger": f"When deploying {uuid.uuid4().hex[:8]}",
        "content": "Run the smoke tests first.",
        "signal": "independent",
        "base_confidence": base,
        "confidence": fields.pop("confidence", base),
        "status": Status.ACTIVE,
        "created_at": days_before(400),
        "updated_at": days_before(400),
        "last_verified_at": days_before(10),
    }
    values.update(fields)
    return Entry.objects.create(**values)


def make_archived(*, archived_at, reason="decayed", **fields) -> Entry:
    return make_entry(status=Status.ARCHIVED, archived_at=archived_at, archive_reason=reason,
                      base_confidence=fields.pop("base_confidence", 0.4), confidence=fields.pop("confidence", 0.29),
                      **fields)


def add_evidence_row(entry, *, signal, polarity="supports", observed_at, created_at=None) -> Evidence:
    return Evidence.objects.create(
        entry=entry, kind="test_result", signal=signal, polarity=polarity, excerpt="CI run 4411 passed",
        observed_at=observed_at, created_at=created_at or observed_at, recorded_by_label="agent:ci",
    )


def retrieve(entry, *, at, times=1) -> None:
    token, _ = AgentToken.objects.get_or_create(name="ci", defaults={"key_prefix": "ci", "key_hash": "0" * 64})
    for _ in range(times):
        retrieval = Retrieval.objects.create(id=uuid.uuid4(), token=token, scope=entry.scope, entry_ids=[entry.pk],
                                             created_at=at)
        RetrievedEntry.objects.create(retrieval=retrieval, entry=entry, rank=1, created_at=at)
