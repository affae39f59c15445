"""Admission policies in the console: leads see the policy in force per scope prefix and set one."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from curation import access, clock
from curation.admission import MODES
from curation.permissions import PUBLISH, require
from curation.selectors import admission_policies, admission_policy_rows
from curation.services.admission import set_admission_policy

FIELDS = ("prefix", "name", "mode", "evaluator", "threshold")


@require_http_methods(["GET", "POST"])
@require(PUBLISH)
def admission_page(request):
    form, errors, status = {}, {}, 200
    if request.method == "POST":
        form = {name: request.POST.get(name, "").strip() for name in FIELDS}
        try:
            row = set_admission_policy(data=form, actor=request.user, at=clock.now())
        except ValidationError as exc:
            errors, status = exc.message_dict, 422
        except PermissionDenied as exc:
            errors, status = {"prefix": [str(exc)]}, 403
        else:
            messages.success(request, f"{row.prefix}: {row.mode}, decided by policy:{row.name}.")
            return redirect("curation:admission")
    console = {row.prefix: row for row in admission_policy_rows()}
    rows = [{"policy": p, "row": console.get(p.prefix)} for p in admission_policies()
            if access.user_can_see_scope(request.user, p.prefix)]
    return render(request, "curation/admission.html", {"rows": rows, "form": form, "errors": errors, "modes": MODES},
                  status=status)
