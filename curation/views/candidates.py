"""The candidates queue: new lessons from agents, and entries sent back for a recheck."""

from django.core.exceptions import ValidationError

from curation import selectors, services
from curation.models import Entry
from curation.permissions import REVIEW
from curation.views.filters import CandidateFilterForm
from curation.views.queues import Queue, decision


class Candidates(Queue):
    url_name = "candidates"
    card_url_name = "candidate-card"
    page_template = "curation/candidates.html"
    card_template = "curation/partials/card.html"
    decided_template = "curation/partials/card_decided.html"
    filter_form = CandidateFilterForm
    label = "candidates"
    empty = "Nothing waiting here"
    card_title = "Candidate"
    back_label = "the queue"
    item_noun = "card"
    outcome_id = "entry_id"
    dom_prefix = "card"
    bulk_url_name = "candidates-bulk"
    keys = (
        ("j / k", "next / previous card"), ("a", "approve"), ("e", "edit, then approve (Ctrl+Enter saves)"),
        ("r", "reject with a reason (Enter sends)"), ("d", "defer"), ("x", "select for a bulk action"),
        ("o", "open the entry page"),
    )
    missing = (Entry.DoesNotExist,)
    not_found = "No such entry in your scopes."

    def read_page(self, request, filters, cursor):
        return selectors.candidate_queue(request.user, filters, cursor=cursor)

    def read_count(self, user, filters):
        return selectors.queue_count(user, filters)

    def read_card(self, request, pk, *, form=None, errors=None):
        return selectors.queue_card(request.user, pk)

    def count_noun(self, filters) -> str:
        return "deferred" if filters.deferred else "waiting"

    def decided_message(self, entry, verb):
        return f"{verb.capitalize()} {entry.label}."

    def bulk_parts(self):
        return 2

    def bulk_decide(self, request, items, action):
        return services.bulk_decide(items, actor=request.user, action=action, reason=request.POST.get("reason", ""))

    def bulk_refused(self, request, exc):
        """The queue again, with what was wrong above the bulk form."""
        return self.render_page(request, request.GET, status=422, bulk_errors=exc.messages)


QUEUE = Candidates()


def _version(request) -> int:
    try:
        return int(request.POST.get("version", ""))
    except ValueError:
        raise ValidationError({"version": ["The form is missing the entry's version; reload the queue."]}) from None


@decision(REVIEW)
def approve(request, entry_id):
    return QUEUE.decide(
        request, entry_id, "approved",
        lambda: services.approve_candidate(entry_id, actor=request.user, expected_version=_version(request)),
    )


@decision(REVIEW)
def edit_approve(request, entry_id):
    changes = {f: request.POST.get(f, "") for f in services.candidates.EDITABLE_FIELDS if f in request.POST}
    return QUEUE.decide(
        request, entry_id, "edited and approved",
        lambda: services.edit_and_approve(entry_id, actor=request.user, expected_version=_version(request),
                                          changes=changes, reason=request.POST.get("note", "")),
        panel="edit", form=changes,
    )


@decision(REVIEW)
def reject(request, entry_id):
    reason = request.POST.get("reason", "")
    return QUEUE.decide(
        request, entry_id, "rejected",
        lambda: services.reject_candidate(entry_id, actor=request.user, expected_version=_version(request),
                                          reason=reason),
        panel="reject", form={"reason": reason},
    )


@decision(REVIEW)
def defer(request, entry_id):
    return QUEUE.decide(
        request, entry_id, "deferred",
        lambda: services.defer_candidate(entry_id, actor=request.user, expected_version=_version(request),
                                         reason=request.POST.get("reason", "")),
    )


@decision(REVIEW)
def merge(request, entry_id):
    target = request.POST.get("target", "")
    return QUEUE.decide(
        request, entry_id, f"merged into #{target}",
        lambda: services.merge_into(entry_id, target_id=int(target) if target.isdigit() else None,
                                    actor=request.user, expected_version=_version(request),
                                    reason=request.POST.get("note", "")),
    )
