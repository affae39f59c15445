"""How entries, evidence and events look in the agent API's answers."""

from curation.rules import trust


def _time(value):
    return value.isoformat() if value else None


def entry_json(entry, *, full: bool = False, at=None) -> dict:
    """`entry` as an answer shows it, its confidence at `at` (now when not given)."""
    data = {
        "id": entry.pk,
        "kind": entry.kind,
        "scope": entry.scope,
        "trigger": entry.trigger,
        "content": entry.content,
        "conditions": list(entry.conditions),
        "boundary": entry.boundary,
        "confidence": round(entry.confidence if at is None else entry.confidence_at(at), 4),
        "signal": entry.signal,
        "trust": trust.name(entry.trust),
        "last_verified_at": _time(entry.last_verified_at),
    }
    if full:
        data.update(
            {
                "status": entry.status,
                "recheck_when": entry.recheck_when,
                "review_by": entry.review_by.isoformat() if entry.review_by else None,
                "base_confidence": round(entry.base_confidence, 4),
                "hit_count": entry.hit_count,
                "retrieval_count": entry.retrieval_count,
                "average_utility": None if entry.average_utility is None else round(entry.average_utility, 4),
                "in_queue": entry.queued_at is not None,
                "queue_reason": entry.queue_reason,
                "archived_at": _time(entry.archived_at),
                "archive_reason": entry.archive_reason,
                "supersedes": entry.supersedes_id,
                "source_task": entry.source_task,
                "flags": entry.flags,
                "version": entry.version,
                "created_at": _time(entry.created_at),
                "updated_at": _time(entry.updated_at),
            }
        )
    return data


def evidence_json(evidence) -> dict:
    return {
        "id": evidence.pk,
        "kind": evidence.kind,
        "signal": evidence.signal,
        "source": evidence.source,
        "trust": trust.name(evidence.trust),
        "polarity": evidence.polarity,
        "excerpt": evidence.excerpt,
        "task_ref": evidence.task_ref,
        "evaluator": evidence.evaluator,
        "score": evidence.score,
        "observed_at": _time(evidence.observed_at),
        "recorded_by": evidence.recorded_by_label,
    }


def event_json(event) -> dict:
    return {
        "action": event.action,
        "actor": event.actor_label,
        "reason": event.reason,
        "at": _time(event.created_at),
        "entry_version": event.entry_version,
    }
