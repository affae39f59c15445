"""The candidates queue: new lessons from agents, and entries sent back for a recheck."""

from django.core.exceptions import ValidationError

from curation import selectors, services
from curation.models import Entry
from curation.rules.permissions import REVIEW, SETTLE
from curation.views.filters import CandidateFilterForm
from curation.views.queues import Queue, decision


class Candidates(Queue):
    url_name = "candidates"
    card_url_name = "candidate-card"
    page_template = "curation/candidates.html"
    card_template = "curation/partials/card.html"
    cards_template = "curation/partials/cards.html"
    lines_template = "curation/partials/card_lines.html"
    decided_template = "curation/partials/card_decided.html"
    filter_form = CandidateFilterForm
    label = "candidates"
    empty = "Nothing waiting here"
    card_title = "Candidate"
    back_label = "the queue"
    item_noun = "card"
    outcome_id = "entry_id"
    dom_prefix = "card"
    bulk_parts = 2
    bulk_url_name = "candidates-bulk"
    bulk_undo_url_name = "candidates-bulk-undo"
    keys = (
        ("j / k", "next / previous card"),
        ("a", "approve"),
        ("e", "edit, then approve (Ctrl+Enter saves)"),
        ("r", "reject with a reason (Enter sends)"),
        ("d", "defer"),
        ("x", "select for a bulk action"),
        ("Shift+j / Shift+k", "extend the selection down / up"),
        ("A", "approve the selection"),
        ("R", "reject the selection (type the reason, Enter rejects)"),
        ("Enter / Space", "expand a line of the compact list"),
        ("o", "open the entry page"),
        (
            "z",
            f"undo the last decision, or the whole last bulk action (for {services.candidates.UNDO_SECONDS} seconds)",
        ),
    )
    missing = (Entry.DoesNotExist,)
    not_found = "No such entry in your scopes."

    read_list = staticmethod(selectors.candidate_queue)
    read_count = staticmethod(selectors.queue_count)
    read_one = staticmethod(selectors.queue_card)
    read_lines = staticmethod(selectors.candidate_lines)
    decided_text = "{Verb} {item.label}."

    def filters_for(self, request, params):
        """Only leads are offered "needs a lead": a reviewer's queue never holds what waits for a lead."""
        form = self.filter_form(params)
        if not request.user.has_perm(SETTLE):
            field = form.fields["reason"]
            field.choices = [choice for choice in field.choices if choice[0] != "lead"]
        return form

    def counted(self, filters):
        return "deferred" if filters.deferred else "waiting"

    def count_note(self, request, filters, count, capped):
        """A reviewer's own first approvals wait for a second reviewer: counted apart, so the count says what
        this reader can act on."""
        theirs = selectors.waiting_on_others(request.user, filters)
        if not theirs:
            return ""
        for_you = "" if capped else f"{count - theirs:,} for you, "
        return f"({for_you}{theirs:,} waiting for a second reviewer)"

    def versions(self, request):
        try:
            return {"expected_version": int(request.POST.get("version", ""))}
        except ValueError:
            raise ValidationError({"version": ["The form is missing the entry's version; reload the queue."]}) from None

    def bulk_decide(self, request, items, action):
        return services.bulk_decide(items, actor=request.user, action=action, reason=request.POST.get("reason", ""))

    def undo_bulk(self, request, items):
        return services.undo_bulk(items, actor=request.user)

    def decided_verb(self, item, verb):
        if verb in ("approved", "rejected", "edited and approved"):
            return services.candidates.decided_words(item, verb.removesuffix("d"))
        return verb

    def decided_context(self, request):
        return {"undo_seconds": services.candidates.UNDO_SECONDS}

    def bulk_decided_item(self, outcome):
        return outcome.entry

    def bulk_refused(self, request, exc):
        """The queue again, with what was wrong above the bulk form."""
        return self.render_page(request, request.GET, status=422, bulk_errors=exc.messages)


QUEUE = Candidates()


@decision(REVIEW)
def approve(request, pk):
    return QUEUE.decide(request, pk, "approved", services.approve_candidate)


@decision(REVIEW)
def edit_approve(request, pk):
    changes = {f: request.POST.get(f, "") for f in services.candidates.EDITABLE_FIELDS if f in request.POST}
    return QUEUE.decide(
        request,
        pk,
        "edited and approved",
        services.edit_and_approve,
        panel="edit",
        form=changes,
        changes=changes,
        reason=request.POST.get("note", ""),
    )


@decision(REVIEW)
def reject(request, pk):
    reason = request.POST.get("reason", "")
    return QUEUE.decide(
        request, pk, "rejected", services.reject_candidate, panel="reject", form={"reason": reason}, reason=reason
    )


@decision(REVIEW)
def defer(request, pk):
    return QUEUE.decide(request, pk, "deferred", services.defer_candidate, reason=request.POST.get("reason", ""))


@decision(REVIEW)
def merge(request, pk):
    target = request.POST.get("target", "")
    return QUEUE.decide(
        request,
        pk,
        f"merged into #{target}",
        services.merge_into,
        target_id=int(target) if target.isdigit() else None,
        reason=request.POST.get("note", ""),
    )


@decision(REVIEW)
def undo(request, pk):
    return QUEUE.decide(
        request,
        pk,
        "undone",
        services.undo_decision,
        answer=(lambda entry: QUEUE.reopened(request, entry)) if request.htmx else None,
    )


urlpatterns = QUEUE.urls(
    "review/candidates/",
    {
        "approve": approve,
        "edit": edit_approve,
        "reject": reject,
        "defer": defer,
        "merge": merge,
        "undo": undo,
    },
)
