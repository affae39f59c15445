"""The conflicts queue: two entries side by side, and the four ways to resolve them."""

from django.core.exceptions import ValidationError

from curation import selectors, services
from curation.models import Conflict, Entry, Kind
from curation.rules.permissions import REVIEW
from curation.services import conflicts as service
from curation.views.filters import ConflictFilterForm
from curation.views.queues import Queue, decision


class Conflicts(Queue):
    url_name = "conflicts"
    card_url_name = "conflict-card"
    page_template = "curation/conflicts.html"
    card_template = "curation/partials/conflict_card.html"
    decided_template = "curation/partials/conflict_decided.html"
    filter_form = ConflictFilterForm
    label = "conflicts"
    empty = "No open conflicts"
    card_title = "Conflict"
    back_label = "the conflicts"
    item_noun = "conflict"
    outcome_id = "conflict_id"
    dom_prefix = "conflict"
    bulk_parts = 3
    bulk_url_name = "conflicts-bulk"
    keys = (
        ("j / k", "next / previous conflict"),
        ("1 / 2", "keep the left / the right entry (the other is superseded)"),
        ("s", "split: narrow scopes or conditions (Ctrl+Enter saves)"),
        ("m", "merge into one new entry (Ctrl+Enter saves)"),
        ("n", "not a conflict: dismiss (Enter sends)"),
        ("x", 'select for "Dismiss selected"'),
        ("o", "open the left entry's page"),
        ("z", f"undo the last dismissal or keep (for {services.candidates.UNDO_SECONDS} seconds)"),
    )
    missing = (Conflict.DoesNotExist, Entry.DoesNotExist)
    not_found = "No such conflict in your scopes."

    read_list = staticmethod(selectors.conflict_queue)
    read_count = staticmethod(selectors.conflict_count)
    read_one = staticmethod(selectors.conflict_card)
    count_noun = "open"
    decided_text = "Conflict #{item.pk}: {verb}."
    decided_attr = "conflict"

    def context(self, request):
        return {"kinds": Kind.choices}  # the merge form's kinds

    def versions(self, request):
        try:
            return {
                "version_a": int(request.POST.get("version_a", "")),
                "version_b": int(request.POST.get("version_b", "")),
            }
        except ValueError:
            raise ValidationError(
                {"version": ["The form is missing the entries' versions; reload the queue."]}
            ) from None

    def decided_context(self, request):
        return {"undo_seconds": services.candidates.UNDO_SECONDS}

    def cannot_undo(self, item):
        return service.why_not_undoable(item.resolution)

    def bulk_action(self, request):
        return "dismiss"  # the one bulk action here

    def bulk_decide(self, request, items, action):
        return service.bulk_dismiss_conflicts(items, actor=request.user, reason=request.POST.get("reason", ""))


QUEUE = Conflicts()


@decision(REVIEW)
def keep(request, pk):
    raw = request.POST.get("keep", "")
    if not raw.isdigit():
        return QUEUE.card_response(request, pk, status=422, errors={"keep": ["Say which entry to keep."]})
    kept = int(raw)
    return QUEUE.decide(
        request,
        pk,
        f"kept #{kept}, the other is superseded",
        service.keep_entry,
        keep=kept,
        reason=request.POST.get("reason", ""),
    )


@decision(REVIEW)
def split(request, pk):
    changes = {
        side: {f: request.POST[f"{side}_{f}"] for f in service.SPLIT_FIELDS if f"{side}_{f}" in request.POST}
        for side in ("a", "b")
    }
    form = {f"{side}_{f}": v for side, fields in changes.items() for f, v in fields.items()}
    return QUEUE.decide(
        request,
        pk,
        "split, both entries narrowed",
        service.split_conflict,
        panel="split",
        form=form,
        changes_a=changes["a"],
        changes_b=changes["b"],
        reason=request.POST.get("reason", ""),
    )


@decision(REVIEW)
def merge(request, pk):
    # Prefixed: the queue's filters (scope, kind) are posted along with every action.
    data = {f: request.POST.get(f"merge_{f}", "") for f in service.MERGE_FIELDS}
    return QUEUE.decide(
        request,
        pk,
        "merged into a new entry",
        service.merge_conflict,
        panel="merge",
        form={f"merge_{k}": v for k, v in data.items()},
        data=data,
        reason=request.POST.get("reason", ""),
    )


@decision(REVIEW)
def dismiss(request, pk):
    return QUEUE.decide(
        request, pk, "dismissed, never raised again", service.dismiss_conflict, reason=request.POST.get("reason", "")
    )


@decision(REVIEW)
def undo(request, pk):
    return QUEUE.decide(
        request,
        pk,
        "undone",
        service.undo_resolution,
        answer=(lambda resolution: QUEUE.reopened(request, resolution.conflict)) if request.htmx else None,
    )


urlpatterns = QUEUE.urls(
    "review/conflicts/", {"keep": keep, "split": split, "merge": merge, "dismiss": dismiss, "undo": undo}
)
