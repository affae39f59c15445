"""What an agent's submission becomes: a new candidate, or fresh evidence for the lesson it repeats.

Checks in order: fields (with secrets redacted first), the token's scopes, exact duplicates, then the
new candidate with its near-duplicate links and the conflicts it opens."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from curation import access
from curation.models import AgentToken, Entry, Evidence, Status

from .candidates import PreparedCandidate, insert_candidate_with_links, prepare_candidate
from .conflicts import detect_conflicts_for
from .events import record_event


@dataclass
class Submission:
    entry: Entry
    created: bool
    duplicate_of: int | None = None
    evidence_added: int = 0
    similar_ids: list[int] = field(default_factory=list)
    conflict_ids: list[int] = field(default_factory=list)
    flags: list[dict] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "id": self.entry.pk,
            "status": self.entry.status,
            "created": self.created,
            "duplicate_of": self.duplicate_of,
            "evidence_added": self.evidence_added,
            "confidence": round(self.entry.confidence, 4),
            "duplicates": self.similar_ids,
            "conflicts": self.conflict_ids,
            "flags": self.flags,
        }


def _covers(token: AgentToken, scope: str) -> bool:
    return any(access.scope_covers(prefix, scope) for prefix in token.scopes)


def _existing_duplicate(prepared: PreparedCandidate) -> Entry | None:
    """An active (or still pending) entry of the same scope with the same normalised text."""
    matches = Entry.objects.filter(
        scope=prepared.fields["scope"], fingerprint=prepared.fingerprint, status__in=[Status.ACTIVE, Status.PENDING]
    ).order_by("status", "id")  # "active" sorts before "pending"
    return matches.select_for_update().first()


def _add_to_duplicate(entry: Entry, prepared: PreparedCandidate, label: str, now) -> int:
    Evidence.objects.bulk_create(
        Evidence(entry=entry, **{**e, "observed_at": e["observed_at"] or now}, recorded_by_label=label, created_at=now)
        for e in prepared.evidence
    )
    count = len(prepared.evidence)
    record_event(
        entry, actor=None, actor_label=label, action="resubmit",
        reason=f"submitted again; {count} piece{'s' * (count != 1)} of evidence added"
        + "".join(f"; redacted {f.kind} in {f.field}" for f in prepared.findings),
        after={"evidence_added": count, "source_task": prepared.fields.get("source_task", "")},
        at=now,
    )
    return count


def submit_candidate(*, data: dict, token: AgentToken, at=None) -> Submission:
    """One candidate from an agent. Raises ValidationError (bad fields) or PermissionDenied (scope)."""
    if not isinstance(data, dict):
        raise ValidationError({"_": ["Each candidate is a JSON object."]})
    data = dict(data)
    evidence = data.pop("evidence", [])
    prepared = prepare_candidate(data, evidence if evidence is not None else [])
    scope = prepared.fields["scope"]
    if not _covers(token, scope):
        raise PermissionDenied(f"This token may not write to scope {scope!r}.")
    now = at or timezone.now()
    with transaction.atomic(savepoint=False):
        existing = _existing_duplicate(prepared)
        if existing is not None:
            added = _add_to_duplicate(existing, prepared, token.label, now)
            return Submission(existing, created=False, duplicate_of=existing.pk, evidence_added=added,
                              flags=prepared.flags)
        entry, similar_ids = insert_candidate_with_links(prepared, actor_label=token.label, at=now)
        conflicts = detect_conflicts_for(entry, detected_by="ingest", at=now)
        return Submission(
            entry,
            created=True,
            evidence_added=len(prepared.evidence),
            similar_ids=similar_ids,
            conflict_ids=[c.pk for c in conflicts],
            flags=prepared.flags,
        )
