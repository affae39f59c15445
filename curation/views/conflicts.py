"""The conflicts queue: two entries side by side, and the four ways to resolve them."""

from django.core.exceptions import ValidationError

from curation import selectors
from curation.models import Conflict, Entry, Kind
from curation.permissions import REVIEW
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
    bulk_url_name = "conflicts-bulk"
    keys = (
        ("j / k", "next / previous conflict"), ("1 / 2", "keep the left / the right entry (the other is superseded)"),
        ("s", "split: narrow scopes or conditions (Ctrl+Enter saves)"), ("m", "merge into one new entry (Ctrl+Enter saves)"),
        ("n", "not a conflict: dismiss (Enter sends)"), ("x", 'select for "Dismiss selected"'),
        ("o", "open the left entry's page"),
    )
    missing = (Conflict.DoesNotExist, Entry.DoesNotExist)
    not_found = "No such conflict in your scopes."

    def read_page(self, request, filters, cursor):
        return selectors.conflict_queue(request.user, filters, cursor=cursor)

    def read_count(self, user, filters):
        return selectors.conflict_count(user, filters)

    def read_card(self, request, pk, *, form=None, errors=None):
        return selectors.conflict_card(request.user, pk)

    def context(self, request):
        return {"kinds": Kind.choices}  # the merge form's kinds

    def count_noun(self, filters):
        return "open"

    def decided_item(self, result):
        return result.conflict

    def decided_message(self, result, verb):
        return f"Conflict #{result.conflict.pk}: {verb}."

    def bulk_action(self, request):
        return "dismiss"  # the one bulk action here

    def bulk_parts(self):
        return 3

    def bulk_decide(self, request, items, action):
        return service.bulk_dismiss_conflicts(items, actor=request.user, reason=request.POST.get("reason", ""))


QUEUE = Conflicts()


def _versions(request) -> dict:
    try:
        return {"version_a": int(request.POST.get("version_a", "")), "version_b": int(request.POST.get("version_b", ""))}
    except ValueError:
        raise ValidationError({"version": ["The form is missing the entries' versions; reload the queue."]}) from None


@decision(REVIEW)
def keep(request, conflict_id):
    raw = request.POST.get("keep", "")
    if not raw.isdigit():
        return QUEUE.card_response(request, conflict_id, status=422, errors={"keep": ["Say which entry to keep."]})
    kept = int(raw)
    return QUEUE.decide(
        request, conflict_id, f"kept #{kept}, the other is superseded",
        lambda: service.keep_entry(conflict_id, actor=request.user, keep=kept, reason=request.POST.get("reason", ""),
                                   **_versions(request)),
    )


@decision(REVIEW)
def split(request, conflict_id):
    changes = {
        side: {f: request.POST[f"{side}_{f}"] for f in service.SPLIT_FIELDS if f"{side}_{f}" in request.POST}
        for side in ("a", "b")
    }
    form = {f"{side}_{f}": v for side, fields in changes.items() for f, v in fields.items()}
    return QUEUE.decide(
        request, conflict_id, "split, both entries narrowed",
        lambda: service.split_conflict(conflict_id, actor=request.user, changes_a=changes["a"], changes_b=changes["b"],
                                       reason=request.POST.get("reason", ""), **_versions(request)),
        panel="split", form=form,
    )


@decision(REVIEW)
def merge(request, conflict_id):
    # Prefixed: the queue's filters (scope, kind) are posted along with every action.
    data = {f: request.POST.get(f"merge_{f}", "") for f in service.MERGE_FIELDS}
    return QUEUE.decide(
        request, conflict_id, "merged into a new entry",
        lambda: service.merge_conflict(conflict_id, actor=request.user, data=data,
                                       reason=request.POST.get("reason", ""), **_versions(request)),
        panel="merge", form={f"merge_{k}": v for k, v in data.items()},
    )


@decision(REVIEW)
def dismiss(request, conflict_id):
    return QUEUE.decide(
        request, conflict_id, "dismissed, never raised again",
        lambda: service.dismiss_conflict(conflict_id, actor=request.user, reason=request.POST.get("reason", ""),
                                         **_versions(request)),
    )
