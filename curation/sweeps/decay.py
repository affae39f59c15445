"""Decay: every active entry's confidence, recomputed from its base and the days since it was last verified.
It changes only the derived `confidence`, so it bumps no version and writes no Event."""

from django.db import transaction
from django.db.models import F

from curation import lifecycle
from curation.models import Entry, Status
from curation.services.entry_writes import set_decayed_confidence

from .engine import Sweep, keyset_batches
from .expressions import decayed_confidence

NAME = "decay"
DESCRIPTION = "Recompute every active entry's confidence from its base and the days since it was last verified."



def thresholds() -> str:
    r = lifecycle.rules()
    return (f"Each active entry keeps {r.decay_factor:g} of its confidence for every {r.decay_period_days:g} days since "
            f"it was last verified (an approval, a recheck or supporting evidence), never below {r.floor:g}.")


def run(sweep: Sweep) -> None:
    expression = decayed_confidence(sweep.as_of, sweep.rules)
    for batch, count in keyset_batches(Status.ACTIVE, sweep.batch_size):
        stale = Entry.objects.filter(batch).alias(new=expression).exclude(confidence=F("new"))
        if sweep.dry_run:
            for e in stale.annotate(new_confidence=expression).order_by("id")[:sweep.samples_left]:
                sweep.sample(f"#{e.pk} confidence {e.confidence:.3f} → {e.new_confidence:.3f}")
            changed = stale.count()
        else:
            with transaction.atomic():
                changed = set_decayed_confidence(stale, expression)
        sweep.batch_done(count, changed)
