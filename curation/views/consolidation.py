"""The consolidation queue: merge and supersede proposals made by the background sweep.

A reviewer accepts a proposal as is, accepts it after editing the merged text, or dismisses it. As in
the other queues: htmx answers with the card's fragment (and the count, out of band), a plain form
post redirects back; bad input answers 422, a stale decision 409, both with the card and its message."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from curation.selectors import review as selectors_review
from curation.models import ConsolidationProposal, Entry
from curation.permissions import READ, REVIEW, require
from curation.selectors import BadCursor
from curation.services import InvalidTransition, StaleDecision
from curation.services import consolidation as service


def _filters(params) -> dict:
    kind = params.get("kind", "")
    if kind and kind not in ConsolidationProposal.Kind.values:
        raise ValidationError({"kind": [f"one of {', '.join(ConsolidationProposal.Kind.values)}"]})
    return {"kind": kind, "scope": (params.get("scope") or "").strip()[:255]}


def _base_context(request):
    return {"can_review": request.user.has_perm(REVIEW), "kinds": ConsolidationProposal.Kind.choices}


@require_GET
@require(READ)
@vary_on_headers("HX-Request")
def queue(request):
    context = _base_context(request)
    filters = {"kind": "", "scope": ""}
    try:
        filters = _filters(request.GET)
        page = selectors_review.consolidation_queue(request.user, **filters, cursor=request.GET.get("after", ""))
    except ValidationError as exc:
        context.update(filter_errors=exc.message_dict, filters=filters, page=None)
        return render(request, "curation/consolidation.html", context, status=400)
    except BadCursor as exc:
        context.update(filter_errors={"after": [str(exc)]}, filters=filters, page=None)
        return render(request, "curation/consolidation.html", context, status=400)
    query = request.GET.copy()
    query.pop("after", None)
    context.update(page=page, filters=filters, filter_query=query.urlencode())
    if request.htmx and not request.htmx.boosted and request.htmx.target == "queue":
        return render(request, "curation/partials/proposal_list.html", context)
    return render(request, "curation/consolidation.html", context)


@require_GET
@require(READ)
def card(request, proposal_id):
    return _card_response(request, proposal_id)


def _card_response(request, proposal_id, *, status=200, errors=None, stale=None, form=None, open_panel=""):
    try:
        proposal = selectors_review.proposal_card(request.user, proposal_id)
    except ConsolidationProposal.DoesNotExist:
        raise Http404("No such proposal in your scopes.") from None
    context = {**_base_context(request), "proposal": proposal, "errors": errors or {}, "stale": stale,
               "form": form or {}, "open_panel": open_panel}
    template = "curation/partials/proposal_card.html" if request.htmx else "curation/proposal_page.html"
    return render(request, template, context, status=status)


def _queue_url(request) -> str:
    back = request.POST.get("next", "")
    if back.startswith("/review/consolidation/") and not back.startswith("//"):
        try:
            if resolve(back.split("?")[0]).url_name in ("consolidation", "proposal-card"):
                return back
        except Resolver404:
            pass
    return reverse("curation:consolidation")


def _decide(request, proposal_id, verb, call, *, panel="", form=None):
    try:
        outcome = call()
    except (ConsolidationProposal.DoesNotExist, Entry.DoesNotExist):
        raise Http404("No such proposal in your scopes.") from None
    except (StaleDecision, InvalidTransition) as exc:
        return _card_response(request, proposal_id, status=409, stale=exc)
    except ValidationError as exc:
        return _card_response(request, proposal_id, status=422, errors=exc.message_dict, form=form or {}, open_panel=panel)
    if not request.htmx:
        messages.success(request, f"Proposal #{proposal_id}: {verb}.")
        return redirect(_queue_url(request))
    try:
        filters = _filters(request.POST)
    except ValidationError:
        filters = {}
    count, capped = selectors_review.proposal_count(request.user, **filters)
    page = selectors_review.ProposalPage([], count=count, count_is_capped=capped)
    return render(request, "curation/partials/proposal_decided.html",
                  {"outcome": outcome, "proposal": outcome.proposal, "verb": verb, "page": page, "oob": True})


@require_POST
@require(REVIEW)
def accept(request, proposal_id):
    edited = request.POST.get("edited") == "1"
    edits = {f: request.POST.get(f, "") for f in service.EDITABLE if f in request.POST} if edited else None
    return _decide(
        request, proposal_id, "accepted after editing" if edited else "accepted",
        lambda: service.accept_proposal(proposal_id, actor=request.user, edits=edits, note=request.POST.get("note", "")),
        panel="edit", form=edits,
    )


@require_POST
@require(REVIEW)
def dismiss(request, proposal_id):
    return _decide(
        request, proposal_id, "dismissed, never proposed again",
        lambda: service.dismiss_proposal(proposal_id, actor=request.user, note=request.POST.get("note", "")),
    )


@require_POST
@require(REVIEW)
def bulk(request):
    """Accept (as proposed) or dismiss the selected proposals, then back to the queue with what happened."""
    values = request.POST.getlist("selected")
    action = request.POST.get("action", "")
    if not values or not all(v.isdigit() for v in values) or len(values) > 200:
        messages.error(request, "Select between 1 and 200 proposals (x, or the checkbox on the card).")
        return redirect(_queue_url(request))
    try:
        outcomes = service.bulk_decide_proposals([int(v) for v in values], actor=request.user, action=action,
                                                 note=request.POST.get("note", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(_queue_url(request))
    refused = [o for o in outcomes if not o.ok]
    summary = f"{action.capitalize()}ed {len(outcomes) - len(refused)} of {len(outcomes)}."
    if refused:
        summary += " Not changed: " + "; ".join(f"#{o.proposal_id}: {o.message}" for o in refused)
    (messages.warning if refused else messages.success)(request, summary)
    return redirect(_queue_url(request))
