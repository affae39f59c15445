"""Publishing and rolling back memory versions: what agents read changes here and nowhere else.

Publish: under a lock of the one pointer row, the pending changes (under a scope prefix, or all) become
version head+1, built on the *published* version (after a rollback that is not the head): each changed
entry's open row is closed at the new number and its new row opened, the marks it took are stamped, the
pointer is switched, and the Event written, all in one transaction. Agents read the pointer, so they see
the old version or the new one, never a mix. The work is proportional to the changes.

Rollback: the pointer goes back to an earlier version, with a reason and its Event; live rows are not
touched. What the rollback took away is marked pending again, so the next publish offers it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from curation import access
from curation.models import (
    EventAction, MemoryVersion, PendingRelease, PublishedVersion, ReleasedEntry, ReleasedSkill,
)
from curation.selectors import releases as reads
from curation.versions import (
    RELEASED_FIELDS, SKILL_RELEASED_FIELDS, change_between, change_counts, released_values,
)

from .events import actor_label_for, record_event


class UnacknowledgedWarnings(Exception):
    """The pre-publish checks found something the publisher has not acknowledged."""

    def __init__(self, warnings):
        self.warnings = warnings
        super().__init__(f"{len(warnings)} pre-publish warning(s) must be acknowledged before publishing.")


def _values_for_row(values: dict, names) -> dict:
    """Released values back as column values (the stored time is a datetime)."""
    row = {name: values[name] for name in names}
    if row.get("last_verified_at"):
        row["last_verified_at"] = timezone.datetime.fromisoformat(row["last_verified_at"])
    return row


def publish_version(*, actor, summary: str, scope_prefix: str = "", acknowledge: bool = False,
                    actor_label: str = "", entry_ids=None, at=None) -> MemoryVersion:
    """Publish the pending changes (under `scope_prefix`, or only of `entry_ids` for auto-publish) as a
    new version. ValidationError when there is nothing to publish or no summary; UnacknowledgedWarnings
    when a pre-publish check warns and `acknowledge` is not set."""
    now = at or timezone.now()
    summary = (summary or "").strip()
    prefix = access.clean_scope(scope_prefix.strip().rstrip("/")) if scope_prefix.strip() else ""
    if not summary:
        raise ValidationError({"summary": ["Say what this release changes."]})
    with transaction.atomic():
        pointer = _locked_pointer()
        published = pointer.version if pointer.version_id else None
        base, head = (published.number if published else 0), reads.head_number()
        number = head + 1
        marks = reads.pending_marks(prefix)
        if entry_ids is not None:
            marks.entry_ids &= set(entry_ids)
            marks.skill_ids = set()
        changes = _changes(base, marks)
        if not changes:
            raise ValidationError({"scope_prefix": ["Nothing to publish: the draft equals the published version"
                                                    + (f" under {prefix}." if prefix else ".")]})
        warnings = reads.pre_publish_checks(changes, now=now)
        if warnings and not acknowledge:
            raise UnacknowledgedWarnings(warnings)
        version = MemoryVersion.objects.create(
            number=number, summary=summary, scope_prefix=prefix, based_on=published, published_by=actor,
            published_by_label=actor_label or actor_label_for(actor), acknowledged=[w.as_json() for w in warnings],
            created_at=now, **change_counts(changes),
        )
        _write_rows(base, head, number, marks)
        taken = PendingRelease.objects.filter(released_in__isnull=True)
        if entry_ids is not None:
            taken = taken.filter(entry_id__in=marks.entry_ids)
        else:
            taken = taken.filter(pk__in=marks.mark_ids)
        taken.update(released_in=version)
        _switch(pointer, version, now)
        record_event(version, actor=actor, actor_label=version.published_by_label,
                     action=EventAction.VERSION_PUBLISHED, reason=summary, at=now,
                     before={"published": base}, after={"published": number, "scope_prefix": prefix,
                                                        **change_counts(changes)})
    return version


def _changes(base: int, marks):
    """The changes of the marked entries and skills against the published version."""
    before = reads.rows_at(base, marks.entry_ids) if marks.entry_ids else {}
    after = reads.live_released_values(marks.entry_ids) if marks.entry_ids else {}
    changes = [c for i in sorted(marks.entry_ids) if (c := change_between(i, before.get(i), after.get(i)))]
    skills_before = reads.skill_rows_at(base, marks.skill_ids) if marks.skill_ids else {}
    skills_after = reads.live_skill_values(marks.skill_ids) if marks.skill_ids else {}
    changes += [c for i in sorted(marks.skill_ids)
                if (c := change_between(i, skills_before.get(i), skills_after.get(i), is_skill=True))]
    return changes


def _write_rows(base: int, head: int, number: int, marks) -> None:
    """Version `number` = version `base` + the marked changes. The open rows are version `head`'s; where
    they differ from what `number` must hold (a marked change, or the drift of a rollback between base
    and head), the open row is closed at `number` and the new one opened."""
    drift_entries, drift_skills = reads.drift_between(base, head) if base != head else (set(), set())
    entry_ids = marks.entry_ids | drift_entries
    wanted = {**reads.rows_at(base, drift_entries - marks.entry_ids), **reads.live_released_values(marks.entry_ids)}
    open_rows = {r.entry_id: r for r in ReleasedEntry.objects.filter(valid_to__isnull=True, entry_id__in=entry_ids)}
    close, new = [], []
    for entry_id in entry_ids:
        current = open_rows.get(entry_id)
        target = wanted.get(entry_id)
        if (released_values(current) if current else None) == target:
            continue
        if current:
            close.append(current.pk)
        if target:
            new.append(ReleasedEntry(entry_id=entry_id, valid_from=number, entry_version=0,
                                     **_values_for_row(target, RELEASED_FIELDS)))
    ReleasedEntry.objects.filter(pk__in=close).update(valid_to=number)
    _stamp_entry_versions(new)
    ReleasedEntry.objects.bulk_create(new, batch_size=1000)

    skill_ids = marks.skill_ids | drift_skills
    wanted_skills = {**reads.skill_rows_at(base, drift_skills - marks.skill_ids),
                     **reads.live_skill_values(marks.skill_ids)}
    open_skills = {r.skill_id: r for r in ReleasedSkill.objects.filter(valid_to__isnull=True, skill_id__in=skill_ids)}
    close, new_skills = [], []
    for skill_id in skill_ids:
        current = open_skills.get(skill_id)
        target = wanted_skills.get(skill_id)
        if (released_values(current, SKILL_RELEASED_FIELDS) if current else None) == target:
            continue
        if current:
            close.append(current.pk)
        if target:
            new_skills.append(ReleasedSkill(skill_id=skill_id, valid_from=number, skill_version=0, **target))
    ReleasedSkill.objects.filter(pk__in=close).update(valid_to=number)
    ReleasedSkill.objects.bulk_create(new_skills)


def _stamp_entry_versions(rows: list[ReleasedEntry]) -> None:
    """Each new row records the entry's version it was read at (the entry page links to it)."""
    versions = dict(reads.entry_versions([r.entry_id for r in rows]))
    for row in rows:
        row.entry_version = versions.get(row.entry_id, 0)


