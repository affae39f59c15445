"""Capacity: a capped scope (the scope and everything below it) over its budget archives its weakest active
entries until it fits. Each is "displaced by" the scope's newcomer, which is never a victim itself."""

from django.db import transaction
from django.db.models import QuerySet

from curation.rules import lifecycle
from curation.rules.access import scope_q
from curation.models import EventAction, Entry, Event, Status

from .engine import Sweep, locked, write_batch
from .expressions import evidence_strength, merit

NAME = "capacity"
DESCRIPTION = "Archive the weakest active entries of a scope that is over its capacity budget."


def newcomer(active: QuerySet) -> int:
    """The entry whose arrival put the scope over budget: the one most recently put into the active set by
    a decision or a revival (by its Event), else the newest row."""
    latest = (
        Event.objects.filter(entry__in=active, action__in=EventAction.activating())
        .order_by("-created_at", "-id")
        .values_list("entry_id", flat=True)
        .first()
    )
    return latest or active.order_by("-id").values_list("id", flat=True).first()


def _fit(sweep: Sweep, prefix: str, cap: int) -> None:
    """Archive `prefix`'s weakest entries in batches, each in its own transaction, until it fits its cap."""
    first = True
    while True:
        with transaction.atomic():
            active = Entry.objects.filter(scope_q([prefix]), status=Status.ACTIVE)
            count = active.count()
            examined = count if first else 0
            first = False
            excess = count - int(cap)
            if excess <= 0:
                sweep.examined += examined
                return
            newest = newcomer(active)
            victims = (
                active.exclude(pk=newest)
                .annotate(strength=evidence_strength(), merit=merit(sweep.as_of, sweep.rules))
                .order_by("strength", "merit", "id")
            )
            if sweep.policies.capacity_spares_unretrieved:  # judged only once agents have had a chance to use it
                victims = victims.exclude(retrieval_count=0)
            if sweep.dry_run:
                for e in victims[: min(excess, sweep.samples_left)]:
                    sweep.sample(f"#{e.pk} archive: displaced by #{newest} ({prefix} holds {count}, cap {cap})")
                sweep.examined += examined
                sweep.changed += min(excess, count - 1)
                return
            ids = list(victims.values_list("id", flat=True)[: min(excess, sweep.batch_size)])
            if not ids:  # only the newest entry is left, and the budget is 0: nothing may displace it
                sweep.examined += examined
                return
            changed = write_batch(
                sweep,
                locked(Entry.objects.filter(pk__in=ids)),
                expected_status=Status.ACTIVE,
                action=EventAction.ARCHIVE,
                reason_of=lambda e: f"capacity: {prefix} holds {count} active entries, its budget is {cap}",
                values={"archive_reason": f"displaced by #{newest}"},
            )
        sweep.batch_done(examined, changed)


def thresholds() -> str:
    budgets = lifecycle.policies().scope_capacity
    if not budgets:
        return "No scope has a capacity budget, so this archives nothing."
    listed = ", ".join(f"{scope} at most {cap} active entries" for scope, cap in sorted(budgets.items()))
    return (
        f"Archives the weakest active entries (lowest confidence, weakest evidence) of a scope over its budget "
        f"until it fits, never the newest arrival: {listed}."
    )


def run(sweep: Sweep) -> None:
    for prefix, cap in sorted(sweep.policies.scope_capacity.items()):
        _fit(sweep, prefix, cap)
    sweep.batch_done()
