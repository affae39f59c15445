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

from dataclasses import dataclass

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
from curation.selectors import memory_tests as test_reads
from curation.selectors import releases as reads
from curation.selectors.memory_tests import TestResult
from curation.selectors.sql import id_in_sql, id_set_param
from curation.rules.versions import (
    RELEASED_FIELDS,
    SKILL_RELEASED_FIELDS,
    change_counts,
    released_values,
)

from .events import actor_label_for, record_event
from .memory_tests import record_acknowledgements, record_runs


ACKNOWLEDGED_KEPT = 200  # the warnings a version lists as acknowledged (their number is in its Event)


class UnacknowledgedWarnings(Exception):
    """The pre-publish checks found something the publisher has not acknowledged (`failed_tests`: the memory
    tests among them)."""

    def __init__(self, warnings, failed_tests=()):
        self.warnings = warnings
        self.failed_tests = list(failed_tests)
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
        raise OutsideScopes("Rolling back switches every scope: only a lead granted every scope may.")
    if not prefix or not access.covered_by_any(prefixes, prefix):
        raise OutsideScopes(f"You publish only under your scopes ({access.reach_of(actor)}): give one as the prefix.")


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
    pre-publish check warns, or a memory test fails on the version about to be published, and `acknowledge`
    is not set. The memory tests the release touches run on its own rows, written before the pointer moves;
    their results are Events about the tests and the version (and, on a refusal, the failures that held it)."""
    now = at or clock.now()
    summary = (summary or "").strip()
    prefix = access.clean_scope(scope_prefix.rstrip("/")) if scope_prefix.strip() else ""
    if not summary:
        raise ValidationError({"summary": ["Say what this release changes."]})
    _check_reach(actor, prefix)
    label = actor_label or actor_label_for(actor)
    try:
        with transaction.atomic():
            draft = _draft(prefix, entry_ids, also_entry_ids, now)
            refused = [w for w in draft.warnings if w.blocking]
            if refused:  # a forgotten lesson is never published, whatever is acknowledged
                raise ValidationError({"publish": [" ".join(w.text for w in refused)]})
            number = draft.head + 1
            _write_rows(draft.base, draft.head, number, draft.candidates, draft.changes)
            results = test_reads.run_tests(test_reads.tests_touched_by(draft.changes), number, shown_as=number)
            failed = [r for r in results if not r.passed]
            warnings = draft.warnings + [test_reads.as_warning(r) for r in failed]
            if warnings and not acknowledge:  # the rows just written go with the transaction
                raise UnacknowledgedWarnings(warnings, failed)
            whole = not prefix and entry_ids is None
            version = MemoryVersion.objects.create(
                number=number,
                summary=summary,
                scope_prefix=prefix,
                based_on=draft.published,
                published_by=actor,
                published_by_label=label,
                acknowledged=[w.as_json() for w in warnings[:ACKNOWLEDGED_KEPT]],
                pending_from_event=draft.seen_through + 1
                if whole
                else (draft.published.pending_from_event if draft.published else 0),
                created_at=now,
                **change_counts(draft.changes),
            )
            _switch(draft.pointer, version, now)
            record_event(
                version,
                actor=actor,
                actor_label=label,
                action=EventAction.VERSION_PUBLISHED,
                reason=summary,
                at=now,
                before={"published": draft.base},
                after={
                    "published": version.number,
                    "scope_prefix": prefix,
                    "warnings_acknowledged": len(warnings),
                    "memory_tests": {"passed": len(results) - len(failed), "failed": len(failed)},
                    **change_counts(draft.changes),
                },
            )
            record_runs(results, actor=actor, actor_label=label, version=version, at=now)
            record_acknowledgements(failed, actor=actor, actor_label=label, version=version, at=now)
    except UnacknowledgedWarnings as refusal:
        # What held the publish stays in the tests' history, though the version it ran on was not kept.
        record_runs(refusal.failed_tests, actor=actor, actor_label=label, at=now)
        raise
    return version


@dataclass
class _Draft:
    """What a publish starts from, read under the pointer's lock: the published version, the head, the
    changes of the draft and the pre-publish checks' warnings on them."""

    pointer: PublishedVersion
    published: MemoryVersion | None
    base: int
    head: int
    seen_through: int
    candidates: reads.Candidates
    changes: list
    warnings: list


def _draft(prefix: str, entry_ids, also_entry_ids, now) -> _Draft:
    """Lock the pointer and read the draft; ValidationError when it equals the published version. Call it
    inside the publish's transaction."""
    pointer = _locked_pointer()
    published = pointer.version if pointer.version_id else None
    if published is not None:  # read with the version, after the lock
        base, head, seen_through = published.number, published.head, published.events_through or 0
    else:  # nothing published (an emptied database): no version to read them with
        base, head, seen_through = 0, reads.head_number(), reads.last_event_id()
    candidates = reads.draft_candidates(published, prefix, also_entry_ids=also_entry_ids, head=head)
    if entry_ids is not None:
        candidates.entry_ids &= set(entry_ids)
        candidates.skill_ids = set()
    changes = reads.changes_of(base, candidates, fields=reads.PUBLISH_FIELDS)
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
    return _Draft(pointer, published, base, head, seen_through, candidates, changes, warnings)


