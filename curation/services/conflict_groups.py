"""An entry's conflicts decided at once: one contradicting candidate may open a conflict with each of ten
near-identical lessons, and the queue shows them as one card (selectors.conflicts). Each decision here is
the conflicts' own services, one per conflict, in one transaction: all of them are decided, or none.

- keep the new one: the entry they share is kept over each of the others (`keep_entry` per conflict);
- keep the existing ones: the shared entry is superseded by the first of them (`keep_entry`), and its other
  conflicts close as moot, as after any keep;
- dismiss all: `dismiss_conflict` per conflict.

Undo takes the whole decision back through `undo_resolution`, latest conflict first."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from curation.models import Conflict, Entry
from curation.rules import clock
from curation.rules.permissions import REVIEW
from curation.selectors.conflicts import GROUP_LIMIT

from .conflicts import Resolution, check_decidable, dismiss_conflict, keep_entry, require_in_reach, undo_resolution
from .errors import InvalidTransition

GROUP_DECISIONS = ("keep_new", "keep_existing", "dismiss")


@dataclass(frozen=True)
class GroupResolution:
    conflict: Conflict  # the card's conflict, the first of the group
    decision: str
    shared: Entry  # the entry every conflict of the group has in common
    resolutions: tuple[Resolution, ...]
    members: tuple[tuple[int, int, int], ...]  # each conflict with its entries' versions now (what Undo posts)

    @property
    def kept(self) -> list[Entry]:
        return _unique(e for r in self.resolutions for e in r.kept)

    @property
    def superseded(self) -> list[Entry]:
        return _unique(e for r in self.resolutions for e in r.superseded)

    @property
    def others(self) -> list[Entry]:
        """The entries the shared one contradicted."""
        return _unique(e for r in self.resolutions for e in (*r.kept, *r.superseded) if e.pk != self.shared.pk)


def _unique(entries) -> list[Entry]:
    return list({e.pk: e for e in entries}.values())


def _members(conflict_id: int, members) -> list[tuple[int, int, int]]:
    members = sorted({tuple(m) for m in members})
    if len(members) < 2 or len({m[0] for m in members}) != len(members):
        raise ValidationError({"members": ["A group names two or more conflicts, each once; reload the queue."]})
    if len(members) > GROUP_LIMIT:
        raise ValidationError({"members": [f"At most {GROUP_LIMIT} conflicts at once."]})
    if conflict_id not in {m[0] for m in members}:
        raise ValidationError({"members": ["The card's own conflict is not among those sent; reload the queue."]})
    return members


def _lock(members, actor) -> tuple[dict[int, Conflict], dict[int, Entry], Entry]:
    """Lock the conflicts (by id) and their entries (by id), and find the entry they all share. A conflict
    outside the actor's scopes is refused as a missing one, before the card's shape is checked."""
    conflicts = {c.pk: c for c in Conflict.objects.select_for_update().filter(pk__in=[m[0] for m in members])}
    if len(conflicts) != len(members):
        raise Conflict.DoesNotExist
    entry_ids = sorted({pk for c in conflicts.values() for pk in (c.entry_a_id, c.entry_b_id)})
    entries = {e.pk: e for e in Entry.objects.select_for_update().filter(pk__in=entry_ids).order_by("id")}
    require_in_reach(actor, entries.values())
    shared = set.intersection(*({c.entry_a_id, c.entry_b_id} for c in conflicts.values()))
    if len(shared) != 1:
        raise ValidationError({"members": ["These conflicts do not share one entry; reload the queue."]})
    return conflicts, entries, entries[shared.pop()]


def _versions(members, conflicts: dict[int, Conflict]) -> dict[int, int]:
    """The version of each entry the reviewer decided on, as the card sent them."""
    versions: dict[int, int] = {}
    for conflict_id, version_a, version_b in members:
        conflict = conflicts[conflict_id]
        for entry_id, version in ((conflict.entry_a_id, version_a), (conflict.entry_b_id, version_b)):
            if versions.setdefault(entry_id, version) != version:
                raise ValidationError({"members": ["The card sent two versions of one entry; reload the queue."]})
    return versions


def resolve_conflict_group(
    conflict_id: int, *, actor, members, decision: str, reason: str = "", at=None
) -> GroupResolution:
    """Decide the conflicts of one card at once: `members` are (conflict id, version a, version b) as the
    card showed them, the card's own conflict among them. Each conflict goes through its own service,
    with its Events; a stale, refused or out-of-scope one refuses the whole decision."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads resolve conflicts.")
    if decision not in GROUP_DECISIONS:
        raise ValidationError({"decision": [f"Choose one of: {', '.join(GROUP_DECISIONS)}."]})
    members = _members(conflict_id, members)
    now = at or clock.now()
    with transaction.atomic():
        conflicts, entries, shared = _lock(members, actor)
        versions = _versions(members, conflicts)
        for conflict in conflicts.values():  # every one checked before any is decided
            check_decidable(
                conflict,
                entries[conflict.entry_a_id],
                entries[conflict.entry_b_id],
                actor=actor,
                version_a=versions[conflict.entry_a_id],
                version_b=versions[conflict.entry_b_id],
            )

        def decide(conflict_id: int, service, **fields) -> Resolution:
            conflict = conflicts[conflict_id]
            resolution = service(
                conflict_id,
                actor=actor,
                version_a=versions[conflict.entry_a_id],
                version_b=versions[conflict.entry_b_id],
                reason=reason,
                at=now,
                **fields,
            )
            for entry in (*resolution.kept, *resolution.superseded):
                versions[entry.pk] = entry.version  # the next conflict of a kept entry is decided on this one
            return resolution

        ids = [m[0] for m in members]
        if decision == "dismiss":
            resolutions = [decide(pk, dismiss_conflict) for pk in ids]
        elif decision == "keep_new":
            resolutions = [decide(pk, keep_entry, keep=shared.pk) for pk in ids]
        else:  # the others close as moot when the shared entry is superseded
            first = conflicts[ids[0]]
            other = first.entry_b_id if first.entry_a_id == shared.pk else first.entry_a_id
            resolutions = [decide(ids[0], keep_entry, keep=other)]
        shared = Entry.objects.get(pk=shared.pk)
    return GroupResolution(
        conflict=Conflict.objects.get(pk=conflict_id),
        decision=decision,
        shared=shared,
        resolutions=tuple(resolutions),
        members=_versions_now(conflicts),
    )


