"""The Forget queue: requests to forget a lesson, filed by reviewers (the entry page's "Request forget")
and by agents for their users. A lead approves, with the near duplicates ticked on the card, or declines
with a reason; reviewers file and read, auditors read. A decided card shows the receipt (the search for
residues after the purge); a request the receipt reopened waits here until a lead closes it with a note."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from curation.models import Entry, ForgetRequest
from curation.rules.permissions import FORGET, REVIEW, require
from curation.selectors import forgets as reads
from curation.selectors.forget_receipt import attach_receipts
from curation.services import forgets as service
from curation.services.forget_receipt import close_reopened
from curation.views.filters import ForgetFilterForm
from curation.views.queues import Queue, decision


def _queue_page(user, filters, **paging):
    page = reads.forget_queue(user, filters, **paging)
    attach_receipts(page.items)
    return page


def _card(user, pk):
    return attach_receipts([reads.forget_card(user, pk)])[0]


class Forgets(Queue):
    url_name, card_url_name, bulk_url_name = "forgets", "forget-card", ""
    page_template, card_template = "curation/forgets.html", "curation/partials/forget_card.html"
    decided_template, filter_form = "curation/partials/forget_decided.html", ForgetFilterForm
    label, empty, card_title, back_label = "forget requests", "No forget requests", "Request", "the requests"
    item_noun, outcome_id, dom_prefix = "request", "request_id", "forget"
    missing, not_found = (ForgetRequest.DoesNotExist,), "No such request in your scopes."
    keys = (("j / k", "next / previous request"), ("o", "open the entry's page"))
    read_list = staticmethod(_queue_page)
    read_count = staticmethod(reads.forget_count)
    read_one = staticmethod(_card)
    count_noun, decided_text = "open", "Request #{item.pk}: {verb}."
    decided_attr = "request"

    def counted(self, filters) -> str:
        return filters.state or "open"

    def cannot_undo(self, item) -> str:
        """A forget is for good: its text is purged and a tombstone keeps the lesson out (a decline or a close
        is decided again by filing or reopening, not undone)."""
        if item.state in (ForgetRequest.State.APPROVED, ForgetRequest.State.REOPENED):
            return "its text is purged everywhere and a tombstone keeps the lesson out"
        return ""

    def decided_verb(self, item, verb: str) -> str:
        if item.state == ForgetRequest.State.REOPENED:
            return "approved and purged, but the receipt found residues: reopened for a lead"
        return verb


QUEUE = Forgets()


@decision(FORGET, "Only a lead approves or declines forget requests.")
def approve(request, pk):
    return QUEUE.decide(
        request,
        pk,
        "approved: forgotten",
        service.approve_forget_request,
        duplicate_ids=request.POST.getlist("duplicates"),
        quotes=request.POST.getlist("quotes"),
        note=request.POST.get("note", ""),
    )


@decision(FORGET, "Only a lead approves or declines forget requests.")
def decline(request, pk):
    def act(pk, *, actor, reason):
        return service.ForgetOutcome(service.decline_forget_request(pk, actor=actor, reason=reason), [], None, 0)

    return QUEUE.decide(
        request,
        pk,
        "declined",
        act,
        panel="decline",
        form={"reason": request.POST.get("reason", "")},
        reason=request.POST.get("reason", ""),
    )


@decision(FORGET, "Only a lead closes a reopened forget request.")
def close(request, pk):
    def act(pk, *, actor, note):
        return service.ForgetOutcome(close_reopened(pk, actor=actor, note=note), [], None, 0)

    return QUEUE.decide(
        request,
        pk,
        "closed: residues dealt with",
        act,
        panel="close",
        form={"note": request.POST.get("note", "")},
        note=request.POST.get("note", ""),
    )


@require_POST
@require(REVIEW)
def file_for_entry(request, entry_id):
    """The entry page's "Request forget": back to the entry with what happened."""
    try:
        filed = service.file_forget_request(
            entry_id=entry_id, reason=request.POST.get("reason", ""), actor=request.user
        )
    except Entry.DoesNotExist:
        raise Http404("No such entry in your scopes.") from None
    except ValidationError as exc:
        messages.error(request, "Not filed: " + " ".join(m for ms in exc.message_dict.values() for m in ms))
        return redirect("curation:entry", entry_id=entry_id)
    messages.success(request, f"Forget request #{filed.pk} filed: a lead decides in the Forget queue.")
    return redirect("curation:entry", entry_id=entry_id)


urlpatterns = QUEUE.urls("review/forgets/", {"approve": approve, "decline": decline, "close": close})
