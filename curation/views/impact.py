"""A candidate's impact, the fragment its card fills in after the queue page has answered (htmx, when the card
comes into view; without JavaScript, the card's link opens it): what approving it would change for agents."""

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from curation.models import Entry
from curation.rules.permissions import REVIEW, require
from curation.services.impact import IMPACT_RETRIEVALS, candidate_impact


@require_GET
@require(REVIEW)
def candidate_impact_view(request, entry_id: int):
    try:
        impact = candidate_impact(entry_id, user=request.user)
    except Entry.DoesNotExist:
        raise Http404("No such candidate in your scopes.") from None
    return render(
        request,
        "curation/partials/impact.html",
        {"impact": impact, "entry_id": entry_id, "window": IMPACT_RETRIEVALS},
    )