def _locked_pointer() -> PublishedVersion:
    """The pointer row, locked until the transaction ends (an unsaved one where none exists yet)."""
    return PublishedVersion.objects.select_for_update().select_related("version").filter(pk=1).first() \
        or PublishedVersion(pk=1)


def _switch(pointer: PublishedVersion, version: MemoryVersion, now) -> None:
    pointer.version = version
    pointer.switched_at = now
    pointer.save()


def rollback_version(number: int, *, actor, reason: str, at=None) -> MemoryVersion:
    """Make version `number` the published one again. The live rows stay as they are; the entries and
    skills the switch changes are marked pending again, so the draft still holds what was rolled back."""
    now = at or timezone.now()
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["Say why you roll back."]})
    with transaction.atomic():
        pointer = _locked_pointer()
        try:
            target = reads.version_by_number(number)
        except MemoryVersion.DoesNotExist:
            raise ValidationError({"version": [f"No memory version {number}."]}) from None
        if not pointer.version_id:
            raise ValidationError({"version": ["No version is published yet."]})
        current = pointer.version
        if target.pk == current.pk:
            raise ValidationError({"version": [f"Version {number} is already the published one."]})
        changes = reads.version_diff(current.number, number)
        PendingRelease.objects.bulk_create(
            [PendingRelease(entry_id=c.subject_id, created_at=now) for c in changes if not c.is_skill]
            + [PendingRelease(skill_id=c.subject_id, created_at=now) for c in changes if c.is_skill])
        _switch(pointer, target, now)
        record_event(target, actor=actor, action=EventAction.VERSION_ROLLED_BACK, reason=reason, at=now,
                     before={"published": current.number},
                     after={"published": number, **change_counts(changes)})
    return target
