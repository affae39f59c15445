"""The home page: the lead's dashboard (issue 5 §4). Every role that reads sees it, within its scopes."""

from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from curation.selectors import review as selectors_review
from curation.lifecycle import rules
from curation.permissions import READ, require


@require_GET
def home(request):
    if not request.user.is_authenticated:
        return redirect("login")
    return _dashboard(request)


@require(READ)
def _dashboard(request):
    r = rules()
    board = selectors_review.dashboard(request.user)
    scale = selectors_review.HISTOGRAM_BINS * selectors_review.HISTOGRAM_BAR
    return render(request, "curation/dashboard.html", {
        "board": board,
        "chart_width": scale,
        "chart_height": selectors_review.HISTOGRAM_HEIGHT,
        "archive_x": round(r.archive_below * scale),
        "retrieve_x": round(r.retrieve_at_least * scale),
        "archive_below": r.archive_below,
        "retrieve_at_least": r.retrieve_at_least,
    })
