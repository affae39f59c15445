"""Is memory helping? The learning dashboard (everyone who reads the console, within their scopes) and the
one-click "send back for recheck" of a lesson that hurts. (The holdout is set on the scope policies page.)"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from curation.rules import access
from curation.models import Entry
from curation.rules.permissions import READ, REVIEW, require
from curation.selectors import evaluation as reads
from curation.services import InvalidTransition, StaleDecision
from curation.services.candidates import send_back_for_recheck

DAYS = (7, 30, 90)
CHART_WIDTH, CHART_HEIGHT, CHART_LEFT = 520, 160, 34


def _focus(request) -> str:
    raw = request.GET.get("scope", "").rstrip("/")
    if not raw.strip():
        return ""
    try:
        scope = access.clean_scope(raw)
    except ValidationError as exc:
        raise _BadFilter({"scope": exc.messages}) from None
    if not access.user_can_see_scope(request.user, scope):
        raise Http404("No such scope in your scopes.")
    return scope


class _BadFilter(Exception):
    def __init__(self, errors):
        self.errors = errors


def _days(request) -> int:
    raw = request.GET.get("days", "30")
    if raw not in {str(d) for d in DAYS}:
        raise _BadFilter({"days": ["7, 30 or 90 days."]})
    return int(raw)


def chart(weeks, *, rules_only: bool = False) -> dict:
    """The weekly success rate per arm as SVG geometry: x per week, y from 0% (bottom) to 100% (top)."""
    step = (CHART_WIDTH - CHART_LEFT) / max(1, len(weeks) - 1)
    lines = {}
    for arm in ("memory", "holdout", *(("rules_only",) if rules_only else ())):
        dots = []
        for i, week in enumerate(weeks):
            rate = getattr(week, arm)
            if rate.tasks:
                dots.append(
                    {
                        "x": round(CHART_LEFT + i * step, 1),
                        "y": round(CHART_HEIGHT * (1 - rate.value), 1),
                        "label": f"week of {week.start:%d %b}: {rate.value:.0%} of {rate.tasks:,} tasks ({arm})",
                    }
                )
        lines[arm] = {"dots": dots, "points": " ".join(f"{d['x']},{d['y']}" for d in dots)}
    ticks = [
        {"x": round(CHART_LEFT + i * step, 1), "label": f"{week.start:%d %b}"}
        for i, week in enumerate(weeks)
        if i % 2 == 0
    ]
    grid = [{"y": round(CHART_HEIGHT * (1 - p / 100), 1), "label": f"{p}%"} for p in (0, 25, 50, 75, 100)]
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "left": CHART_LEFT,
        "lines": lines,
        "ticks": ticks,
        "grid": grid,
    }


@require_GET
@require(READ)
def learning(request):
    try:
        focus, days = _focus(request), _days(request)
    except _BadFilter as bad:
        return render(
            request,
            "curation/learning.html",
            {"errors": bad.errors, "days_choices": DAYS, "focus": request.GET.get("scope", "")},
            status=422,
        )
    report = reads.learning_report(prefixes=access.user_scope_prefixes(request.user), focus=focus, days=days)
    return render(
        request,
        "curation/learning.html",
        {
            "report": report,
            "focus": focus,
            "days": days,
            "days_choices": DAYS,
            "windows": reads.WINDOWS,
            "chart": chart(report.weeks, rules_only=report.has_rules_only),
            "errors": {},
        },
    )


@require_POST
@require(REVIEW, "Only reviewers and leads send entries back for a recheck.")
def recheck(request, entry_id: int):
    back = (
        reverse("curation:learning")
        + "?"
        + urlencode(
            {k: v for k, v in (("scope", request.POST.get("scope", "")), ("days", request.POST.get("days", ""))) if v}
        )
    )
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        messages.error(request, "The entry's version is missing: reload the page and try again.")
        return redirect(back)
    try:
        send_back_for_recheck(
            entry_id,
            actor=request.user,
            expected_version=version,
            reason="sent back from the learning dashboard: tasks that retrieved it did worse",
        )
    except Entry.DoesNotExist:
        raise Http404("No such entry in your scopes.") from None
    except StaleDecision:
        messages.error(
            request, f"Entry #{entry_id} changed since this page was loaded; look at it before sending it back."
        )
    except InvalidTransition as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Entry #{entry_id} is back in the candidates queue for a recheck.")
    return redirect(back)
