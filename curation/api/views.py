"""Agent API handlers: parse, call one service or selector, answer JSON. No business rules here."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.views.decorators.csrf import csrf_exempt

from curation import selectors
from curation.rules import clock, config, trust, vectors
from curation.selectors import releases
from curation.selectors.evaluation import arm_for, learning_report
from curation.selectors.retrieval_cache import cached_retrieve_released
from curation.selectors.trust import trust_why
from curation.rules.context_block import build_context
from curation.infra.db_router import read_for_retrieval
from curation.rules.evaluation import HOLDOUT, RULES_KINDS, RULES_ONLY
from curation.models import Entry, Retrieval
from curation.services import add_evidence
from curation.services.forgets import file_forget_request
from curation.services.memory_test_runs import run_memory_tests
from curation.services.submissions import EVIDENCE_KEYS, submit_batch, submit_candidate
from curation.services.usage import record_feedback, record_retrieval
from curation.services.validation import unknown_fields

from .http import (
    NUMBER_PARAMETERS,
    ApiError,
    NotFound,
    api_view,
    error_response,
    query_float,
    query_int,
    read_version,
    readable_scope,
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
    return 200, {
        "label": token.label,
        "scopes": list(token.scopes),
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
    }


@api_view("POST", body=True, idempotent=True)
def candidates(request, token, body):
    return 201, submit_candidate(data=body, token=token).as_json()


@api_view("POST", body=True, idempotent=True)
def candidates_batch(request, token, body):
    _refuse_unknown(body, frozenset({"candidates"}))
    items = body.get("candidates")
    limit = config.API_BATCH_MAX.value
    if not isinstance(items, list) or not items:
        raise ValidationError({"candidates": ["A non-empty list of candidates."]})
    if len(items) > limit:
        raise ValidationError({"candidates": [f"At most {limit} candidates per batch (got {len(items)})."]})
    results = submit_batch(items=items, token=token)
    created = sum(1 for r in results if r["ok"] and r["created"])
    return 200, {
        "results": results,
        "created": created,
        "duplicates": sum(1 for r in results if r["ok"] and not r["created"]),
        "failed": sum(1 for r in results if not r["ok"]),
    }


MEMORY_PARAMETERS = frozenset(
    {"scope", "q", "k", "min_confidence", "min_trust", "budget_chars", "task_ref", "version", "embedding", "metric"}
)


@api_view("GET")
def memory(request, token):
    return _retrieve(request, token, request.GET)


@api_view("POST", body=True)
def memory_search(request, token, body):
    """GET /memory with its parameters in a JSON body: the query and the task reference, which may hold
    anything an agent pastes, then never sit in a URL, and so in no access log or proxy log."""
    _refuse_unknown(body, MEMORY_PARAMETERS)
    body = dict(body)
    embedding = body.pop("embedding", None)
    if embedding is not None and not isinstance(embedding, list):
        raise ApiError(422, "Some parameters are not valid.", {"embedding": ["A list of numbers."]})
    return _retrieve(request, token, {**_as_query_parameters(body), "embedding": embedding})


def _as_query_parameters(body: dict) -> dict[str, str]:
    """A JSON body's values as a query string would carry them (a number as written or as text, null as
    absent), so that both forms go through the one validation of _retrieve; any other JSON type is a 422
    naming the field, and so is a number where text is asked (it would otherwise pass as a scope)."""
    params, errors = {}, {}
    for name, value in body.items():
        if value is None:
            continue
        if name in NUMBER_PARAMETERS:
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                params[name] = str(value)  # text is read as a query string's would be
            else:
                errors[name] = ["A number."]
        elif isinstance(value, str):
            params[name] = value
        else:
            errors[name] = ["Text."]
    if errors:
        raise ApiError(422, "Some parameters are not valid.", errors)
    return params


def _retrieve(request, token, params) -> tuple[int, dict]:
    scope = readable_scope(token, params.get("scope", ""))
    k = query_int(params, "k", config.RETRIEVE_LIMIT.value, 1, config.API_RETRIEVE_MAX_K.value)
    floor = config.RETRIEVE_AT_LEAST.value
    min_confidence = max(floor, query_float(params, "min_confidence", floor, 0.0, 1.0))
    min_trust = _min_trust(params)
    budget = query_int(params, "budget_chars", 2000, 200, 50000)
    q = params.get("q", "")
    if len(q) > 2000:
        raise ApiError(422, "Some parameters are not valid.", {"q": ["At most 2,000 characters."]})
    task_ref = params.get("task_ref", "")
    arm = arm_for(scope, task_ref)
    embedding, metric = _query_embedding(params, scope)

    def ranked_answer():
        version = read_version(params)
        if arm == HOLDOUT:
            return version, []
        return version, cached_retrieve_released(
            version,
            scopes=selectors.retrievable_scopes(scope, token.scopes),
            q=q,
            k=k,
            min_confidence=min_confidence,
            kinds=RULES_KINDS if arm == RULES_ONLY else None,
            embedding=embedding,
            metric=metric,
            min_trust=min_trust,
        )

    # On the replica when it is up and current, else on the primary; from the cache when asked before.
    (version, ranked), request.memory_read_from = read_for_retrieval(ranked_answer)
    # One moment for the answer's confidences: its entries and its context block say the same numbers.
    moment = clock.now()
    included, context = build_context(releases.as_served(ranked), budget, moment)
    retrieval = record_retrieval(
        token=token, scope=scope, query=q, task_ref=task_ref, entries=included, memory_version=version, arm=arm
    )
    return 200, {
        "retrieval_id": str(retrieval.pk),
        "memory_version": version,
        "arm": arm,
        "scope": scope,
        "min_confidence": min_confidence,
        "min_trust": trust.name(min_trust),
        "metric": metric if embedding is not None else None,
        "entries": _answered_entries(ranked, included, moment, embedding is not None),
        "context": context,
    }


def _answered_entries(ranked, included, moment, with_distance: bool) -> list[dict]:
    """Each entry the context block included, as entry_json shows it with its score (and its distance to the
    query's embedding when the query had one), in the block's order."""
    of = {r.entry.pk: r for r in ranked}
    answered = []
    for entry in included:
        shown = entry_json(entry, at=moment)
        r = of[shown["id"]]
        shown["score"] = round(r.score, 4)
        if with_distance:
            shown["distance"] = _rounded(r.distance)
        answered.append(shown)
    return answered


def _min_trust(params) -> int:
    """The lowest provenance trust level asked for (by name); untrusted, every level, by default."""
    raw = params.get("min_trust")
    if raw in (None, ""):
        return trust.Trust.UNTRUSTED
    try:
        return trust.parse(raw)
    except ValueError as exc:
        raise ApiError(422, "Some parameters are not valid.", {"min_trust": [str(exc)]}) from None


def _query_embedding(params, scope: str) -> tuple[list[float] | None, str]:
    """The query's embedding (a JSON list in the POST body; numbers joined by commas in a query string) and
    its metric; 422 naming the field when either is not valid, or when the embedding's dimension is not
    the one of `scope`'s embeddings (it could match nothing: an empty answer would look like no memory)."""
    raw = params.get("embedding")
    if isinstance(raw, str):
        try:
            raw = [float(v) for v in raw.split(",")] if raw.strip() else None
        except ValueError:
            raise ApiError(
                422, "Some parameters are not valid.", {"embedding": ["Numbers joined by commas."]}
            ) from None
    try:
        embedding = vectors.clean_embedding(raw)
        metric = vectors.clean_metric(params.get("metric"))
    except ValidationError as exc:
        raise ApiError(422, "Some parameters are not valid.", exc.message_dict) from None
    if embedding is not None and (dimensions := selectors.embedding_dimensions(scope)) not in (None, len(embedding)):
        raise ApiError(
            422,
            "Some parameters are not valid.",
            {"embedding": [f"The embeddings of {scope} have {dimensions} numbers; this one has {len(embedding)}."]},
        )
    return embedding, metric


def _rounded(distance: float | None) -> float | None:
    return None if distance is None else round(distance, 6)


EVALUATION_DAYS = (7, 30, 90)


@api_view("GET")
def evaluation(request, token):
    """Is memory helping under `scope`: the learning dashboard's figures for the token's scopes."""
    if not request.GET.get("scope"):
        raise ApiError(
            422, "Some parameters are not valid.", {"scope": ["A scope prefix this token reads, e.g. acme."]}
        )
    scope = readable_scope(token, request.GET["scope"])
    days = query_int(request.GET, "days", 30, 7, 90)
    if days not in EVALUATION_DAYS:
        raise ApiError(422, "Some parameters are not valid.", {"days": ["7, 30 or 90."]})
    return 200, learning_report(prefixes=list(token.scopes), focus=scope, days=days).as_json()


@api_view("POST", body=True)
def feedback(request, token, body):
    _refuse_unknown(body, FEEDBACK_KEYS)
    if not isinstance(body.get("retrieval_id"), str):
        raise ValidationError({"retrieval_id": ["The retrieval_id a /api/v1/memory answer gave."]})
    try:
        result = record_feedback(
            token=token,
            retrieval_id=body["retrieval_id"],
            outcome=body.get("outcome"),
            utility=body.get("utility"),
            used=body.get("used"),
        )
    except Retrieval.DoesNotExist:
        raise NotFound("No such retrieval for this token.") from None
    if not result.recorded:
        return 200, {
            "recorded": False,
            "message": "Feedback for this retrieval was already recorded; nothing changed.",
            "outcome": result.feedback.outcome,
            "arm": result.feedback.retrieval.arm,
            "entries": [],
        }
    return 200, {
        "recorded": True,
        "outcome": result.feedback.outcome,
        "arm": result.feedback.retrieval.arm,
        "entries": result.changes,
    }


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
    return 201, {"entry_id": entry.pk, "evidence": evidence_json(selectors.evidence_as_sent(entry, evidence))}


@api_view("GET")
def entry_detail(request, token, entry_id):
    entry = _entry_for_token(token, entry_id)
    return 200, {
        **entry_json(entry, full=True),
        "trust_why": trust_why(entry),
        "evidence": [evidence_json(e) for e in selectors.entry_evidence_for_token(entry, limit=API_HISTORY_LIMIT)],
        "events": [event_json(e) for e in selectors.entry_events_for_token(token, entry, limit=API_HISTORY_LIMIT)],
    }


@csrf_exempt
def unknown_endpoint(request):
    return error_response(404, f"No such endpoint: {request.path}. The endpoints are listed at /api/v1/docs.")


@api_view("GET")
def export(request, token):
    """The published version (or `version=N`) as the files coding agents load: MEMORY.md, the topic files
    and skills/<name>/SKILL.md, of the token's scopes only (under `scope` when given)."""
    # `scope=` with no value is not "every scope": that is the parameter left out; refuse it as any bad scope.
    scope = readable_scope(token, request.GET["scope"]) if "scope" in request.GET else ""
    number = read_version(request.GET)
    if not number:
        raise NotFound("No memory version is published yet.")
    version = releases.version_by_number(number)
    files = releases.export_of(version, prefixes=list(token.scopes), scope=scope)
    return 200, {"memory_version": number, "scope": scope, "files": files}


FORGET_KEYS = frozenset({"entry_id", "text", "scope", "reason"})


@api_view("POST", body=True)
def forget_requests(request, token, body):
    """A user asked the agent to forget a lesson: an entry of the token's scopes (`entry_id`), or the
    lessons matching `text` in `scope`, with the user's `reason`. A lead decides in the Forget queue."""
    _refuse_unknown(body, FORGET_KEYS)
    try:
        filed = file_forget_request(
            entry_id=body.get("entry_id"),
            text=body.get("text", ""),
            scope=body.get("scope", ""),
            reason=body.get("reason"),
            token=token,
        )
    except Entry.DoesNotExist:
        raise NotFound("No such entry in this token's scopes.") from None
    return 201, {"id": filed.pk, "state": filed.state, "entry_id": filed.entry_id, "scope": filed.scope}


MEMORY_TEST_RUN_KEYS = frozenset({"scope", "version"})


@api_view("POST", body=True)
def memory_tests_run(request, token, body):
    """Run the active memory tests of the token's scopes (under `scope` when given) on the published version
    (or `version`), as a publish runs them; each result is recorded as an Event of its test."""
    _refuse_unknown(body, MEMORY_TEST_RUN_KEYS)
    params = _as_query_parameters(body)
    scope = readable_scope(token, params["scope"]) if "scope" in params else ""
    version = read_version(params)
    results = run_memory_tests(actor_label=token.label, scope=scope, prefixes=list(token.scopes), version=version)
    failed = sum(1 for r in results if not r.passed)
    return 200, {
        "memory_version": version,
        "passed": len(results) - failed,
        "failed": failed,
        "results": [r.as_json() for r in results],
    }
