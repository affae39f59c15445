"""Decay: an active entry's confidence falls with the days since it was last verified. It is derived where
it is read (Entry.confidence_at), so the passing days rewrite nothing; this sweep keeps the decay index
(`decay_key`) in step with the decay settings, and reports what fell under the retrieval floor in the
day before its as-of time. It changes no state, so it bumps no version and writes no Event."""

import datetime

from django.db import transaction
from django.db.models import Count, Window

from curation.rules import lifecycle
from curation.models import Entry, Status
from curation.selectors.confidence import RowConfidence, keyed_under_other_settings
from curation.services.entry_writes import rewrite_decay_keys

from .engine import Sweep

NAME = "decay"
DESCRIPTION = (
    "Confidence decays with the days since an entry was last verified; this keeps the decay index in "
    "step with the settings and reports what fell under the retrieval floor today."
)

DAY = datetime.timedelta(days=1)


def thresholds() -> str:
    r = lifecycle.rules()
    return (
        f"Each active entry keeps {r.decay_factor:g} of its confidence for every {r.decay_period_days:g} days since "
        f"it was last verified (an approval, a recheck or supporting evidence), never below {r.floor:g}; "
        f"under {r.retrieve_at_least:g} agents stop receiving it."
    )


def run(sweep: Sweep) -> None:
    rate = lifecycle.decay_rate(sweep.rules)
    active = Entry.objects.filter(status=Status.ACTIVE)
    # Keys written under other decay settings (the settings changed since): rewritten, a batch at a time.
    stale = active.filter(keyed_under_other_settings(sweep.rules))
    if sweep.dry_run:
        for pk in stale.order_by("id").values_list("id", flat=True)[: sweep.samples_left]:
            sweep.sample(f"#{pk} decay index written under other decay settings: to rewrite")
        count = stale.count()
        sweep.batch_done(count, count)
    else:
        while ids := list(stale.order_by("id").values_list("id", flat=True)[: sweep.batch_size]):
            with transaction.atomic():
                changed = rewrite_decay_keys(Entry.objects.filter(pk__in=ids))
            sweep.batch_done(len(ids), changed)
    # What fell under the retrieval floor in the day before the as-of time: an index range of keys, judged by
    # the exact rule in the same statement, which counts them all and answers the first few to describe.
    floor = sweep.rules.retrieve_at_least
    found = 0
    if floor > 0:
        crossed = (
            active.filter(
                decay_key__gte=lifecycle.key_below(floor, sweep.as_of - DAY, sweep.rules),
                decay_key__lt=lifecycle.key_below(floor, sweep.as_of, sweep.rules),
                decay_rate=rate,
            )
            .annotate(now=RowConfidence(sweep.as_of, sweep.rules), before=RowConfidence(sweep.as_of - DAY, sweep.rules))
            .filter(now__lt=floor, before__gte=floor)
            .annotate(found=Window(Count("*")))
            .order_by("id")
            .values_list("id", "now", "found")
        )
        for pk, now, found in crossed[: max(1, sweep.samples_left)]:
            sweep.sample(
                f"#{pk} confidence {now:.3f}: under the retrieval floor {floor:g}, agents no longer receive it"
            )
    sweep.batch_done(found, last=True)
