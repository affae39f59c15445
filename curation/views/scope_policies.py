"""The lead's page of settings per scope prefix: a section per kind (two-reviewer rules, holdout, admission),
each with what is in force, where it comes from, and the form that sets one; the recent changes below. Without
JavaScript a form posts and the page comes back at its section. The old pages' addresses lead to their
section, so bookmarks keep working."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from curation.rules.admission import MODES
from curation.rules.permissions import SET_SCOPE_POLICIES, require
from curation.rules.scope_policies import ADMISSION, HOLDOUT, KINDS, REVIEW
from curation.selectors.scope_policies import overlaps, policy_history, policy_rows
from curation.services.scope_policies import set_scope_policy

# The fields each kind's form posts (and the reason, common to all).
FIELDS = {
    REVIEW: ("prefix", "approvals"),
    HOLDOUT: ("prefix", "fraction", "rules_only"),
    ADMISSION: ("prefix", "name", "mode", "evaluator", "threshold"),
}
REFUSAL = "Only a lead sets scope policies (two-reviewer rules, holdout fractions, admission policies)."


def section_url(kind: str) -> str:
    return f"{reverse('curation:scope-policies')}#{kind}"


@require_GET
@require(SET_SCOPE_POLICIES, REFUSAL)
def scope_policies_page(request):
    return _page(request)


@require_POST
@require(SET_SCOPE_POLICIES, REFUSAL)
def set_policy(request, kind: str):
    if kind not in KINDS:
        raise Http404("No such kind of scope policy.")
    # A prefix is not trimmed: spaces around a scope are refused with the rule, as everywhere.
    form = {
        name: request.POST.get(name, "") if name == "prefix" else request.POST.get(name, "").strip()
        for name in (*FIELDS[kind], "reason")
    }
    try:
        result = set_scope_policy(kind, data=form, actor=request.user, reason=form["reason"])
    except ValidationError as exc:
        return _page(request, kind, form, exc.message_dict, status=422)
    except PermissionDenied as exc:  # a prefix outside the lead's scopes
        return _page(request, kind, form, {"prefix": [str(exc)]}, status=403)
    if result.changed:
        messages.success(request, result.described)
    else:
        messages.info(request, f"{result.policy.prefix} already had this setting: nothing changed.")
    for warning in result.warnings:
        messages.warning(request, warning)
    return redirect(section_url(kind))


def _page(request, kind: str = "", form=None, errors=None, *, status: int = 200):
    rows = policy_rows(request.user)
    forms = {k: {} for k in KINDS}
    errs = {k: {} for k in KINDS}
    if kind:
        forms[kind], errs[kind] = form or {}, errors or {}
    return render(
        request,
        "curation/scope_policies.html",
        {
            "rows": rows,
            "overlaps": overlaps(rows),
            "history": policy_history(request.user),
            "forms": forms,
            "errors": errs,
            "modes": MODES,
        },
        status=status,
    )


def moved_to(kind: str):
    """The old page of one kind: its section of this page, for bookmarks."""

    @require_GET
    def moved(request):
        return redirect(section_url(kind), permanent=True)

    return moved
