"""Sync and async clients for the memoryadmin agent API (`/api/v1/`).

Each API call is written once, in `_Endpoints`, as a `Call` (method, path, body); `MemoryAdmin` sends it
with httpx.Client and `AsyncMemoryAdmin` with httpx.AsyncClient. Both retry a 429 or 503 (and a
connection that never opened) with backoff, waiting what `Retry-After` says when the server says it,
and send submissions with an `Idempotency-Key`, kept across the retries, so a retry never submits twice.
Memory search goes in a POST body: a query never travels in a URL."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from urllib.parse import quote
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import httpx

from .errors import MemoryAdminError, TransportError, error_for

__all__ = ["AsyncMemoryAdmin", "Call", "MemoryAdmin", "RetryPolicy"]

JSON = dict[str, Any]
Outcome = Literal["success", "failure"]
R = TypeVar("R")

RETRIED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class Call:
    """One API request, whichever client sends it."""

    method: Literal["GET", "POST"]
    path: str
    body: JSON | list | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a 429 or 503: exponential backoff with jitter, or the server's
    Retry-After when it gives one (capped at `max_wait`, beyond which the error is raised at once)."""

    attempts: int = 4  # tries in all, the first included
    backoff: float = 0.5  # seconds before the second try; doubled after each
    max_wait: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before try `attempt + 1`, or None to give up."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        return min(self.max_wait, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # absent, or an HTTP date: back off on our own schedule


def _answer(response: httpx.Response) -> JSON:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        raise error_for(response.status_code, body, _retry_after(response))
    if not isinstance(body, dict):
        raise MemoryAdminError(response.status_code, "The server did not answer JSON.")
    return body


