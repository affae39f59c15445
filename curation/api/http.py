"""What every agent API call goes through before its handler: the bearer token, the rate limit, the
body's size, type and JSON, and the translation of refusals into 4xx answers with clear messages."""

from __future__ import annotations

import json
import logging
import time
from functools import wraps

from django.core.cache import cache
from django.core.exceptions import DisallowedHost, PermissionDenied, ValidationError
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from curation.rules import access, clock
from curation.rules.config import API_BAD_TOKEN_LIMIT, API_MAX_BODY_BYTES, API_RATE_LIMIT
from curation.infra.client_address import client_address
from curation.infra import redis
from curation.infra.db_router import REPLICA
from curation.models import AgentToken, MemoryVersion
from curation.selectors import read_cache, releases
from curation.services import idempotency
from curation.services.errors import Forgotten
from curation.rules.storable_text import unstorable_fields

log = logging.getLogger("curation.api")


class ApiError(Exception):
    def __init__(self, status: int, message: str, errors: dict | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.errors, self.headers = status, message, errors, headers or {}


class NotFound(ApiError):
    def __init__(self, what: str = "No such item in this token's scopes."):
        super().__init__(404, what)


def error_response(status: int, message: str, errors: dict | None = None, headers: dict | None = None):
    body = {"error": message}
    if errors:
        body["errors"] = errors
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _authenticate(request) -> AgentToken:
    """The bearer token's check, and the rate limit's count of this request for it. When this process keeps
    a copy of the token, its id is taken from the copy and the count goes to Redis in the same round trip as
    the read cache's generation (read_cache.read_generation_with): the token is then checked as ever (a
    revoke counts at once, an unknown key is counted as a bad one), and counted apart only when the token
    proves to be another than the copy's."""
    key = _bearer_key(request)
    limit, now = API_RATE_LIMIT.value, time.time()
    guess = read_cache.kept_token_id(key) if limit else None
    counted = None
    if guess is not None:
        name = redis.cache_key(_window_key(_rate_key(guess), now))
        counted = read_cache.read_generation_with(*_count_commands(name))
    token = _token(request, key)
    if counted is not None and token.pk == guess:
        _refuse_past(limit, counted[0], RATE_MESSAGE, now)
    else:
        _check_rate(token)
    return token


def _bearer_key(request) -> str:
    header = request.META.get("HTTP_AUTHORIZATION", "")  # request.headers would build a dict of every header
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(
            401,
            "Send the agent token as 'Authorization: Bearer <token>'.",
            headers={"WWW-Authenticate": 'Bearer realm="memoryadmin"'},
        )
    return key.strip()


def _token(request, key: str) -> AgentToken:
    now = clock.wall()
    token = read_cache.token(key, now)
    if token is None:
        _check_bad_token_rate(request)
        raise ApiError(
            401,
            "This token is unknown, revoked or expired.",
            headers={"WWW-Authenticate": 'Bearer realm="memoryadmin", error="invalid_token"'},
        )
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)  # at most once a minute per token
        token.last_used_at = now  # the process's copy too, or it would write on every request
    return token


# The token /mcp's gate accepted for this request (admit_to_mcp), which its tools' API calls carry in their
# WSGI environ: a key no HTTP request can set (a header arrives as HTTP_*).
ADMITTED_TOKEN = "memoryadmin.agent_token"


def admit_to_mcp(environ) -> AgentToken | HttpResponse:
    """/mcp's door, run once per MCP request in Django's thread pool: the API's own token check and rate
    limit for the caller (its address from `environ`, as the API reads it: bad tokens are counted per
    caller), and Django's Host check. The accepted token, or the refusal to answer as is."""
    close_old_connections()
    try:
        request = WSGIRequest(environ)
        request.get_host()  # ALLOWED_HOSTS, as on every Django request
        with read_cache.one_generation():
            return _authenticate(request)
    except DisallowedHost:
        return error_response(400, "This host is not served here.")
    except ApiError as exc:
        return error_response(exc.status, exc.message, exc.errors, exc.headers)
    finally:
        close_old_connections()


RATE_MESSAGE = "Rate limit of {limit} requests a minute reached; retry in {retry} s."


def _rate_key(token_id: int) -> str:
    return f"api-rate:{token_id}"


def _check_rate(token: AgentToken) -> None:
    """A fixed one-minute window per token, counted in the cache (Redis in production)."""
    _limit_per_minute(_rate_key(token.pk), API_RATE_LIMIT.value, RATE_MESSAGE)


def _check_bad_token_rate(request) -> None:
    """Guessing tokens is throttled per client address; requests with a good token are never held back."""
    _limit_per_minute(
        f"api-bad-token:{client_address(request)}",
        API_BAD_TOKEN_LIMIT.value,
        "Too many requests with an unknown token from this address ({limit} a minute); retry in {retry} s.",
    )


def _window_key(key: str, now: float) -> str:
    """`key`'s counter for the one-minute window `now` falls in."""
    return f"{key}:{int(now // 60)}"


def _limit_per_minute(key: str, limit: int, message: str) -> None:
    if not limit:
        return
    now = time.time()
    _refuse_past(limit, _count_request(_window_key(key, now)), message, now)


