"""Periodic deletion: active entries older than the window that were retrieved at most alpha times in it
are archived."""

import datetime

from django.db.models import Exists, Q

from curation.rules import lifecycle
from curation.models import EventAction, Entry, Status
from curation.selectors import withheld_by_skill

from .engine import Sweep, state_sweep, write_batch
from .expressions import recent_retrievals

NAME = "unused"
DESCRIPTION = "Archive active entries that agents have not been using."


def thresholds() -> str:
    p = lifecycle.policies()
    used = "never retrieved" if p.unused_max_retrievals == 0 else f"retrieved at most {p.unused_max_retrievals} times"
    return (
        f"Archives an active entry older than {p.unused_window_days:g} days that agents {used} in the last "
        f"{p.unused_window_days:g} days."
    )


def run(sweep: Sweep) -> None:
    policies = sweep.policies
    cutoff = sweep.as_of - datetime.timedelta(days=policies.unused_window_days)

    spared = Q(last_verified_at__isnull=False, last_verified_at__gt=cutoff) if policies.unused_spares_verified else Q()

    def matching(batch):
        return (
            Entry.objects.filter(batch, created_at__lte=cutoff)
            .exclude(spared)
            .exclude(Exists(withheld_by_skill()))  # not retrieved because a skill replaces it: not unused
            .annotate(recent=recent_retrievals(sweep.as_of, policies))
            .filter(recent__lte=policies.unused_max_retrievals)
        )

    def reason(row):
        return (
            f"unused: retrieved {row['recent']}× in the {policies.unused_window_days:g} days before "
            f"{sweep.as_of:%Y-%m-%d} (at most {policies.unused_max_retrievals} allowed)"
        )

    state_sweep(
        sweep,
        status=Status.ACTIVE,
        matching=matching,
        describe=lambda row: f"#{row['id']} archive: {reason(row)}",
        apply=lambda rows: write_batch(
            sweep,
            rows,
            expected_status=Status.ACTIVE,
            action=EventAction.ARCHIVE,
            reason_of=reason,
            values={"archive_reason": "unused"},
        ),
    )
