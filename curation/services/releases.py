"""Publishing and rolling back memory versions: what agents read changes here and nowhere else.

Publish: under a lock of the one pointer row, the pending changes (under a scope prefix, or all) become
version head+1, built on the *published* version (after a rollback that is not the head): each changed
entry's open row is closed at the new number and its new row opened, the pointer is switched, and the
Event written, all in one transaction. Agents read the pointer, so they see
the old version or the new one, never a mix. The work is proportional to the changes.

Rollback: the pointer goes back to an earlier version, with a reason and its Event; live rows are not
touched. What the rollback took away is pending again (the draft is read against the published version),
so the next publish offers it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from curation.infra.db_router import fence_replica_reads
from curation.rules import access, clock
from curation.models import (
    Entry,
    EventAction,
    MemoryVersion,
    PublishedVersion,
    ReleasedEntry,
    ReleasedSkill,
)
from curation.selectors import read_cache
from curation.selectors import releases as reads
from curation.rules.versions import (
    RELEASED_FIELDS,
    SKILL_RELEASED_FIELDS,
    change_counts,
    released_values,
)

from .events import actor_label_for, record_event


COPY_CHUNK = 5000  # ids per INSERT ... SELECT
ACKNOWLEDGED_KEPT = 200  # the warnings a version lists as acknowledged (their number is in its Event)


class UnacknowledgedWarnings(Exception):
    """The pre-publish checks found something the publisher has not acknowledged."""

    def __init__(self, warnings):
        self.warnings = warnings
        super().__init__(f"{len(warnings)} pre-publish warning(s) must be acknowledged before publishing.")


class OutsideScopes(Exception):
    """A lead limited to some scopes publishes under one of them, and cannot roll back everyone's memory."""


def _check_reach(actor, prefix: str | None) -> None:
    """A scoped lead publishes only under a prefix within their grants; a rollback (prefix None) switches
    every scope, so it is for an unrestricted lead."""
    prefixes = access.user_scope_prefixes(actor) if actor is not None else None
    if prefixes is None:
        return
    if prefix is None:
        raise OutsideScopes("Rolling back switches every scope: only a lead without scope limits may.")
    if not prefix or not access.covered_by_any(prefixes, prefix):
        raise OutsideScopes(f"You publish only under your scopes ({', '.join(prefixes)}): give one as the prefix.")


def publish_version(
    *,
    actor,
    summary: str,
    scope_prefix: str = "",
    acknowledge: bool = False,
    actor_label: str = "",
    entry_ids=None,
    also_entry_ids=(),
    at=None,
) -> MemoryVersion:
    """Publish the pending changes (under `scope_prefix`; only of `entry_ids` for auto-publish) as a new
    version. `also_entry_ids`: entries changed without an Event (a data fix by hand) to compare too.
    ValidationError when there is nothing to publish or no summary, or (`publish`) when the release would add,
    change or keep an entry that repeats a forgotten lesson (a blocking check); UnacknowledgedWarnings when a
    pre-publish check warns and `acknowledge` is not set."""
    now = at or clock.now()
    summary = (summary or "").strip()
    prefix = access.clean_scope(scope_prefix.strip().rstrip("/")) if scope_prefix.strip() else ""
    if not summary:
        raise ValidationError({"summary": ["Say what this release changes."]})
    _check_reach(actor, prefix)
    with transaction.atomic():
        pointer = _locked_pointer()
        published = pointer.version if pointer.version_id else None
        base, head = (published.number if published else 0), reads.head_number()
        seen_through = reads.last_event_id()
        candidates = reads.draft_candidates(published, prefix, also_entry_ids=also_entry_ids)
        if entry_ids is not None:
            candidates.entry_ids &= set(entry_ids)
            candidates.skill_ids = set()
        changes = reads.changes_of(base, candidates)
        if not changes:
            raise ValidationError(
                {
                    "scope_prefix": [
                        "Nothing to publish: the draft equals the published version"
                        + (f" under {prefix}." if prefix else ".")
                    ]
                }
            )
        warnings = reads.pre_publish_checks(changes, now=now, kept_under=None if entry_ids is not None else prefix)
        refused = [w for w in warnings if w.blocking]
        if refused:  # a forgotten lesson is never published, whatever is acknowledged
            raise ValidationError({"publish": [" ".join(w.text for w in refused)]})
        if warnings and not acknowledge:
            raise UnacknowledgedWarnings(warnings)
        whole = not prefix and entry_ids is None
        version = MemoryVersion.objects.create(
            number=head + 1,
            summary=summary,
            scope_prefix=prefix,
            based_on=published,
            published_by=actor,
            published_by_label=actor_label or actor_label_for(actor),
            acknowledged=[w.as_json() for w in warnings[:ACKNOWLEDGED_KEPT]],
            pending_from_event=seen_through + 1 if whole else (published.pending_from_event if published else 0),
            created_at=now,
            **change_counts(changes),
        )
        _write_rows(base, head, version.number, candidates, changes)
        _switch(pointer, version, now)
        record_event(
            version,
            actor=actor,
            actor_label=version.published_by_label,
            action=EventAction.VERSION_PUBLISHED,
            reason=summary,
            at=now,
            before={"published": base},
            after={
                "published": version.number,
                "scope_prefix": prefix,
                "warnings_acknowledged": len(warnings),
                **change_counts(changes),
            },
        )
    return version