class _DraftBuilt(Exception):
    """Leaves the transaction of a draft built only to be tested, with what the tests found."""

    def __init__(self, results):
        self.results = results


def memory_tests_on_draft(*, scope_prefix: str = "", tests=None, at=None) -> list[TestResult]:
    """Memory tests run on the version a publish (under `scope_prefix`) would make: built as the publish builds
    it, tested, and rolled back (nothing is kept, no Event is written; the pointer is locked meanwhile).
    `tests`: the tests to run (default: those the changes touch). With nothing pending the draft is the
    published version: the given tests run on it, and the default is none."""
    now = at or clock.now()
    prefix = access.clean_scope(scope_prefix.rstrip("/")) if scope_prefix.strip() else ""
    try:
        with transaction.atomic():
            draft = _draft(prefix, None, (), now)
            chosen = test_reads.tests_touched_by(draft.changes) if tests is None else list(tests)
            if not chosen:
                return []
            _write_rows(draft.base, draft.head, draft.head + 1, draft.candidates, draft.changes)
            raise _DraftBuilt(test_reads.run_tests(chosen, draft.head + 1))
    except _DraftBuilt as built:
        return built.results
    except ValidationError:  # nothing pending: the draft is the published version
        number = reads.published_number()
        return test_reads.run_tests(tests, number, shown_as=number) if tests and number else []


def _write_rows(base: int, head: int, number: int, candidates, changes) -> None:
    """Version `number` = version `base` + the draft of the candidates (`changes`: how the draft differs
    from `base`, as changes_of found it: read once). The open rows are version `head`'s; where they differ
    from what `number` must hold (a changed candidate's draft, or what a rollback changed between base
    and head), the open row is closed at `number` and the new one opened."""
    drift_entries, drift_skills = reads.drift_between(base, head) if base != head else (set(), set())
    # Outside the drift, a changed entry's open row is its row in `base`, the one changes_of compared the
    # draft with: it is closed and the draft's row copied from the live one, set-based, no row read again.
    plain = [c for c in changes if not c.is_skill and c.subject_id not in drift_entries]
    _close_open_rows(number, [c.subject_id for c in plain if c.before is not None])
    from_live = [c.subject_id for c in plain if c.after is not None]
    # What a rollback changed between base and head: the open row compared with what `number` must hold.
    wanted = reads.rows_at(base, drift_entries)
    for change in changes:
        if not change.is_skill and change.subject_id in drift_entries:
            wanted[change.subject_id] = change.after  # None: removed
    wanted = {i: values for i, values in wanted.items() if values is not None}
    changed = {c.subject_id for c in changes if not c.is_skill}
    close, new = _replacements(ReleasedEntry, "entry_id", drift_entries, wanted, RELEASED_FIELDS)
    ReleasedEntry.objects.filter(pk__in=close).update(valid_to=number)
    from_live += [i for i in new if i in changed]
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


def _ids_where(column: str, ids: list[int]) -> tuple[str, list]:
    """The condition on `column` for these ids, for one statement whatever their number: one parameter
    (on PostgreSQL an array; elsewhere a JSON list, as SQLite takes no more than 32,766 placeholders)."""
    vendor = connection.vendor
    return id_in_sql(vendor, column), [id_set_param(vendor, ids)]


def _close_open_rows(number: int, entry_ids: list[int]) -> None:
    """These entries' open rows end at version `number`: one UPDATE on the open-row index."""
    if not entry_ids:
        return
    where, params = _ids_where("entry_id", entry_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {ReleasedEntry._meta.db_table} SET valid_to = %s WHERE valid_to IS NULL AND {where}",
            [number, *params],
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
    ids (live entries, or an earlier version's rows): one INSERT ... SELECT, no row through Python. The
    columns are the entry's own, redacted when it was written."""
    if not ids:
        return
    columns = ", ".join(RELEASED_FIELDS)
    where, params = _ids_where("id", ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ReleasedEntry._meta.db_table} (entry_id, valid_from, entry_version, {columns}) "
            f"SELECT {entry_column}, %s, {version_column}, {columns} FROM {table} WHERE {where}",
            [number, *params],
        )


def _locked_pointer() -> PublishedVersion:
    """The pointer row, locked until the transaction ends (an unsaved one where none exists yet). Locked
    alone, its version read after: PostgreSQL re-reads a row it waited for, but a locking read joined to
    the version drops the row when the winner switched it to a version it just made, and the loser would
    then insert a second pointer. The version comes with the newest number and the last Event's id
    (reads.version_with_head), read after the lock too, so a publish that waited sees its winner's."""
    pointer = PublishedVersion.objects.select_for_update().filter(pk=1).first()
    if pointer is None:
        return PublishedVersion(pk=1)
    pointer.version = reads.version_with_head(pointer.version_id)
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