def _refuse_past(limit: int, count: int, message: str, now: float) -> None:
    """429 when `count` (this window's, this request's included) is past `limit`."""
    if count > limit:
        retry_after = max(1, int((int(now // 60) + 1) * 60 - now) + 1)
        raise ApiError(429, message.format(limit=limit, retry=retry_after), headers={"Retry-After": str(retry_after)})


def _count_commands(full_key: str) -> tuple[tuple, tuple]:
    """A window's count in Redis: INCR, and EXPIRE once (the window's counter outlives its minute a little,
    never forever); the INCR's reply is the count."""
    return ("INCR", full_key), ("EXPIRE", full_key, 90, "NX")


def _count_request(key: str) -> int:
    """This window's count after this request. On Redis one round trip (INCR, and EXPIRE once), where the
    cache API would take two; the cache's key prefix is kept, so its keys stay apart from others'."""
    client = redis.cache_client()
    if client is not None:
        return redis.one_trip(client, *_count_commands(redis.cache_key(key)))[0]
    cache.add(key, 0, timeout=90)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=90)
        return 1


def _json_body(request) -> dict:
    limit = API_MAX_BODY_BYTES.value
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise ApiError(400, "Content-Length is not a number.") from None
    if length > limit:
        raise ApiError(413, f"The body is {length} bytes; at most {limit} bytes are accepted.")
    content_type = request.content_type or ""
    if content_type != "application/json":
        raise ApiError(415, f"Send JSON with 'Content-Type: application/json' (got {content_type or 'none'!r}).")
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise ApiError(413, f"The body is over {limit} bytes.")
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "The body is not UTF-8.") from None
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}.") from None
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be a JSON object.")
    if errors := unstorable_fields(body):
        raise ApiError(422, "Some fields are not valid.", errors)
    return body


def validation_errors(exc: ValidationError) -> dict:
    if hasattr(exc, "error_dict"):
        return {field: list(messages) for field, messages in exc.message_dict.items()}
    return {"_": exc.messages}


def api_view(*methods: str, body: bool = False, idempotent: bool = False):
    """An agent API handler: `handler(request, token, [body,] **kwargs)` returns (status, data). An
    idempotent one (it takes a body) answers a request with an `Idempotency-Key` header once: a retry
    with the key gets the first answer again, marked `Idempotent-Replayed: true`."""

    def decorator(handler):
        @csrf_exempt
        @wraps(handler)
        def view(request, *args, **kwargs):
            with read_cache.one_generation():
                return _answer(request, *args, **kwargs)

        def _answer(request, *args, **kwargs):
            try:
                if request.method not in methods:
                    raise ApiError(405, f"Use {' or '.join(methods)}.", headers={"Allow": ", ".join(methods)})
                token = request.META.get(ADMITTED_TOKEN)
                if token is None:  # else /mcp's gate checked it and counted this request
                    token = _authenticate(request)
                request.agent_token = token
                if body:
                    kwargs["body"] = _json_body(request)
                key = request.headers.get("Idempotency-Key") if idempotent else None
                if key is None:
                    status, data = handler(request, token, *args, **kwargs)
                    replayed = False
                else:
                    answer = idempotency.answer_once(
                        token=token,
                        key=idempotency.clean_key(key),
                        digest=idempotency.request_hash(request.path, kwargs["body"]),
                        produce=lambda: handler(request, token, *args, **kwargs),
                    )
                    status, data, replayed = answer.status, answer.data, answer.replayed
            except ApiError as exc:
                return error_response(exc.status, exc.message, exc.errors, exc.headers)
            except Forgotten as exc:  # the request and its day, never the forgotten text
                response = JsonResponse(exc.as_json(), status=409)
                response["Cache-Control"] = "no-store"
                return response
            except ValidationError as exc:
                return error_response(422, "Some fields are not valid.", validation_errors(exc))
            except PermissionDenied as exc:
                return error_response(403, str(exc) or "This token may not do that.")
            response = JsonResponse(data, status=status, json_dumps_params={"ensure_ascii": False})
            response["Cache-Control"] = "no-store"  # an agent's memory is for that agent only
            if replayed:
                response["Idempotent-Replayed"] = "true"
            if read_from := getattr(request, "memory_read_from", None):  # which server answered a retrieval
                response["Memory-Read-From"] = "replica" if read_from == REPLICA else "primary"
            return response

        return view

    return decorator


def readable_scope(token: AgentToken, raw: str) -> str:
    """The scope a read asks for, cleaned: 422 when it is not a scope, 403 when the token does not cover it."""
    try:
        scope = access.clean_scope(raw)
    except ValidationError as exc:
        raise ApiError(422, "Some parameters are not valid.", {"scope": exc.messages}) from None
    if not access.token_covers(token, scope):
        raise PermissionDenied(f"This token may not read scope {scope!r}.")
    return scope


def _query_number(params, name: str, default, low, high, parse, kind: str):
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        number = parse(value)
    except ValueError:
        raise ApiError(422, "Some parameters are not valid.", {name: [kind]}) from None
    if not low <= number <= high:  # also refuses nan
        raise ApiError(422, "Some parameters are not valid.", {name: [f"From {low} to {high}."]})
    return number


def query_int(params, name: str, default: int, low: int, high: int) -> int:
    """`params`: the query string (request.GET), or a JSON body read as one."""
    return _query_number(params, name, default, low, high, int, "A whole number.")


def query_float(params, name: str, default: float, low: float, high: float) -> float:
    return _query_number(params, name, default, low, high, float, "A number.")


# The parameters of a retrieval or a memory test run that are numbers; the others are text.
NUMBER_PARAMETERS = frozenset({"k", "min_confidence", "budget_chars", "version"})


def read_version(params) -> int:
    """The memory version an answer reads: `version=N` pins one (an agent keeps its answers reproducible
    for a whole task), else the published one. 404 for a number never published."""
    if params.get("version") in (None, ""):
        return read_cache.published_number()
    number = query_int(params, "version", 1, 1, 2**31 - 1)
    try:
        return releases.version_by_number(number).number
    except MemoryVersion.DoesNotExist:
        raise NotFound(f"No memory version {number}.") from None
