"""The home page: the lead's dashboard. Every role that reads sees it, within its scopes."""

from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from curation.lifecycle import rules
from curation.permissions import READ, require
from curation.selectors import dashboard as board_reads


@require_GET
def home(request):
    if not request.user.is_authenticated:
        return redirect("login")
    return _dashboard(request)


@require(READ)
def _dashboard(request):
    lifecycle_rules = rules()
    board = board_reads.dashboard(request.user)
    scale = board_reads.HISTOGRAM_BINS * board_reads.HISTOGRAM_BAR
    return render(request, "curation/dashboard.html", {
        "board": board,
        "chart_width": scale,
        "chart_height": board_reads.HISTOGRAM_HEIGHT,
        "archive_x": round(lifecycle_rules.archive_below * scale),
        "retrieve_x": round(lifecycle_rules.retrieve_at_least * scale),
        "archive_below": lifecycle_rules.archive_below,
        "retrieve_at_least": lifecycle_rules.retrieve_at_least,
    })
