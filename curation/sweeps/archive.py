"""Archive: active entries whose decayed confidence fell below the archive threshold leave retrieval
(kept, revivable by fresh evidence)."""

from curation import lifecycle
from curation.models import EventAction, Entry, Status

from .engine import Sweep, state_sweep, write_batch
from .expressions import decayed_confidence

NAME = "archive"
DESCRIPTION = "Archive active entries whose decayed confidence is below the archive threshold."



def thresholds() -> str:
    return (f"Archives an active entry when its confidence has decayed below {lifecycle.rules().archive_below:g}; "
            "agents stop receiving it, and it can come back with new evidence.")


def run(sweep: Sweep) -> None:
    expression = decayed_confidence(sweep.as_of, sweep.rules)
    below = sweep.rules.archive_below

    def matching(batch):
        return Entry.objects.filter(batch).annotate(new_confidence=expression).filter(new_confidence__lt=below)

    state_sweep(
        sweep, status=Status.ACTIVE, matching=matching,
        describe=lambda e: f"#{e.pk} archive: decayed to {e.new_confidence:.3f} (below {below})",
        apply=lambda rows: write_batch(
            sweep, rows, expected_status=Status.ACTIVE, action=EventAction.ARCHIVE,
            reason_of=lambda e: f"decayed: confidence {e.new_confidence:.3f} is below {below}",
            values={"status": Status.ARCHIVED, "confidence": expression, "archived_at": sweep.as_of,
                    "archive_reason": "decayed"},
        ),
    )
