"""The home page: the lead's dashboard. Every role that reads sees it, within its scopes."""

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from curation.rules.lifecycle import rules
from curation.rules.permissions import READ, require
from curation.selectors import dashboard as board_reads
from curation.selectors import replays


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
    return render(
        request,
        "curation/dashboard.html",
        {
            "board": board,
            "chart_width": scale,
            "chart_height": board_reads.HISTOGRAM_HEIGHT,
            "archive_x": round(lifecycle_rules.archive_below * scale),
            "retrieve_x": round(lifecycle_rules.retrieve_at_least * scale),
            "archive_below": lifecycle_rules.archive_below,
            "retrieve_at_least": lifecycle_rules.retrieve_at_least,
            "replay": replays.latest_replay(),
        },
    )


@require_GET
@require(READ)
def replay_report(request, name):
    """A file of the latest replay report (manage.py replay), linked from the dashboard."""
    content = replays.latest_replay_file(name)
    if content is None:
        raise Http404("No such replay report file.")
    return HttpResponse(content, content_type=replays.REPORT_FILES[name])
