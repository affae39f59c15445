"""An entry's history as deltas, as pure functions.

An Event about an entry's write stores what that write changed: in `before` the old values of the fields
it changed, in `after` their new values (and any words the write adds, such as the conflict it decided),
and the entry's version in its own column. An insert's `after` is the whole first version. Any version is
then the fold of the Events up to it: each one's `after` laid over the one before.

An Event written before histories were deltas carries two whole snapshots; its `after` laid over the
previous version gives the same result, so `fold` reads both shapes.

Pure: no queries."""

from __future__ import annotations

from typing import Iterable, Mapping

# The state of an entry a version is made of: Entry.snapshot() is built from this list (each key read off
# its column, the confidence derived), so the snapshot and the fold cannot disagree. `version` is the Event's
# own column (entry_version), so a delta never carries it.
STATE_KEYS = (
    "status",
    "kind",
    "scope",
    "trigger",
    "content",
    "conditions",
    "boundary",
    "recheck_when",
    "review_by",
    "signal",
    "trust",
    "base_confidence",
    "confidence",
    "last_verified_at",
    "decay_stopped_at",
    "queue_reason",
    "queued_at",
    "archive_reason",
    "first_approval_by",
    "first_approval_at",
    "supersedes",
    "quarantined",
)
VERSION_KEY = "version"


def delta(before: Mapping | None, after: Mapping) -> tuple[dict | None, dict]:
    """What an Event stores of a write from `before` (None: an insert) to `after` (each an entry's snapshot,
    `after` with any words the write adds): (old values, new values) of the keys that differ, without the
    version. An insert stores its whole first version."""
    if before is None:
        return None, {k: v for k, v in after.items() if k != VERSION_KEY}
    changed = [k for k, v in after.items() if k != VERSION_KEY and (k not in before or before[k] != v)]
    return {k: before[k] for k in changed if k in before}, {k: after[k] for k in changed}


def fold(deltas: Iterable[tuple[int | None, Mapping | None]]) -> list[tuple[int | None, dict]]:
    """Every version from the Events' (version, after) in the order they were written, oldest first: each
    `after` laid over the state before it, its state keys only (the words a write adds are not the entry's).
    An Event whose `after` is a whole snapshot (written before deltas) reads the same way."""
    state: dict = {}
    versions = []
    for version, after in deltas:
        state = {**state, **{k: v for k, v in (after or {}).items() if k in STATE_KEYS}}
        versions.append((version, {**state, VERSION_KEY: version}))
    return versions


def version_at(deltas: Iterable[tuple[int | None, Mapping | None]], version: int) -> dict | None:
    """The entry as it was at `version` (None: no Event wrote that version)."""
    for number, state in reversed(fold(deltas)):
        if number == version:
            return state
    return None
