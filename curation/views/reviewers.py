"""The reviewers' page (leads and auditors): each reviewer's decisions, agreement rate and median time per
decision over the last 7 and 30 days, and how many approvals each scope prefix needs (set on the scope
policies page)."""

from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from curation import selectors
from curation.rules.permissions import can_view_reviewers, require
from curation.rules.scope_policies import REVIEW
from curation.selectors.agreement import SESSION_GAP_SECONDS, WINDOWS_DAYS
from curation.selectors.scope_policies import policy_rows


@require_http_methods(["GET"])
@require(can_view_reviewers, "The reviewers' page is for leads and auditors.")
def reviewers(request):
    return render(
        request,
        "curation/reviewers.html",
        {
            "reviewers": selectors.reviewer_stats(request.user),
            "windows": WINDOWS_DAYS,
            "pause_minutes": SESSION_GAP_SECONDS // 60,
            "rules": policy_rows(request.user)[REVIEW],
        },
    )
