"""Agent API handlers: parse, call one service or selector, answer JSON. No business rules here."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.views.decorators.csrf import csrf_exempt

from curation import selectors
from curation.selectors import releases
from curation.selectors.retrieval_cache import cached_retrieve_released
from curation.context_block import build_context
from curation.db_router import retrieval_reads
from curation.models import Entry, Retrieval
from curation.services import add_evidence
from curation.services.submissions import EVIDENCE_KEYS, submit_batch, submit_candidate
from curation.services.usage import record_feedback, record_retrieval
from curation.services.validation import unknown_fields

from .http import (
    ApiError, NotFound, api_view, error_response, query_float, query_int, read_version, readable_scope,
)
from .serializers import entry_json, event_json, evidence_json

FEEDBACK_KEYS = frozenset({"retrieval_id", "outcome", "utility", "used"})
API_HISTORY_LIMIT = 200  # events and evidence an entry's detail answers: its newest events, its first evidence


def _refuse_unknown(body: dict, allowed: frozenset) -> None:
    if errors := unknown_fields(body, allowed):
        raise ValidationError(errors)


@api_view("GET")
def token_detail(request, token):
    """What a client needs to know of its own token: the scopes it reads and writes (the MCP server lists
    one memory resource per scope)."""
    return 200, {"label": token.label, "scopes": list(token.scopes),
                 "expires_at": token.expires_at.isoformat() if token.expires_at else None}


@api_view("POST", body=True, idempotent=True)
def candidates(request, token, body):
    return 201, submit_candidate(data=body, token=token).as_json()


@api_view("POST", body=True, idempotent=True)
def candidates_batch(request, token, body):
    _refuse_unknown(body, frozenset({"candidates"}))
    items = body.get("candidates")
    limit = settings.CURATION["API_BATCH_MAX"]
    if not isinstance(items, list) or not items:
        raise ValidationError({"candidates": ["A non-empty list of candidates."]})
    if len(items) > limit:
        raise ValidationError({"candidates": [f"At most {limit} candidates per batch (got {len(items)})."]})
    results = submit_batch(items=items, token=token)
    created = sum(1 for r in results if r["ok"] and r["created"])
    return 200, {"results": results, "created": created,
                 "duplicates": sum(1 for r in results if r["ok"] and not r["created"]),
                 "failed": sum(1 for r in results if not r["ok"])}


MEMORY_PARAMETERS = frozenset({"scope", "q", "k", "min_confidence", "budget_chars", "task_ref", "version"})


@api_view("GET")
def memory(request, token):
    return _retrieve(token, request.GET)


@api_view("POST", body=True)
def memory_search(request, token, body):
    """GET /memory with its parameters in a JSON body: the query and the task reference, which may hold
    anything an agent pastes, then never sit in a URL, and so in no access log or proxy log."""
    _refuse_unknown(body, MEMORY_PARAMETERS)
    return _retrieve(token, _as_query_parameters(body))


def _as_query_parameters(body: dict) -> dict[str, str]:
    """A JSON body's values as a query string would carry them (text as is, a number as written, null as
    absent), so that both forms go through the one validation of _retrieve."""
    params, errors = {}, {}
    for name, value in body.items():
        if isinstance(value, str):
            params[name] = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            params[name] = str(value)
        elif value is not None:
            errors[name] = ["Text or a number."]
    if errors:
        raise ApiError(422, "Some parameters are not valid.", errors)
    return params


def _retrieve(token, params) -> tuple[int, dict]:
    scope = readable_scope(token, params.get("scope", ""))
    c = settings.CURATION
    k = query_int(params, "k", c["RETRIEVE_LIMIT"], 1, c["API_RETRIEVE_MAX_K"])
    floor = c["RETRIEVE_AT_LEAST"]
    min_confidence = max(floor, query_float(params, "min_confidence", floor, 0.0, 1.0))
    budget = query_int(params, "budget_chars", 2000, 200, 50000)
    q = params.get("q", "")
    if len(q) > 2000:
        raise ApiError(422, "Some parameters are not valid.", {"q": ["At most 2,000 characters."]})
    with retrieval_reads():  # on the replica when there is one; from the cache when asked before
        version = read_version(params)
        ranked = cached_retrieve_released(
            version, scopes=selectors.retrievable_scopes(scope, token.scopes), q=q, k=k, min_confidence=min_confidence
        )
    included, context = build_context([r.entry for r in ranked], budget)
    scores = {r.entry.pk: r.score for r in ranked}
    retrieval = record_retrieval(token=token, scope=scope, query=q, task_ref=params.get("task_ref", ""),
                                 entries=included, memory_version=version)
    return 200, {
        "retrieval_id": str(retrieval.pk),
        "memory_version": version,
        "scope": scope,
        "min_confidence": min_confidence,
        "entries": [{**entry_json(e), "score": round(scores[e.pk], 4)} for e in included],
        "context": context,
    }


@api_view("POST", body=True)
def feedback(request, token, body):
    _refuse_unknown(body, FEEDBACK_KEYS)
    if not isinstance(body.get("retrieval_id"), str):
        raise ValidationError({"retrieval_id": ["The retrieval_id a /api/v1/memory answer gave."]})
    try:
        result = record_feedback(token=token, retrieval_id=body["retrieval_id"], outcome=body.get("outcome"),
                                 utility=body.get("utility"), used=body.get("used"))
    except Retrieval.DoesNotExist:
        raise NotFound("No such retrieval for this token.") from None
    if not result.recorded:
        return 200, {"recorded": False, "message": "Feedback for this retrieval was already recorded; nothing changed.",
                     "outcome": result.feedback.outcome, "entries": []}
    return 200, {"recorded": True, "outcome": result.feedback.outcome, "entries": result.changes}


def _entry_for_token(token, entry_id) -> Entry:
    entry = selectors.entry_for_token(token, entry_id)
    if entry is None:
        raise NotFound("No such entry in this token's scopes.")  # never reveal an entry outside them
    return entry


@api_view("POST", body=True)
def entry_evidence(request, token, entry_id, body):
    _refuse_unknown(body, EVIDENCE_KEYS)
    entry = _entry_for_token(token, entry_id)
    evidence = add_evidence(entry.pk, data=body, actor=None, actor_label=token.label)
    return 201, {"entry_id": entry.pk, "evidence": evidence_json(evidence)}


@api_view("GET")
def entry_detail(request, token, entry_id):
    entry = _entry_for_token(token, entry_id)
    return 200, {**entry_json(entry, full=True),
                 "evidence": [evidence_json(e) for e in selectors.entry_evidence(entry, limit=API_HISTORY_LIMIT)],
                 "events": [event_json(e) for e in selectors.entry_events_for_token(token, entry, limit=API_HISTORY_LIMIT)]}


@csrf_exempt
def unknown_endpoint(request):
    return error_response(404, f"No such endpoint: {request.path}. The endpoints are listed at /api/v1/docs.")


@api_view("GET")
def export(request, token):
    """The published version (or `version=N`) as the files coding agents load: MEMORY.md, the topic files
    and skills/<name>/SKILL.md, of the token's scopes only (under `scope` when given)."""
    scope = readable_scope(token, request.GET["scope"]) if request.GET.get("scope") else ""
    number = read_version(request.GET)
    if not number:
        raise NotFound("No memory version is published yet.")
    version = releases.version_by_number(number)
    files = releases.export_of(version, prefixes=list(token.scopes), scope=scope)
    return 200, {"memory_version": number, "scope": scope, "files": files}
