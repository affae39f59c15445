"""Where else a lesson that is to be forgotten is quoted: the rows its forget card lists under "Also found
in", for the lead to tick. The purge rewrites exactly the ticked ones (and the forgotten entries' own rows),
never a row found by searching at purge time, so nothing the lead did not see is touched.

Matched by the lesson's whole texts (its trigger, content, boundary, recheck condition, its evidence
excerpts, a text request's text: forgetting.quoted_texts), never by a keyword or a condition, case
insensitively, a bounded number per kind, and only in rows the lead may read."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.db.models import Q

from curation.rules import access
from curation.rules.forgetting import quoted_texts
from curation.models import Event, Evidence, ForgetRequest, MemoryVersion, Retrieval, RetrievedEntry

QUOTES_PER_KIND = 20


@dataclass(frozen=True)
class Quote:
    kind: str  # one of KINDS
    pk: str
    where: str  # what the card says, without the text

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.pk}"


KINDS = ("evidence", "event", "retrieval", "request", "version")


def lesson_texts(request: ForgetRequest, entries) -> list[str]:
    """The texts of what the request forgets: the entries' texts and evidence excerpts, its own text."""
    return lesson_texts_many([(request, list(entries))])[request.pk]


def lesson_texts_many(pairs) -> dict[int, list[str]]:
    """lesson_texts of many (request, entries) pairs: the evidence excerpts in one query."""
    ids = {e.pk for _, entries in pairs for e in entries}
    excerpts: dict[int, list[str]] = {}
    for entry_id, excerpt in (
        Evidence.objects.filter(entry_id__in=ids).values_list("entry_id", "excerpt") if ids else ()
    ):
        excerpts.setdefault(entry_id, []).append(excerpt)
    found = {}
    for request, entries in pairs:
        texts = [request.match_text]
        for e in entries:
            texts += [e.trigger, e.content, e.boundary, e.recheck_when, *excerpts.get(e.pk, ())]
        found[request.pk] = quoted_texts(texts)
    return found


def _containing(fields, texts) -> Q:
    return reduce(or_, (Q(**{f"{field}__icontains": t}) for field in fields for t in texts))


def _quotes(text: str, texts: list[str]) -> bool:
    folded = text.casefold()
    return any(t.casefold() in folded for t in texts)


def quotes_of(user, request: ForgetRequest, entries, texts: list[str] | None = None) -> list[Quote]:
    """The rows beyond the forgotten `entries`' own that quote their text, those `user` may read."""
    return quotes_of_many(user, [(request, list(entries))], {request.pk: texts} if texts is not None else None)[
        request.pk
    ]


def quotes_of_many(user, pairs, texts: dict[int, list[str]] | None = None) -> dict[int, list[Quote]]:
    """quotes_of for many (request, entries) pairs (a page of the Forget queue): one query per kind of row
    for all of them, each row then given to the requests whose text it quotes."""
    texts = lesson_texts_many(pairs) if texts is None else texts
    found: dict[int, list[Quote]] = {request.pk: [] for request, _ in pairs}
    every = sorted({t for ts in texts.values() for t in ts})
    if not every:
        return found
    own = {request.pk: {e.pk for e in entries} for request, entries in pairs}
    bound = QUOTES_PER_KIND * len(pairs)
    prefixes = access.user_scope_prefixes(user)

    def give(kind: str, pk, where: str, values, *, owners=frozenset(), request_pk=None) -> None:
        """Offer the row to each request whose text it quotes, unless it is that request's own (it belongs
        to a forgotten entry, `owners`, or is the request itself), at most QUOTES_PER_KIND of a kind each."""
        for request, _ in pairs:
            if (
                request_pk != request.pk
                and not owners & own[request.pk]
                and any(_quotes(v or "", texts[request.pk]) for v in values)
                and sum(q.kind == kind for q in found[request.pk]) < QUOTES_PER_KIND
            ):
                found[request.pk].append(Quote(kind, str(pk), where))

    for pk, entry_id, excerpt, task_ref in (
        Evidence.objects.filter(_containing(("excerpt", "task_ref"), every))
        .filter(access.scope_q(prefixes, "entry__scope"))
        .order_by("id")
        .values_list("pk", "entry_id", "excerpt", "task_ref")[:bound]
    ):
        give("evidence", pk, f"evidence of entry #{entry_id}", (excerpt, task_ref), owners={entry_id})
    for pk, entry_id, action, reason in (
        Event.objects.filter(_containing(("reason",), every), entry__isnull=False)
        .filter(access.scope_q(prefixes, "entry__scope"))
        .order_by("id")
        .values_list("pk", "entry_id", "action", "reason")[:bound]
    ):
        give("event", pk, f"a note on entry #{entry_id} ({action.replace('_', ' ')})", (reason,), owners={entry_id})
    retrievals = list(
        Retrieval.objects.filter(_containing(("query", "task_ref"), every))
        .filter(access.scope_q(prefixes, "scope"))
        .order_by("created_at", "id")
        .values_list("pk", "token__name", "created_at", "query", "task_ref")[:bound]
    )
    returned: dict = {}  # a retrieval that returned a forgotten entry is that entry's own (its query goes whole)
    if retrievals:
        for retrieval_id, entry_id in RetrievedEntry.objects.filter(
            retrieval_id__in=[r[0] for r in retrievals]
        ).values_list("retrieval_id", "entry_id"):
            returned.setdefault(retrieval_id, set()).add(entry_id)
    for pk, name, at, query, task_ref in retrievals:
        give(
            "retrieval",
            pk,
            f"a query by {name} on {at:%Y-%m-%d %H:%M}",
            (query, task_ref),
            owners=returned.get(pk, set()),
        )
    for pk, reason in (
        ForgetRequest.objects.filter(_containing(("reason",), every))
        .filter(access.scope_q(prefixes, "scope"))
        .order_by("id")
        .values_list("pk", "reason")[:bound]
    ):
        give("request", pk, f"the reason of forget request #{pk}", (reason,), request_pk=pk)
    if prefixes is None:  # a release summary may be about any scope: only a lead of every scope rewrites one
        for pk, number, summary in (
            MemoryVersion.objects.filter(_containing(("summary",), every))
            .order_by("number")
            .values_list("pk", "number", "summary")[:bound]
        ):
            give("version", pk, f"the summary of version {number}", (summary,))
    return found
