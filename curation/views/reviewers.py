"""The reviewers' page (leads and auditors): each reviewer's decisions, agreement rate and median time per
decision over the last 7 and 30 days; and the leads' page of how many approvals each scope prefix needs."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from curation import selectors
from curation.permissions import SET_REVIEW_RULES, can_view_reviewers, require
from curation.selectors.agreement import SESSION_GAP_SECONDS, WINDOWS_DAYS
from curation.services.agreement import set_review_rule


@require_http_methods(["GET"])
@require(can_view_reviewers, "The reviewers' page is for leads and auditors.")
def reviewers(request):
    return render(request, "curation/reviewers.html", {
        "reviewers": selectors.reviewer_stats(request.user), "windows": WINDOWS_DAYS, "pause_minutes": SESSION_GAP_SECONDS // 60,
        "rules": selectors.review_rule_rows(request.user),
    })


@require_http_methods(["GET", "POST"])
@require(SET_REVIEW_RULES, "Only a lead sets how many reviewers a scope needs.")
def review_rules(request):
    """The rules per scope prefix, and the form that sets one (a prefix back to 1 undoes a 2)."""
    errors, form = {}, {}
    if request.method == "POST":
        form = {"prefix": request.POST.get("prefix", ""), "approvals": request.POST.get("approvals", "")}
        try:
            rule = set_review_rule(form["prefix"], approvals=form["approvals"], actor=request.user,
                                   reason=request.POST.get("reason", ""))
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            messages.success(request, f"Candidates under {rule.prefix} now need {rule.approvals} "
                                      f"approval{'s' if rule.approvals > 1 else ''}.")
            return redirect("curation:review-rules")
    return render(request, "curation/review_rules.html", {
        "rules": selectors.review_rule_rows(request.user), "errors": errors, "form": form,
    }, status=422 if errors else 200)
