"""The consolidation queue: merge and supersede proposals made by the background sweep. A reviewer
accepts a proposal as is, accepts it after editing the merged text, or dismisses it."""

from curation import selectors, services
from curation.models import ConsolidationProposal, Entry
from curation.rules.permissions import REVIEW
from curation.services import consolidation as service
from curation.views.filters import ProposalFilterForm
from curation.views.queues import Queue, decision


class Consolidation(Queue):
    url_name = "consolidation"
    card_url_name = "proposal-card"
    page_template = "curation/consolidation.html"
    card_template = "curation/partials/proposal_card.html"
    decided_template = "curation/partials/proposal_decided.html"
    filter_form = ProposalFilterForm
    label = "consolidation proposals"
    empty = "No open proposals"
    card_title = "Proposal"
    back_label = "the proposals"
    item_noun = "proposal"
    outcome_id = "proposal_id"
    dom_prefix = "proposal"
    bulk_url_name = "consolidation-bulk"
    keys = (
        ("j / k", "next / previous proposal"),
        ("a", "accept as proposed"),
        ("e", "edit the merged text, then accept (Ctrl+Enter saves)"),
        ("n", "dismiss (Enter sends)"),
        ("x", "select for a bulk action"),
        ("o", "open the first entry's page"),
        ("z", f"undo the last dismissal (for {services.candidates.UNDO_SECONDS} seconds)"),
    )
    missing = (ConsolidationProposal.DoesNotExist, Entry.DoesNotExist)
    not_found = "No such proposal in your scopes."

    read_list = staticmethod(selectors.consolidation_queue)
    read_count = staticmethod(selectors.proposal_count)
    read_one = staticmethod(selectors.proposal_card)
    count_noun = "open"
    decided_text = "Proposal #{item.pk}: {verb}."
    decided_attr = "proposal"

    def decided_context(self, request):
        return {"undo_seconds": services.candidates.UNDO_SECONDS}

    def cannot_undo(self, item):
        return service.why_not_undoable(item)

    def bulk_decide(self, request, items, action):
        return service.bulk_decide_proposals(
            [pk for (pk,) in items], actor=request.user, action=action, note=request.POST.get("note", "")
        )


QUEUE = Consolidation()


@decision(REVIEW)
def accept(request, pk):
    edited = request.POST.get("edited") == "1"
    edits = {f: request.POST.get(f, "") for f in service.EDITABLE if f in request.POST} if edited else None
    return QUEUE.decide(
        request,
        pk,
        "accepted after editing" if edited else "accepted",
        service.accept_proposal,
        panel="edit",
        form=edits,
        edits=edits,
        note=request.POST.get("note", ""),
    )


@decision(REVIEW)
def dismiss(request, pk):
    return QUEUE.decide(
        request, pk, "dismissed, never proposed again", service.dismiss_proposal, note=request.POST.get("note", "")
    )


@decision(REVIEW)
def undo(request, pk):
    return QUEUE.decide(
        request,
        pk,
        "undone",
        service.undo_dismissal,
        answer=(lambda outcome: QUEUE.reopened(request, outcome.proposal)) if request.htmx else None,
    )


urlpatterns = QUEUE.urls("review/consolidation/", {"accept": accept, "dismiss": dismiss, "undo": undo})
