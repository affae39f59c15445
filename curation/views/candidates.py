"""The candidates queue. One view per action; each parses the form, calls one service and renders.

With htmx an action answers with the card's fragment (and the queue count, out of band); without
JavaScript the same form posts and redirects back to the queue. Bad input answers 422 and a stale
decision 409, both with the card and its message: htmx is configured (base.html) to swap them."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from curation import selectors, services
from curation.models import Entry, Kind, Signal
from curation.permissions import READ, REVIEW, require
from curation.selectors import BadCursor, QueueFilters
from curation.services import InvalidTransition, StaleDecision


def parse_filters(params) -> QueueFilters:
    """Queue filters from GET parameters (or the filters an action carries along)."""
    errors = {}

    def number(name):
        raw = (params.get(name) or "").strip()
        if not raw:
            return None
        try:
            value = float(raw)
        except ValueError:
            errors[name] = "a number from 0 to 1"
            return None
        if not 0 <= value <= 1:
            errors[name] = "a number from 0 to 1"
        return value

    kind = params.get("kind", "")
    signal = params.get("signal", "")
    reason = params.get("reason", "")
    if kind and kind not in Kind.values:
        errors["kind"] = f"one of {', '.join(Kind.values)}"
    if signal and signal not in Signal.values:
        errors["signal"] = f"one of {', '.join(Signal.values)}"
    if reason and reason not in ("new", "recheck"):
        errors["reason"] = "new or recheck"
    filters = QueueFilters(
        scope=(params.get("scope") or "").strip()[:255],
        kind=kind,
        signal=signal,
        reason=reason,
        min_confidence=number("min_confidence"),
        max_confidence=number("max_confidence"),
        q=(params.get("q") or "").strip()[:200],
        deferred=params.get("deferred") == "1",
    )
    if errors:
        raise ValidationError({k: [v] for k, v in errors.items()})
    return filters


def _base_context(request):
    return {
        "can_review": request.user.has_perm(REVIEW),
        "kinds": Kind.choices,
        "signals": Signal.choices,
    }


@require_GET
@require(READ)
@vary_on_headers("HX-Request")
def queue(request):
    return _render_queue(request, request.GET)


def _render_queue(request, params, *, status=200, bulk_errors=()):
    context = {**_base_context(request), "bulk_errors": bulk_errors}
    filters = QueueFilters()
    try:
        filters = parse_filters(params)
        page = selectors.candidate_queue(request.user, filters, cursor=params.get("after", ""))
    except ValidationError as exc:
        context.update(filter_errors=exc.message_dict, filters=filters, page=None)
        return render(request, "curation/candidates.html", context, status=400)
    except BadCursor as exc:
        context.update(filter_errors={"after": [str(exc)]}, filters=filters, page=None)
        return render(request, "curation/candidates.html", context, status=400)
    query = params.copy()
    query.pop("after", None)
    context.update(page=page, filters=filters, filter_query=query.urlencode())
    # Filtering and paging with htmx swap only the list; a full load (or a boosted one) gets the page.
    if request.htmx and not request.htmx.boosted and request.htmx.target == "queue":
        return render(request, "curation/partials/queue_list.html", context, status=status)
    return render(request, "curation/candidates.html", context, status=status)


@require_GET
@require(READ)
def card(request, entry_id):
    """One card on its own page: where a no-JavaScript reviewer lands after a refused decision."""
    return _card_response(request, entry_id)


def _card_response(request, entry_id, *, status=200, errors=None, conflict=None, form=None, open_panel=""):
    try:
        entry = selectors.queue_card(request.user, entry_id)
    except Entry.DoesNotExist:
        raise Http404("No such entry in your scopes.") from None
    context = {
        **_base_context(request),
        "entry": entry,
        "errors": errors or {},
        "conflict": conflict,
        "form": form or {},
        "open_panel": open_panel,
    }
    template = "curation/partials/card.html" if request.htmx else "curation/card_page.html"
    return render(request, template, context, status=status)


def _decided_response(request, entry, verb):
    if not request.htmx:
        messages.success(request, f"{verb.capitalize()} {entry.label}.")
        return redirect(_queue_url(request))
    try:
        filters = parse_filters(request.POST)
    except ValidationError:
        filters = QueueFilters()
    count, capped = selectors.queue_count(request.user, filters)
    page = selectors.QueuePage([], count=count, count_is_capped=capped)
    return render(
        request, "curation/partials/card_decided.html", {"entry": entry, "verb": verb, "page": page, "oob": True}
    )


def _queue_url(request) -> str:
    back = request.POST.get("next", "")
    if back.startswith("/review/candidates/") and not back.startswith("//"):
        return back
    return reverse("curation:candidates")


def _version(request) -> int:
    try:
        return int(request.POST.get("version", ""))
    except ValueError:
        raise ValidationError({"version": ["The form is missing the entry's version; reload the queue."]}) from None


def _decide(request, entry_id, verb, call, *, panel="", form=None):
    """Run one decision and answer: the decided card, or the card again with what went wrong."""
    try:
        entry = call(_version(request))
    except Entry.DoesNotExist:
        raise Http404("No such entry in your scopes.") from None
    except (StaleDecision, InvalidTransition) as exc:
        return _card_response(request, entry_id, status=409, conflict=exc)
    except ValidationError as exc:
        return _card_response(
            request, entry_id, status=422, errors=exc.message_dict, form=form or {}, open_panel=panel
        )
    return _decided_response(request, entry, verb)


@require_POST
@require(REVIEW)
def approve(request, entry_id):
    return _decide(
        request, entry_id, "approved",
        lambda version: services.approve_candidate(entry_id, actor=request.user, expected_version=version),
    )


@require_POST
@require(REVIEW)
def edit_approve(request, entry_id):
    changes = {f: request.POST.get(f, "") for f in services.candidates.EDITABLE_FIELDS if f in request.POST}
    return _decide(
        request, entry_id, "edited and approved",
        lambda version: services.edit_and_approve(
            entry_id, actor=request.user, expected_version=version, changes=changes,
            reason=request.POST.get("note", ""),
        ),
        panel="edit", form=changes,
    )


@require_POST
@require(REVIEW)
def reject(request, entry_id):
    reason = request.POST.get("reason", "")
    return _decide(
        request, entry_id, "rejected",
        lambda version: services.reject_candidate(entry_id, actor=request.user, expected_version=version, reason=reason),
        panel="reject", form={"reason": reason},
    )


@require_POST
@require(REVIEW)
def defer(request, entry_id):
    return _decide(
        request, entry_id, "deferred",
        lambda version: services.defer_candidate(
            entry_id, actor=request.user, expected_version=version, reason=request.POST.get("reason", "")
        ),
    )


@require_POST
@require(REVIEW)
def merge(request, entry_id):
    target = request.POST.get("target", "")
    return _decide(
        request, entry_id, f"merged into #{target}",
        lambda version: services.merge_into(
            entry_id, target_id=int(target) if target.isdigit() else None, actor=request.user,
            expected_version=version, reason=request.POST.get("note", ""),
        ),
    )


def _bulk_items(values) -> list[tuple[int, int]]:
    items = []
    for value in values:
        entry_id, _, version = value.partition(":")
        if not (entry_id.isdigit() and version.isdigit()):
            raise ValidationError({"selected": ["A selected card is malformed; reload the queue."]})
        items.append((int(entry_id), int(version)))
    if not items:
        raise ValidationError({"selected": ["Select at least one card (x, or the checkbox on the card)."]})
    if len(items) > 200:
        raise ValidationError({"selected": ["At most 200 cards at once."]})
    return items


@require_POST
@require(REVIEW)
def bulk(request):
    """Approve or reject the selected cards: a plain form post, answered by the queue page again."""
    action = request.POST.get("action", "")
    try:
        outcomes = services.bulk_decide(
            _bulk_items(request.POST.getlist("selected")), actor=request.user, action=action,
            reason=request.POST.get("reason", ""),
        )
    except ValidationError as exc:
        return _render_queue(request, request.GET, status=422, bulk_errors=exc.messages)
    done = sum(o.ok for o in outcomes)
    refused = [o for o in outcomes if not o.ok]
    summary = f"{action.capitalize()}d {done} of {len(outcomes)}."
    if refused:
        summary += " Not changed: " + "; ".join(f"#{o.entry_id}: {o.message}" for o in refused)
    (messages.warning if refused else messages.success)(request, summary)
    return redirect(_queue_url(request))