def undo_conflict_group(conflict_id: int, *, actor, members, reason: str = "", at=None) -> GroupResolution:
    """Take back the actor's own decision on a card's conflicts (within UNDO_SECONDS), latest conflict
    first, each through `undo_resolution`: a keep's entries are written back, its moot conflicts open
    again, and every conflict of the card is open once more. `members` carry the versions the decision
    left; anything changed since refuses the whole undo."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads resolve conflicts.")
    members = _members(conflict_id, members)
    now = at or clock.now()
    with transaction.atomic():
        conflicts, _, shared = _lock(members, actor)
        versions = _versions(members, conflicts)
        undone: list[int] = []
        resolutions = []
        for pk in sorted(conflicts, reverse=True):
            conflict = conflicts[pk]
            if conflict.resolution == "moot":  # opens again with the keep that closed it
                continue
            resolution = undo_resolution(
                pk,
                actor=actor,
                version_a=versions[conflict.entry_a_id],
                version_b=versions[conflict.entry_b_id],
                reason=reason,
                at=now,
                after_undoing=frozenset(undone),
            )
            undone.append(pk)
            resolutions.append(resolution)
            for entry in resolution.kept:
                versions[entry.pk] = entry.version
        still_closed = Conflict.objects.filter(pk__in=list(conflicts)).exclude(state=Conflict.State.OPEN)
        if first := still_closed.order_by("id").first():
            raise InvalidTransition(
                f"Conflict #{first.pk} was closed by something else ({first.resolution}); decide on it again."
            )
        shared = Entry.objects.get(pk=shared.pk)
    return GroupResolution(
        conflict=Conflict.objects.get(pk=conflict_id),
        decision="undo",
        shared=shared,
        resolutions=tuple(resolutions),
        members=_versions_now(conflicts),
    )


def _versions_now(conflicts: dict[int, Conflict]) -> tuple[tuple[int, int, int], ...]:
    entry_ids = {pk for c in conflicts.values() for pk in (c.entry_a_id, c.entry_b_id)}
    versions = dict(Entry.objects.filter(pk__in=entry_ids).values_list("pk", "version"))
    return tuple(
        (c.pk, versions[c.entry_a_id], versions[c.entry_b_id]) for c in sorted(conflicts.values(), key=lambda c: c.pk)
    )
