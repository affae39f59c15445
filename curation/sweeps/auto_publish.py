"""Auto-publish: release the low-impact pending changes on a schedule, so agents get them without a lead.

Low-impact (the AUTO_PUBLISH_ACTIONS setting): an entry whose every Event since the
published version is one of those actions (an outcome that succeeded, new evidence, a revival), that stays
in the release (a removal waits), and that no pre-publish check warns about. Everything else, approvals,
edits, retirements, merges and skills, waits for a lead on the releases page. The publish is an Event with
the actor `auto-publish`. A memory test that fails on the version about to be published holds the whole
publish until a lead acknowledges it on the releases page: the run says which, and the failures are Events
of the tests."""

from django.core.exceptions import ValidationError

from curation.rules import config
from curation.models import EventAction
from curation.selectors import releases
from curation.services.releases import UnacknowledgedWarnings, publish_version
from curation.rules.versions import AUTO_PUBLISH_ACTOR

from .engine import Sweep

NAME = "auto_publish"
DESCRIPTION = "Publish the low-impact pending changes (outcomes, evidence, revivals) as a new memory version."


def thresholds() -> str:
    actions = ", ".join(EventAction(a).label for a in config.AUTO_PUBLISH_ACTIONS.value)
    return (
        f"Publishes a new memory version when every change of an entry since the last one is low-impact ({actions}); "
        "anything a reviewer decided waits for a lead to publish."
    )


def run(sweep: Sweep) -> None:
    changes = releases.pending_changes()
    low = releases.low_impact(changes, config.AUTO_PUBLISH_ACTIONS.value)
    for change in low[: sweep.samples_left]:
        sweep.sample(f"#{change.subject_id} {change.kind}: " + ", ".join(f.name for f in change.fields))
    if low and not sweep.dry_run:
        try:
            publish_version(
                actor=None,
                actor_label=AUTO_PUBLISH_ACTOR,
                entry_ids=[c.subject_id for c in low],
                summary=f"Auto-publish: {len(low)} low-impact change{'s' if len(low) != 1 else ''}.",
            )
        except ValidationError:  # a lead published them meanwhile
            low = []
        except UnacknowledgedWarnings as held:  # a memory test fails: a lead decides on the releases page
            for warning in held.warnings[: sweep.samples_left]:
                sweep.sample(f"held for a lead: {warning.text}")
            low = []
    sweep.batch_done(examined=len(changes), changed=len(low))