def _headers(token: str, user_agent: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    return {**(extra or {}), "Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": user_agent}


def _request_kwargs(call: Call) -> dict[str, Any]:
    headers = {"Idempotency-Key": call.idempotency_key} if call.idempotency_key else {}
    kwargs: dict[str, Any] = {"headers": headers, "params": dict(call.params) or None}
    if call.body is not None:
        kwargs["json"] = call.body
    return kwargs


def _settle(
    retry: RetryPolicy, attempt: int, response: httpx.Response | httpx.TransportError
) -> tuple[JSON | None, float]:
    """After one try: (the answer, 0), or (None, seconds to wait before the next try); raises the error
    when there is nothing left to try. Only what the server surely did not act on is retried: a 429 or
    503, or a connection that never opened."""
    if isinstance(response, httpx.TransportError):
        unsent = isinstance(response, (httpx.ConnectError, httpx.ConnectTimeout))
        wait = retry.delay(attempt, None) if unsent else None
        if wait is None:
            raise TransportError(0, f"Could not reach the memoryadmin server: {type(response).__name__}.") from response
        return None, wait
    if response.status_code in RETRIED_STATUSES:
        wait = retry.delay(attempt, _retry_after(response))
        if wait is not None:
            return None, wait
    return _answer(response), 0.0


def _without_none(**values: Any) -> JSON:
    return {name: value for name, value in values.items() if value is not None}


class _Endpoints(Generic[R]):
    """Every agent API call, as the Call it sends; `_run` is the sync or async sending."""

    def _run(self, call: Call) -> R:
        raise NotImplementedError

    def token(self) -> R:
        """GET /api/v1/token: this token's label, scopes and expiry."""
        return self._run(Call("GET", "/api/v1/token"))

    def submit_candidate(
        self,
        *,
        scope: str,
        kind: str,
        trigger: str,
        content: str,
        signal: str | None = None,
        conditions: list[str] | None = None,
        boundary: str | None = None,
        recheck_when: str | None = None,
        review_by: str | None = None,
        confidence: float | None = None,
        source_task: str | None = None,
        evidence: list[JSON] | None = None,
        embedding: list[float] | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """POST /api/v1/candidates: one candidate lesson. Answers `{id, status, created, duplicate_of, ...}`;
        an exact duplicate adds its evidence to the existing entry (`created: false`). `embedding`: your own
        embedding of the lesson, for vector retrieval (one dimension per scope tree)."""
        body = _without_none(
            scope=scope,
            kind=kind,
            trigger=trigger,
            content=content,
            signal=signal,
            conditions=conditions,
            boundary=boundary,
            recheck_when=recheck_when,
            review_by=review_by,
            confidence=confidence,
            source_task=source_task,
            evidence=evidence,
            embedding=embedding,
        )
        return self._run(Call("POST", "/api/v1/candidates", body, idempotency_key=idempotency_key or str(uuid.uuid4())))

    def submit_candidates(self, candidates: Iterable[JSON], *, idempotency_key: str | None = None) -> R:
        """POST /api/v1/candidates/batch: many candidates, each answered in `results`."""
        return self._run(
            Call(
                "POST",
                "/api/v1/candidates/batch",
                {"candidates": list(candidates)},
                idempotency_key=idempotency_key or str(uuid.uuid4()),
            )
        )

    def search_memory(
        self,
        scope: str,
        q: str = "",
        *,
        k: int | None = None,
        min_confidence: float | None = None,
        budget_chars: int | None = None,
        task_ref: str | None = None,
        version: int | None = None,
        embedding: list[float] | None = None,
        metric: str | None = None,
        min_trust: str | None = None,
    ) -> R:
        """POST /api/v1/memory/search: the ranked entries of the scope (and the ancestors the token covers)
        and a `context` block for a prompt, from the published memory version (`memory_version` in the
        answer; pass it as `version` for the rest of a task to read the same memory throughout). Keep the
        `retrieval_id` to report the outcome. `arm` is "holdout" when the task is in the holdout that
        measures whether memory helps: no entries and an empty context (the same for every call with this
        `task_ref`); do the task without memory and report its outcome all the same. "rules-only": the
        task is served only what people wrote or agreed to (human corrections and preferences).
        With an `embedding` (`metric` l2 or cosine): nearest first, or fused with the words of `q`; each entry
        carries its `distance`. `min_trust` ("agent", "independent", "verified", "person") leaves out the
        lessons below that provenance trust level."""
        body = _without_none(
            scope=scope,
            q=q,
            k=k,
            min_confidence=min_confidence,
            budget_chars=budget_chars,
            task_ref=task_ref,
            version=version,
            embedding=embedding,
            metric=metric,
            min_trust=min_trust,
        )
        return self._run(Call("POST", "/api/v1/memory/search", body))

    def report_outcome(
        self, retrieval_id: str, outcome: Outcome, *, utility: float | None = None, used: list[int] | None = None
    ) -> R:
        """POST /api/v1/feedback: how the task that used a retrieval went. Once per retrieval.

        Pass `used`, the ids of the lessons the agent applied, whenever it knows them: only those are
        credited or charged with the outcome. Without it every lesson the retrieval returned gets an equal
        share, and a lesson the agent ignored is judged by a task it had no part in."""
        body = _without_none(retrieval_id=retrieval_id, outcome=outcome, utility=utility, used=used)
        return self._run(Call("POST", "/api/v1/feedback", body))

    def evaluation(self, scope: str, *, days: int | None = None) -> R:
        """GET /api/v1/evaluation: is memory helping under `scope`? Success per arm (memory, holdout) with
        95% intervals, the difference and a verdict over 7, 30 and 90 days, weekly rates, the lessons that
        help or hurt and the recurring failures over `days` (7, 30 or 90)."""
        params = {name: str(value) for name, value in _without_none(scope=scope, days=days).items()}
        return self._run(Call("GET", "/api/v1/evaluation", params=params))

    def export(self, scope: str | None = None, *, version: int | None = None) -> R:
        """GET /api/v1/export: the published version (or `version`) as the files coding agents load
        (`MEMORY.md`, the topic files, `skills/<name>/SKILL.md`), of the token's scopes, under `scope`.
        A read of memory, not a task: it records no retrieval."""
        params = {name: str(value) for name, value in _without_none(scope=scope, version=version).items()}
        return self._run(Call("GET", "/api/v1/export", params=params))

    def get_entry(self, entry_id: int) -> R:
        """GET /api/v1/entries/<id>: every field, the evidence and the history of one entry."""
        return self._run(Call("GET", f"/api/v1/entries/{int(entry_id)}"))

    def add_evidence(
        self,
        entry_id: int,
        *,
        kind: str,
        excerpt: str,
        signal: str | None = None,
        polarity: str | None = None,
        task_ref: str | None = None,
        observed_at: str | None = None,
        source: str | None = None,
        evaluator: str | None = None,
    ) -> R:
        """POST /api/v1/entries/<id>/evidence: a piece of evidence for (or against) an entry. `source` ("own",
        "verification", "relayed") is what kind of source it is; the server gives it its trust level."""
        body = _without_none(
            kind=kind,
            excerpt=excerpt,
            signal=signal,
            polarity=polarity,
            task_ref=task_ref,
            observed_at=observed_at,
            source=source,
            evaluator=evaluator,
        )
        return self._run(Call("POST", f"/api/v1/entries/{int(entry_id)}/evidence", body))

    def request_forget(
        self, *, reason: str, entry_id: int | None = None, text: str | None = None, scope: str | None = None
    ) -> R:
        """POST /api/v1/forget-requests: the user asked to forget a lesson, named by `entry_id` or by a `text`
        to match in `scope`. A lead decides; once approved, its text is purged and it is not learned again."""
        body = _without_none(entry_id=entry_id, text=text, scope=scope, reason=reason)
        return self._run(Call("POST", "/api/v1/forget-requests", body))

    def list_skills(self, scope: str | None = None, *, limit: int | None = None, after: str | None = None) -> R:
        """GET /api/v1/skills: approved skills of a scope (or of all the token's scopes), a page at a time
        (`next_after` names the next page's `after`)."""
        params = {name: str(value) for name, value in _without_none(scope=scope, limit=limit, after=after).items()}
        return self._run(Call("GET", "/api/v1/skills", params=params))

    def get_skill(self, slug: str) -> R:
        """GET /api/v1/skills/<name>: one skill in any state, with its `skill_md`."""
        return self._run(Call("GET", f"/api/v1/skills/{quote(slug, safe='')}"))

    def report_skill_trial(self, slug: str, *, outcome: Outcome, task_ref: str, notes: str | None = None) -> R:
        """POST /api/v1/skills/<name>/trials: a trial run of a nominated skill; once per task_ref."""
        body = _without_none(outcome=outcome, task_ref=task_ref, notes=notes)
        return self._run(Call("POST", f"/api/v1/skills/{quote(slug, safe='')}/trials", body))


class MemoryAdmin(_Endpoints[JSON]):
    """The blocking client. `MemoryAdmin(url, token)`; use it as a context manager or call `close()`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        user_agent: str = "memoryadmin-client",
    ):
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=_headers(token, user_agent, headers),
            timeout=timeout,
            transport=transport,
        )

    def _run(self, call: Call) -> JSON:
        attempt = 0
        while True:
            attempt += 1
            try:
                response: httpx.Response | httpx.TransportError = self._http.request(
                    call.method, call.path, **_request_kwargs(call)
                )
            except httpx.TransportError as exc:
                response = exc
            answer, wait = _settle(self.retry, attempt, response)
            if answer is not None:
                return answer
            time.sleep(wait)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMemoryAdmin(_Endpoints[Awaitable[JSON]]):
    """The asyncio client: the same calls as `MemoryAdmin`, awaited. `async with AsyncMemoryAdmin(...)`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        user_agent: str = "memoryadmin-client",
        send: Callable[[Call], Awaitable[httpx.Response]] | None = None,
    ):
        """`send`, for a server that answers the API in its own process: it answers each Call in place of
        an HTTP request (no HTTP client is made; `base_url`, `token`, `timeout`, `transport`, `headers`
        and `user_agent` are then the sender's business). The answer is read, refused or retried the same."""
        self.retry = retry or RetryPolicy()
        self._http = None
        if send is None:
            self._http = httpx.AsyncClient(
                base_url=base_url.rstrip("/"),
                headers=_headers(token, user_agent, headers),
                timeout=timeout,
                transport=transport,
            )
        self._send = send or self._over_http

    async def _over_http(self, call: Call) -> httpx.Response:
        return await self._http.request(call.method, call.path, **_request_kwargs(call))

    async def _run(self, call: Call) -> JSON:  # type: ignore[override]  # R is the awaitable
        attempt = 0
        while True:
            attempt += 1
            try:
                response: httpx.Response | httpx.TransportError = await self._send(call)
            except httpx.TransportError as exc:
                response = exc
            answer, wait = _settle(self.retry, attempt, response)
            if answer is not None:
                return answer
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryAdmin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