def _write_rows(base: int, head: int, number: int, candidates, changes) -> None:
    """Version `number` = version `base` + the draft of the candidates (`changes`: how the draft differs
    from `base`, as changes_of found it: read once). The open rows are version `head`'s; where they differ
    from what `number` must hold (a changed candidate's draft, or what a rollback changed between base
    and head), the open row is closed at `number` and the new one opened."""
    drift_entries, drift_skills = reads.drift_between(base, head) if base != head else (set(), set())
    wanted = reads.rows_at(base, drift_entries)
    for change in changes:
        if not change.is_skill:
            wanted[change.subject_id] = change.after  # None: removed
    wanted = {i: values for i, values in wanted.items() if values is not None}
    changed = {c.subject_id for c in changes if not c.is_skill}
    close, new = _replacements(ReleasedEntry, "entry_id", changed | drift_entries, wanted, RELEASED_FIELDS)
    ReleasedEntry.objects.filter(pk__in=close).update(valid_to=number)
    from_live = [i for i in new if i in changed]
    _copy_rows(number, Entry._meta.db_table, "id", "version", from_live)
    base_rows = reads.row_ids_at(base, [i for i in new if i not in changed])
    _copy_rows(number, ReleasedEntry._meta.db_table, "entry_id", "entry_version", list(base_rows.values()))

    wanted_skills = {
        **reads.skill_rows_at(base, drift_skills - candidates.skill_ids),
        **reads.live_skill_values(candidates.skill_ids),
    }
    close, new = _replacements(
        ReleasedSkill, "skill_id", candidates.skill_ids | drift_skills, wanted_skills, SKILL_RELEASED_FIELDS
    )
    ReleasedSkill.objects.filter(pk__in=close).update(valid_to=number)
    versions = dict(reads.skill_versions(new))
    ReleasedSkill.objects.bulk_create(
        [ReleasedSkill(skill_id=i, valid_from=number, skill_version=versions.get(i, 0), **new[i]) for i in new]
    )


def _replacements(model, link: str, ids, wanted: dict, names) -> tuple[list[int], dict[int, dict]]:
    """The open rows to close and the new rows' values, where the open row is not what is wanted."""
    open_rows = {getattr(r, link): r for r in model.objects.filter(valid_to__isnull=True, **{f"{link}__in": ids})}
    close, new = [], {}
    for subject_id in ids:
        current, target = open_rows.get(subject_id), wanted.get(subject_id)
        if (released_values(current, names) if current else None) == target:
            continue
        if current:
            close.append(current.pk)
        if target:
            new[subject_id] = target
    return close, new


def _copy_rows(number: int, table: str, entry_column: str, version_column: str, ids: list[int]) -> None:
    """New released rows valid from `number`, copied in the database from the rows of `table` with these
    ids (live entries, or an earlier version's rows): one INSERT ... SELECT per chunk, no row through
    Python. The columns are the entry's own, redacted when it was written."""
    columns = ", ".join(RELEASED_FIELDS)
    with connection.cursor() as cursor:
        for start in range(0, len(ids), COPY_CHUNK):
            chunk = ids[start : start + COPY_CHUNK]
            if connection.vendor == "postgresql":  # one array parameter, not thousands of placeholders to parse
                where, params = "id = ANY(%s)", [number, chunk]
            else:
                where, params = f"id IN ({', '.join(['%s'] * len(chunk))})", [number, *chunk]
            cursor.execute(
                f"INSERT INTO {ReleasedEntry._meta.db_table} (entry_id, valid_from, entry_version, {columns}) "
                f"SELECT {entry_column}, %s, {version_column}, {columns} FROM {table} WHERE {where}",
                params,
            )


def _locked_pointer() -> PublishedVersion:
    """The pointer row, locked until the transaction ends (an unsaved one where none exists yet). Locked
    alone, its version read after: PostgreSQL re-reads a row it waited for, but a locking read joined to
    the version drops the row when the winner switched it to a version it just made, and the loser would
    then insert a second pointer."""
    pointer = PublishedVersion.objects.select_for_update().filter(pk=1).first()
    if pointer is None:
        return PublishedVersion(pk=1)
    pointer.version = MemoryVersion.objects.get(pk=pointer.version_id)
    return pointer


def _switch(pointer: PublishedVersion, version: MemoryVersion, now) -> None:
    pointer.version = version
    pointer.switched_at = now
    pointer.save()
    fence_replica_reads()  # agents read the new pointer on a replica only once it has replayed this
    read_cache.forget()  # every process reads the new number on its next request


def rollback_version(number: int, *, actor, reason: str, at=None) -> MemoryVersion:
    """Make version `number` the published one again. The live rows stay as they are; the entries and
    skills the switch changes are pending again: the draft still holds what was rolled back."""
    now = at or clock.now()
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["Say why you roll back."]})
    _check_reach(actor, None)
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
        _switch(pointer, target, now)
        record_event(
            target,
            actor=actor,
            action=EventAction.VERSION_ROLLED_BACK,
            reason=reason,
            at=now,
            before={"published": current.number},
            after={"published": number, **change_counts(changes)},
        )
    return target
