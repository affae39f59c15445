"""Archive: active entries whose decayed confidence fell below the archive threshold leave retrieval
(kept, revivable by fresh evidence)."""

from django.db.models import Q

from curation.rules import lifecycle
from curation.models import EventAction, Entry, Status
from curation.selectors.confidence import RowConfidence, keyed_under_other_settings

from curation.services.entry_writes import ROW_COLUMNS

from .engine import Sweep, state_sweep, write_batch

NAME = "archive"
DESCRIPTION = "Archive active entries whose decayed confidence is below the archive threshold."


def thresholds() -> str:
    return (
        f"Archives an active entry when its confidence has decayed below {lifecycle.rules().archive_below:g}; "
        "agents stop receiving it, and it can come back with new evidence."
    )


def run(sweep: Sweep) -> None:
    below = sweep.rules.archive_below
    expression = RowConfidence(sweep.as_of, sweep.rules)

    def matching(batch):
        return Entry.objects.filter(batch).annotate(new_confidence=expression).filter(new_confidence__lt=below)

    # The decay index finds what may have crossed the threshold (and keys written under other decay
    # settings, which it cannot judge); the exact rule then decides each of them.
    may_cross = Q(decay_key__lt=lifecycle.key_below(below, sweep.as_of, sweep.rules)) | keyed_under_other_settings(
        sweep.rules
    )
    state_sweep(
        sweep,
        status=Status.ACTIVE,
        matching=matching,
        chosen=may_cross,
        fields=ROW_COLUMNS,  # what the write checks; the reasons read only the confidence
        describe=lambda row: f"#{row['id']} archive: decayed to {row['new_confidence']:.3f} (below {below})",
        apply=lambda rows: write_batch(
            sweep,
            rows,
            expected_status=Status.ACTIVE,
            action=EventAction.ARCHIVE,
            reason_of=lambda row: f"decayed: confidence {row['new_confidence']:.3f} is below {below}",
            values={"archive_reason": "decayed"},
        ),
    )
