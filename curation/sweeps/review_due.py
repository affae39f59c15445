"""Review due: active entries whose review date has passed go back to the candidates queue for a recheck."""

from django.db.models import F, Q

from curation.models import EventAction, Entry, QueueReason, Status

from .engine import Sweep, state_sweep, write_batch

NAME = "review_due"
DESCRIPTION = "Send active entries whose review date has passed back to the candidates queue."


def thresholds() -> str:
    return (
        "Sends an active entry back to the candidates queue once the review date it was given has passed, unless a "
        "reviewer verified it on or after that date."
    )


def run(sweep: Sweep) -> None:
    today = sweep.as_of.date()

    def matching(batch):
        return Entry.objects.filter(batch, review_by__lt=today, queued_at__isnull=True).filter(
            Q(last_verified_at__isnull=True) | Q(last_verified_at__date__lt=F("review_by"))
        )

    def reason(row):
        return f"review date {row['review_by']:%Y-%m-%d} has passed"

    state_sweep(
        sweep,
        status=Status.ACTIVE,
        matching=matching,
        describe=lambda row: f"#{row['id']} recheck: {reason(row)}",
        apply=lambda rows: write_batch(
            sweep,
            rows,
            expected_status=Status.ACTIVE,
            action=EventAction.QUEUE_RECHECK,
            reason_of=reason,
            values={"queue_reason": QueueReason.RECHECK_REVIEW_DUE},
        ),
    )
