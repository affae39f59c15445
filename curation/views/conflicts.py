"""The conflicts queue: two entries side by side, and the four ways to resolve them; the conflicts one
entry raised together are one card, decided (and undone) at once."""

from django.core.exceptions import ValidationError

from curation import selectors, services
from curation.models import Conflict, Entry, Kind
from curation.rules.permissions import REVIEW
from curation.services import conflict_groups
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
        (
            "1 / 2",
            "keep the left / the right entry (the other is superseded); on a card of several conflicts, "
            "keep the lesson they share / the others",
        ),
        ("s", "split: narrow scopes or conditions (Ctrl+Enter saves)"),
        ("m", "merge into one new entry (Ctrl+Enter saves)"),
        ("n", "not a conflict: dismiss (Enter sends); on a card of several, dismiss them all"),
        ("x", 'select for "Dismiss selected"'),
        ("o", "open the left entry's page"),
        ("z", f"undo the last dismissal or keep, a whole card's too (for {services.candidates.UNDO_SECONDS} seconds)"),
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

    def read_card(self, request, pk, *, form=None, errors=None):
        """A card of several conflicts after one of its decisions (or with ?group=1): as the queue shows it."""
        if request.resolver_match.url_name.startswith("conflict-group-") or request.GET.get("group"):
            filters = self.filters_for(request, request.POST or request.GET).filters()
            return selectors.conflict_group_card(request.user, pk, filters)
        return selectors.conflict_card(request.user, pk)

    def versions(self, request):
        if "members" in request.POST:  # a card of several conflicts: each with its entries' versions
            members = [value.split(":") for value in request.POST.getlist("members")]
            if not all(len(parts) == 3 and all(p.isdigit() for p in parts) for parts in members):
                raise ValidationError({"members": ["A conflict of this card is malformed; reload the queue."]})
            return {"members": [tuple(int(p) for p in parts) for parts in members]}
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


GROUP_KEEPS = {"new": "keep_new", "existing": "keep_existing"}
GROUP_VERBS = {
    "keep_new": "kept the lesson they share, the others superseded",
    "keep_existing": "kept the others, the lesson they share superseded",
    "dismiss": "all dismissed, never raised again",
}


@decision(REVIEW)
def group_keep(request, pk):
    chosen = GROUP_KEEPS.get(request.POST.get("keep", ""))
    if chosen is None:
        return QUEUE.card_response(request, pk, status=422, errors={"keep": ["Say which side to keep."]})
    return _group_decision(request, pk, chosen)


@decision(REVIEW)
def group_dismiss(request, pk):
    return _group_decision(request, pk, "dismiss", panel="dismiss")


def _group_decision(request, pk, chosen: str, panel: str = ""):
    if "members" not in request.POST:
        return QUEUE.card_response(request, pk, status=422, errors={"members": ["The card's conflicts are missing."]})
    return QUEUE.decide(
        request,
        pk,
        GROUP_VERBS[chosen],
        conflict_groups.resolve_conflict_group,
        panel=panel,
        decision=chosen,
        reason=request.POST.get("reason", ""),
    )


@decision(REVIEW)
def group_undo(request, pk):
    if "members" not in request.POST:
        return QUEUE.card_response(request, pk, status=422, errors={"members": ["The card's conflicts are missing."]})
    return QUEUE.decide(
        request,
        pk,
        "undone",
        conflict_groups.undo_conflict_group,
        answer=(lambda outcome: QUEUE.reopened(request, outcome.conflict)) if request.htmx else None,
    )


urlpatterns = QUEUE.urls(
    "review/conflicts/",
    {
        "keep": keep,
        "split": split,
        "merge": merge,
        "dismiss": dismiss,
        "undo": undo,
        "group-keep": group_keep,
        "group-dismiss": group_dismiss,
        "group-undo": group_undo,
    },
)
