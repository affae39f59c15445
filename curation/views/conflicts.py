"""The conflicts queue: two entries side by side, and the four ways to resolve them.

Like the candidates queue: with htmx a resolution answers with the card's fragment (and the queue count,
out of band); without JavaScript the same form posts and redirects back. Bad input answers 422 and a
stale decision 409, both with the card and its message (base.html lets htmx swap them)."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from curation.selectors import review as selectors_review
from curation.models import Conflict, Entry, Kind, Signal
from curation.permissions import READ, REVIEW, require
from curation.selectors import BadCursor
from curation.selectors.review import ConflictFilters
from curation.services import InvalidTransition, StaleDecision
from curation.services import conflicts as service

DETECTORS = ("ingest", "sweep", "merge")


def parse_filters(params) -> ConflictFilters:
    errors = {}
    kind = params.get("kind", "")
    signal = params.get("signal", "")
    detected_by = params.get("detected_by", "")
    if kind and kind not in Kind.values:
        errors["kind"] = f"one of {', '.join(Kind.values)}"
    if signal and signal not in Signal.values:
        errors["signal"] = f"one of {', '.join(Signal.values)}"
    if detected_by and detected_by not in DETECTORS:
        errors["detected_by"] = f"one of {', '.join(DETECTORS)}"
    max_confidence = older_than_days = None
    raw = (params.get("max_confidence") or "").strip()
    if raw:
        try:
            max_confidence = float(raw)
            if not 0 <= max_confidence <= 1:
                raise ValueError
        except ValueError:
            errors["max_confidence"] = "a number from 0 to 1"
    raw = (params.get("older_than_days") or "").strip()
    if raw:
        if raw.isdigit() and int(raw) <= 3650:
            older_than_days = int(raw)
        else:
            errors["older_than_days"] = "a whole number of days (at most 3650)"
    if errors:
        raise ValidationError({k: [v] for k, v in errors.items()})
    return ConflictFilters(
        scope=(params.get("scope") or "").strip()[:255], kind=kind, signal=signal, detected_by=detected_by,
        max_confidence=max_confidence, older_than_days=older_than_days,
    )


def _base_context(request):
    return {"can_review": request.user.has_perm(REVIEW), "kinds": Kind.choices, "signals": Signal.choices,
            "detectors": DETECTORS}


@require_GET
@require(READ)
@vary_on_headers("HX-Request")
def queue(request):
    context = _base_context(request)
    filters = ConflictFilters()
    try:
        filters = parse_filters(request.GET)
        page = selectors_review.conflict_queue(request.user, filters, cursor=request.GET.get("after", ""))
    except ValidationError as exc:
        context.update(filter_errors=exc.message_dict, filters=filters, page=None)
        return render(request, "curation/conflicts.html", context, status=400)
    except BadCursor as exc:
        context.update(filter_errors={"after": [str(exc)]}, filters=filters, page=None)
        return render(request, "curation/conflicts.html", context, status=400)
    query = request.GET.copy()
    query.pop("after", None)
    context.update(page=page, filters=filters, filter_query=query.urlencode())
    if request.htmx and not request.htmx.boosted and request.htmx.target == "queue":
        return render(request, "curation/partials/conflict_list.html", context)
    return render(request, "curation/conflicts.html", context)


@require_GET
@require(READ)
def card(request, conflict_id):
    """One conflict on its own page: where a no-JavaScript reviewer lands after a refused decision."""
    return _card_response(request, conflict_id)


def _card_response(request, conflict_id, *, status=200, errors=None, stale=None, form=None, open_panel=""):
    try:
        conflict = selectors_review.conflict_card(request.user, conflict_id)
    except Conflict.DoesNotExist:
        raise Http404("No such conflict in your scopes.") from None
    context = {
        **_base_context(request), "conflict": conflict, "errors": errors or {}, "stale": stale,
        "form": form or {}, "open_panel": open_panel,
    }
    template = "curation/partials/conflict_card.html" if request.htmx else "curation/conflict_page.html"
    return render(request, template, context, status=status)


def _queue_url(request) -> str:
    """Back to where the reviewer was: the queue (with its filters) or a card page, never an action URL."""
    back = request.POST.get("next", "")
    if back.startswith("/review/conflicts/") and not back.startswith("//"):
        try:
            if resolve(back.split("?")[0]).url_name in ("conflicts", "conflict-card"):
                return back
        except Resolver404:
            pass
    return reverse("curation:conflicts")


def _versions(request) -> dict:
    try:
        return {"version_a": int(request.POST.get("version_a", "")), "version_b": int(request.POST.get("version_b", ""))}
    except ValueError:
        raise ValidationError({"version": ["The form is missing the entries' versions; reload the queue."]}) from None


def _decide(request, conflict_id, verb, call, *, panel="", form=None):
    """Run one resolution and answer: the decided card, or the card again with what went wrong."""
    try:
        result = call(_versions(request))
    except (Conflict.DoesNotExist, Entry.DoesNotExist):
        raise Http404("No such conflict in your scopes.") from None
    except (StaleDecision, InvalidTransition) as exc:
        return _card_response(request, conflict_id, status=409, stale=exc)
    except ValidationError as exc:
        return _card_response(request, conflict_id, status=422, errors=exc.message_dict, form=form or {}, open_panel=panel)
    if not request.htmx:
        messages.success(request, f"Conflict #{conflict_id}: {verb}.")
        return redirect(_queue_url(request))
    try:
        filters = parse_filters(request.POST)
    except ValidationError:
        filters = ConflictFilters()
    count, capped = selectors_review.conflict_count(request.user, filters)
    page = selectors_review.ConflictPage([], count=count, count_is_capped=capped)
    return render(request, "curation/partials/conflict_decided.html",
                  {"result": result, "conflict": result.conflict, "verb": verb, "page": page, "oob": True})


@require_POST
@require(REVIEW)
def keep(request, conflict_id):
    raw = request.POST.get("keep", "")
    if not raw.isdigit():
        return _card_response(request, conflict_id, status=422, errors={"keep": ["Say which entry to keep."]})
    kept = int(raw)
    return _decide(
        request, conflict_id, f"kept #{kept}, the other is superseded",
        lambda versions: service.keep_entry(
            conflict_id, actor=request.user, keep=kept, reason=request.POST.get("reason", ""), **versions
        ),
    )


@require_POST
@require(REVIEW)
def split(request, conflict_id):
    changes = {
        side: {f: request.POST[f"{side}_{f}"] for f in service.SPLIT_FIELDS if f"{side}_{f}" in request.POST}
        for side in ("a", "b")
    }
    form = {f"{side}_{f}": v for side, fields in changes.items() for f, v in fields.items()}
    return _decide(
        request, conflict_id, "split, both entries narrowed",
        lambda versions: service.split_conflict(
            conflict_id, actor=request.user, changes_a=changes["a"], changes_b=changes["b"],
            reason=request.POST.get("reason", ""), **versions,
        ),
        panel="split", form=form,
    )


@require_POST
@require(REVIEW)
def merge(request, conflict_id):
    # Prefixed: the queue's filters (scope, kind) are posted along with every action.
    data = {f: request.POST.get(f"merge_{f}", "") for f in service.MERGE_FIELDS}
    return _decide(
        request, conflict_id, "merged into a new entry",
        lambda versions: service.merge_conflict(
            conflict_id, actor=request.user, data=data, reason=request.POST.get("reason", ""), **versions
        ),
        panel="merge", form={f"merge_{k}": v for k, v in data.items()},
    )


@require_POST
@require(REVIEW)
def dismiss(request, conflict_id):
    return _decide(
        request, conflict_id, "dismissed, never raised again",
        lambda versions: service.dismiss_conflict(
            conflict_id, actor=request.user, reason=request.POST.get("reason", ""), **versions
        ),
    )


def _bulk_items(values) -> list[tuple[int, int, int]]:
    items = []
    for value in values:
        parts = value.split(":")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ValidationError({"selected": ["A selected conflict is malformed; reload the queue."]})
        items.append(tuple(int(p) for p in parts))
    if not items:
        raise ValidationError({"selected": ["Select at least one conflict (x, or the checkbox on the card)."]})
    if len(items) > 200:
        raise ValidationError({"selected": ["At most 200 conflicts at once."]})
    return items


@require_POST
@require(REVIEW)
def bulk(request):
    """Dismiss the selected conflicts: a plain form post, answered by a redirect with what happened."""
    try:
        items = _bulk_items(request.POST.getlist("selected"))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(_queue_url(request))
    outcomes = service.bulk_dismiss_conflicts(items, actor=request.user, reason=request.POST.get("reason", ""))
    refused = [o for o in outcomes if not o.ok]
    summary = f"Dismissed {len(outcomes) - len(refused)} of {len(outcomes)}."
    if refused:
        summary += " Not changed: " + "; ".join(f"#{o.conflict_id}: {o.message}" for o in refused)
    (messages.warning if refused else messages.success)(request, summary)
    return redirect(_queue_url(request))
