"""Rules of published memory versions, as pure functions: which fields of an entry agents read (and so a
release stores), what counts as a change, and the pre-publish checks' words."""

from __future__ import annotations

from dataclasses import dataclass

from curation.rules.access import scopes_overlap

# What an agent reads of an entry: a release stores these and compares these; any other change of the live
# row (its usage counters, its queue state) is not a change agents would see.
# Confidence is not among them: agents read it derived from the base and the verification, which decays
# without any change to release.
RELEASED_FIELDS = (
    "kind",
    "scope",
    "trigger",
    "content",
    "conditions",
    "boundary",
    "signal",
    "trust",
    "base_confidence",
    "last_verified_at",
    "fingerprint",
    "embedding",
)
SKILL_RELEASED_FIELDS = ("slug", "scope", "revision")
AUTO_PUBLISH_ACTOR = "auto-publish"


def released_values(row, names=RELEASED_FIELDS) -> dict:
    """The fields agents read of an entry (a live Entry or a ReleasedEntry row), comparable and showable."""
    return comparable_values({name: getattr(row, name) for name in names})


def comparable_values(values: dict) -> dict:
    """released_values of the fields as read (a row's values by name, as a values_list gives them): the
    same dict, made comparable and showable."""
    if "conditions" in values:
        values["conditions"] = list(values["conditions"] or [])
    if "base_confidence" in values:
        values["base_confidence"] = round(values["base_confidence"], 4)
    if values.get("last_verified_at") is not None:
        values["last_verified_at"] = values["last_verified_at"].isoformat()
    return values


@dataclass(frozen=True)
class FieldChange:
    name: str
    before: object
    after: object


@dataclass
class Change:
    """How one entry (or skill) differs between two versions, or between the published version and the
    draft: added (no before), removed (no after) or changed (the fields that differ)."""

    subject_id: int
    before: dict | None
    after: dict | None
    is_skill: bool = False
    cause: object = None  # the latest Event that made the draft differ (pending changes only)

    @property
    def fields(self) -> list[FieldChange]:
        """The fields that differ, of a changed one (those its values hold): worked out when shown, not for
        each of a publish's changes."""
        if self.before is None or self.after is None:
            return []
        return [
            FieldChange(name, self.before.get(name), self.after.get(name))
            for name in self.after
            if self.before.get(name) != self.after.get(name)
        ]

    @property
    def kind(self) -> str:
        return "added" if self.before is None else "removed" if self.after is None else "changed"

    @property
    def scope(self) -> str:
        return (self.after or self.before)["scope"]

    @property
    def title(self) -> str:
        shown = self.after or self.before
        return shown["slug"] if self.is_skill else shown["trigger"]


def change_between(subject_id: int, before: dict | None, after: dict | None, *, is_skill=False) -> Change | None:
    """The change from `before` to `after` (None: absent), or None when agents would see no difference."""
    if before == after:
        return None
    return Change(subject_id, before, after, is_skill=is_skill)


def change_counts(changes) -> dict:
    counts = {"added": 0, "changed": 0, "removed": 0}
    for change in changes:
        counts[change.kind] += 1
    return counts


@dataclass(frozen=True)
class Warning:
    """A pre-publish check's finding: the publisher must acknowledge it."""

    check: str
    entry_id: int | None  # None: a memory test's failure, about an answer rather than one entry
    text: str
    memory_test: int | None = None

    def as_json(self) -> dict:
        shown = {"check": self.check, "entry": self.entry_id, "text": self.text}
        return {**shown, "memory_test": self.memory_test} if self.memory_test is not None else shown

    @property
    def title(self) -> str:
        return CHECK_TITLES[self.check]

    @property
    def blocking(self) -> bool:
        """A refusal, not a warning: no acknowledgement publishes past it."""
        return self.check in BLOCKING_CHECKS


BLOCKING_CHECKS = frozenset({"forgotten"})
CHECK_TITLES = {
    "forgotten": "Repeats a forgotten lesson (not published)",
    "conflict": "Open conflict within the release",
    "failed_outcomes": "Recent task outcomes failed",
    "no_boundary": "No boundary (when it does not hold)",
    "memory_test": "A memory test fails on this release",
}


OTHER_SCOPES_SUMMARY = "a release of other scopes"


def concerns(version_prefix: str, reader_prefixes) -> bool:
    """Does a version published under `version_prefix` ("" for a whole publish) concern a reader limited to
    `reader_prefixes` (None: every scope)? Its summary and prefix are shown only to readers it concerns."""
    return (
        not version_prefix
        or reader_prefixes is None
        or any(scopes_overlap(version_prefix, mine) for mine in reader_prefixes)
    )


def summary_for(version_prefix: str, summary: str, reader_prefixes) -> str:
    """A version's summary as a reader reads it: a publish under other scopes says only that."""
    return summary if concerns(version_prefix, reader_prefixes) else OTHER_SCOPES_SUMMARY
