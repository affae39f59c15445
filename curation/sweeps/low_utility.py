"""History-based deletion: entries retrieved at least n times whose average utility is below beta are
archived and queued for a reviewer to keep or retire."""

from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce

from curation.rules import lifecycle
from curation.models import EventAction, Entry, QueueReason, Status

from .engine import Sweep, state_sweep, write_batch

NAME = "low_utility"
DESCRIPTION = "Archive entries that agents often retrieve but report as unhelpful; queue them for a recheck."


def thresholds() -> str:
    p = lifecycle.policies()
    return (
        f"Archives an entry retrieved at least {p.low_utility_min_retrievals} times whose average reported "
        f"usefulness is below {p.low_utility_below:g} (0 useless, 1 useful), and queues it for a reviewer "
        "to keep or retire."
    )


def run(sweep: Sweep) -> None:
    policies = sweep.policies

    def matching(batch):
        return Entry.objects.filter(
            batch,
            retrieval_count__gte=policies.low_utility_min_retrievals,
            utility_n__gt=0,
            utility_sum__lt=Value(policies.low_utility_below - lifecycle.EPSILON) * F("utility_n"),
        )

    def reason(row):
        return (
            f"low utility: average {row['utility_sum'] / row['utility_n']:.2f} over {row['utility_n']} outcomes "
            f"is below {policies.low_utility_below}"
        )

    state_sweep(
        sweep,
        status=Status.ACTIVE,
        matching=matching,
        describe=lambda row: f"#{row['id']} archive and recheck: {reason(row)}",
        apply=lambda rows: write_batch(
            sweep,
            rows,
            expected_status=Status.ACTIVE,
            action=EventAction.ARCHIVE,
            reason_of=reason,
            values={
                "archive_reason": "low utility",
                "queued_at": Coalesce(F("queued_at"), Value(sweep.as_of, output_field=DateTimeField())),
                "queue_reason": QueueReason.RECHECK_LOW_UTILITY,
            },
        ),
    )
