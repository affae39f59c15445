"""Conflicts: two entries whose triggers overlap and whose advice contradicts.

Detection opens a Conflict per contradicting pair, at ingest (`detect_conflicts_for`) and in the conflicts
sweep over the active entries (sweeps/conflicts.py, which opens what it finds with `open_conflicts`).
Partners are found through indexed lookups only: the scope index (an ancestor scope, the same scope or a
descendant) and, on PostgreSQL, the full-text index on the action words; never every pair of the table. A pair that has a Conflict in any state is never raised
again, so a dismissed pair stays dismissed.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q

from curation.rules import access, clock
from curation.rules.contradiction import Lesson, conditions_overlap, contradiction, parse_lesson
from curation.models import Conflict, Entry, EventAction, Status
from curation.rules.permissions import REVIEW
from curation.rules.redaction import redact_fields
from curation.selectors.partners import partner_pools

from .candidates import restored_from, within_undo_window
from .entry_writes import changes_since, write_entry
from .errors import InvalidTransition, StaleDecision
from .events import build_event, record_event, record_events
from .merging import merge_entries, supersede_entry
from .validation import clean_entry_fields

PARTNER_POOL = 500
# At ingest an agent waits for the answer (and batches of 500 must stay fast): compare with the partners
# that mention the action words most, not with every one of them. The sweep reads the full pool later.
INGEST_PARTNER_POOL = 10


def pair_key(a: Entry, b: Entry) -> tuple[int, int]:
    return (a.pk, b.pk) if a.pk < b.pk else (b.pk, a.pk)


def open_conflicts(
    found: dict, entries: dict, *, detected_by: str, at, raised_by: dict | None = None
) -> list[Conflict]:
    """Open a Conflict for each (low id, high id) -> reason not already known, with an Event on both.
    `raised_by` names, per pair, the entry whose comparison found it (default: the newer one)."""
    raised_by = raised_by or {}
    if not found:
        return []
    lows = {lo for lo, _ in found}
    highs = {hi for _, hi in found}
    known = set(
        Conflict.objects.filter(entry_a_id__in=lows, entry_b_id__in=highs).values_list("entry_a_id", "entry_b_id")
    )
    opened = []
    for (lo, hi), reason in sorted(found.items()):
        if (lo, hi) in known:
            continue
        a, b = entries[lo], entries[hi]
        try:
            with transaction.atomic():  # a savepoint: a pair raised concurrently elsewhere is skipped
                conflict = Conflict.objects.create(
                    entry_a=a,
                    entry_b=b,
                    reason=reason,
                    detected_by=detected_by,
                    created_at=at,
                    raised_by_id=raised_by.get((lo, hi), hi),
                )
                for entry, other in ((a, b), (b, a)):
                    record_event(
                        entry,
                        actor=None,
                        actor_label=f"detector:{detected_by}",
                        action=EventAction.CONFLICT_OPENED,
                        reason=f"conflict #{conflict.pk} with #{other.pk}: {reason}",
                        after={"conflict": conflict.pk, "with": other.pk, "reason": reason},
                        at=at,
                        also=(conflict,),
                    )
        except IntegrityError:
            continue
        opened.append(conflict)
    return opened


def contradicts(entry: Entry, lesson: Lesson, other: Entry, other_lesson: Lesson) -> str | None:
    """The reason, read in the stored pair's order (lower id first), as the queue shows them left to right."""
    if not access.scopes_overlap(entry.scope, other.scope):
        return None
    if not conditions_overlap(entry.conditions, other.conditions):
        return None
    if other.pk < entry.pk:
        return contradiction(other_lesson, lesson)
    return contradiction(lesson, other_lesson)


def detect_conflicts_many(
    entries, *, detected_by: str = "ingest", at=None, pool: int | None = None, pools=None
) -> dict[int, list[Conflict]]:
    """Compare each entry (new candidates, or entries just changed) with the active entries that apply
    together with it, and open a Conflict per contradiction: {entry id: the conflicts it opened}. Reads
    at most `pool` partners per entry (PARTNER_POOL, or INGEST_PARTNER_POOL at ingest), those mentioning
    the action words most first; from a batch's `pools` (partners.batch_pools) where they suffice."""
    entries = list(entries)
    opened: dict[int, list[Conflict]] = {e.pk: [] for e in entries}
    for conflict in detect_and_open(entries, detected_by=detected_by, at=at, pool=pool, pools=pools)[0]:
        for entry_id in (conflict.entry_a_id, conflict.entry_b_id):
            if entry_id in opened:
                opened[entry_id].append(conflict)
    return opened


def detect_and_open(
    entries: list[Entry], *, detected_by: str, at, pool: int | None, pools=None
) -> tuple[list[Conflict], int]:
    """The conflicts detect_conflicts_many opens, in pair order, and how many pairs it compared."""
    now = at or clock.now()
    found, members, compared, raised_by = _contradictions(entries, detected_by=detected_by, pool=pool, pools=pools)
    # A partner read as a Partner row becomes an Entry to have its conflict written about (the few found).
    members = {pk: m if isinstance(m, Entry) else m.entry() for pk, m in members.items()}
    return open_conflicts(found, members, detected_by=detected_by, at=now, raised_by=raised_by), compared


def weigh_contradictions(entries, *, pools=None) -> int:
    """The reads and comparisons ingest's detection makes for `entries`, opening nothing: a held submission
    (services.held) costs what a fresh one does, so its answer's timing tells nothing. Answers the pairs compared."""
    return _contradictions(list(entries), detected_by="ingest", pool=None, pools=pools)[2]


def _contradictions(entries: list[Entry], *, detected_by: str, pool: int | None, pools=None):
    """The contradicting pairs among `entries` and their partners ({(low id, high id): reason}), every entry
    involved by id, how many pairs were compared, and which of `entries` raised each pair."""
    pool = pool or (INGEST_PARTNER_POOL if detected_by == "ingest" else PARTNER_POOL)
    lessons = {e.pk: parse_lesson(e.trigger, e.content) for e in entries}
    searching = [e for e in entries if lessons[e.pk].search_words]
    found: dict[tuple[int, int], str] = {}
    raised_by: dict[tuple[int, int], int] = {}
    members = {e.pk: e for e in entries}
    partners = partner_pools(searching, lessons, pool, pools) if searching else {}
    compared = 0
    for entry in searching:
        for other in partners[entry.pk]:
            compared += 1
            reason = contradicts(entry, lessons[entry.pk], other, _lesson_of(other, lessons))
            if reason:
                found[pair_key(entry, other)] = reason
                raised_by.setdefault(pair_key(entry, other), entry.pk)
                members.setdefault(other.pk, other)
    return found, members, compared, raised_by


def _lesson_of(entry: Entry, lessons: dict[int, Lesson]) -> Lesson:
    if entry.pk not in lessons:
        lessons[entry.pk] = parse_lesson(entry.trigger, entry.content)
    return lessons[entry.pk]


def detect_conflicts_for(
    entry: Entry, *, detected_by: str = "ingest", at=None, pool: int | None = None
) -> list[Conflict]:
    """detect_conflicts_many for one entry."""
    return detect_conflicts_many([entry], detected_by=detected_by, at=at, pool=pool)[entry.pk]


# --- resolutions ------------------------------------------------------------------------------------
#
# Each resolution: one transaction; the review permission and both entries' scopes checked; both entries'
# versions compared with what the reviewer saw (optimistic concurrency); the conflict must still be open;
# an Event on each entry. Keeping or merging supersedes entries, so their other open conflicts are moot
# and are closed in the same transaction.

LIVE = (Status.ACTIVE, Status.PENDING)
SPLIT_FIELDS = ("scope", "conditions")
MERGE_FIELDS = ("kind", "scope", "trigger", "content", "boundary", "conditions")


@dataclass(frozen=True)
class Resolution:
    conflict: Conflict
    kept: tuple = ()
    superseded: tuple = ()
    created: Entry | None = None


def _load_open_conflict(conflict_id: int, actor, version_a: int, version_b: int) -> tuple[Conflict, Entry, Entry]:
    """Lock the conflict and its two entries (lower id first, as every resolution does: no deadlock),
    check who may decide, and refuse a decision made on what has changed since."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads resolve conflicts.")
    conflict = Conflict.objects.select_for_update().get(pk=conflict_id)
    a = Entry.objects.select_for_update().get(pk=conflict.entry_a_id)
    b = Entry.objects.select_for_update().get(pk=conflict.entry_b_id)
    check_decidable(conflict, a, b, actor=actor, version_a=version_a, version_b=version_b)
    return conflict, a, b


def require_in_reach(actor, entries) -> None:
    """Conflict.DoesNotExist unless every one of the conflicts' `entries` lies in the actor's scopes: a
    conflict with an entry beyond them does not exist for the actor (selectors.visible_conflicts reads it so).
    Asked before anything else is said of what was locked, so that no refusal tells it from an unknown id."""
    if not all(access.user_can_see_scope(actor, entry.scope) for entry in entries):
        raise Conflict.DoesNotExist


def check_decidable(conflict: Conflict, a: Entry, b: Entry, *, actor, version_a: int, version_b: int) -> None:
    """May the actor decide this conflict on what they saw? Outside their scopes it does not exist; decided
    already, or an entry changed since, it is refused in words."""
    require_in_reach(actor, (a, b))
    if conflict.state != Conflict.State.OPEN:
        who = conflict.resolved_by.get_username() if conflict.resolved_by_id else "the system"
        raise InvalidTransition(
            f"Conflict #{conflict.pk} was already {conflict.state} ({conflict.resolution}) by {who}. Nothing of yours was saved."
        )
    for entry, expected in ((a, version_a), (b, version_b)):
        if entry.version != expected:
            raise StaleDecision(entry, changes_since(entry, expected))


def _require_live(*entries: Entry) -> None:
    for entry in entries:
        if entry.status not in LIVE:
            raise InvalidTransition(
                f"Entry #{entry.pk} is now {entry.status}: nothing to keep, split or merge. Dismiss the conflict instead."
            )


def _close(conflict: Conflict, *, actor, state: str, resolution: str, now) -> None:
    conflict.state = state
    conflict.resolution = resolution
    conflict.resolved_by = actor
    conflict.resolved_at = now
    conflict.save(update_fields=["state", "resolution", "resolved_by", "resolved_at"])


def close_moot_conflicts(superseded: list[Entry], *, actor, now, except_id: int, went: str = "superseded") -> int:
    """Open conflicts of an entry that is superseded (or, `went`, forgotten) now have nothing left to decide:
    each is closed as moot, with an Event about it that says which entry went."""
    ids = {e.pk for e in superseded}
    moot = list(
        Conflict.objects.select_for_update()
        .filter(state=Conflict.State.OPEN)
        .filter(Q(entry_a_id__in=ids) | Q(entry_b_id__in=ids))
        .exclude(pk=except_id)
        .order_by("id")
    )
    if not moot:
        return 0
    Conflict.objects.filter(pk__in=[c.pk for c in moot]).update(
        state=Conflict.State.RESOLVED, resolution="moot", resolved_by=actor, resolved_at=now
    )
    record_events(
        build_event(
            conflict,
            actor=actor,
            action=EventAction.CONFLICT_MOOT,
            at=now,
            reason=f"moot: {', '.join(f'#{pk}' for pk in (conflict.entry_a_id, conflict.entry_b_id) if pk in ids)} "
            f"{went}",
            before={"state": Conflict.State.OPEN},
            after={"state": Conflict.State.RESOLVED, "resolution": "moot"},
        )
        for conflict in moot
    )
    return len(moot)


def _supersede(entry: Entry, by: Entry, *, actor, conflict: Conflict, reason: str, now) -> None:
    supersede_entry(
        entry,
        by,
        actor=actor,
        reason=reason or f"conflict #{conflict.pk}: superseded by #{by.pk}",
        extra={"conflict": conflict.pk},
        now=now,
        also=(conflict,),
    )


def keep_entry(
    conflict_id: int, *, actor, keep: int, version_a: int, version_b: int, reason: str = "", at=None
) -> Resolution:
    """Keep one entry of the pair; the other becomes superseded by it.

    The kept entry records the other in `supersedes` only when that is empty: `supersedes` is one link
    (the entry this one replaces) and an existing link is older history worth keeping; the Events on
    both entries always name the pair. A kept entry that was still a pending candidate is approved by
    this decision (a reviewer read it beside the other and chose it), so the advice is never left with
    neither entry active."""
    now = at or clock.now()
    reason = (reason or "").strip()
    with transaction.atomic():
        conflict, a, b = _load_open_conflict(conflict_id, actor, version_a, version_b)
        if keep not in (a.pk, b.pk):
            raise ValidationError({"keep": [f"Keep #{a.pk} or #{b.pk}."]})
        _require_live(a, b)
        kept, other = (a, b) if keep == a.pk else (b, a)
        # A pending kept side is activated by the write path as every approval is: with the activation's
        # values, and only when its scope's approvals are there.
        changes = {"supersedes_id": other.pk} if kept.supersedes_id is None else {}
        write_entry(
            kept,
            changes,
            action=EventAction.CONFLICT_KEEP,
            actor=actor,
            reason=reason or f"conflict #{conflict.pk}: kept over #{other.pk}",
            after_extra={"superseded": other.pk, "conflict": conflict.pk},
            at=now,
            also=(conflict,),
        )
        _supersede(other, kept, actor=actor, conflict=conflict, reason=reason, now=now)
        _close(
            conflict,
            actor=actor,
            state=Conflict.State.RESOLVED,
            resolution="keep_a" if kept is a else "keep_b",
            now=now,
        )
        close_moot_conflicts([other], actor=actor, now=now, except_id=conflict.pk)
    return Resolution(conflict, kept=(kept,), superseded=(other,))


def _clean_split(prefix: str, entry: Entry, changes: dict, actor) -> dict:
    present = [f for f in SPLIT_FIELDS if f in changes]
    changes, findings = redact_fields(changes, ("conditions",))  # flagged as an edit-and-approve is
    try:
        cleaned = clean_entry_fields(changes, fields=present)
    except ValidationError as exc:
        raise ValidationError({f"{prefix}_{k}": v for k, v in exc.message_dict.items()}) from exc
    scope = cleaned.get("scope", entry.scope)
    if not access.scope_covers(entry.scope, scope):
        raise ValidationError(
            {
                f"{prefix}_scope": [
                    f"A split narrows: #{entry.pk} applies to {entry.scope}, so its scope stays {entry.scope} or below it."
                ]
            }
        )
    if not access.user_can_see_scope(actor, scope):
        raise ValidationError({f"{prefix}_scope": ["You can only move an entry to a scope you review."]})
    flags = {"flags": [*entry.flags, *(f.as_flag() for f in findings)]} if findings else {}
    return {"scope": scope, "conditions": cleaned.get("conditions", list(entry.conditions)), **flags}


def _describe(entry_id: int, fields: dict) -> str:
    conditions = ", ".join(fields["conditions"]) or "any situation"
    return f"#{entry_id} ({fields['scope']}; {conditions})"


def split_conflict(
    conflict_id: int,
    *,
    actor,
    version_a: int,
    version_b: int,
    changes_a: dict,
    changes_b: dict,
    reason: str = "",
    at=None,
) -> Resolution:
    """Narrow the scope or the conditions of one or both entries so that they no longer apply together;
    both stay. Refused while they still overlap: neither scope below the other, or no keyword shared."""
    now = at or clock.now()
    reason = (reason or "").strip()
    with transaction.atomic():
        conflict, a, b = _load_open_conflict(conflict_id, actor, version_a, version_b)
        _require_live(a, b)
        new_a, new_b = _clean_split("a", a, changes_a, actor), _clean_split("b", b, changes_b, actor)
        if access.scopes_overlap(new_a["scope"], new_b["scope"]) and conditions_overlap(
            new_a["conditions"], new_b["conditions"]
        ):
            raise ValidationError(
                {
                    "split": [
                        f"Still overlapping: {_describe(a.pk, new_a)} and {_describe(b.pk, new_b)} apply together. "
                        "Narrow a scope so that neither is the other or below it, or give them conditions with no keyword in common."
                    ]
                }
            )
        changed = []
        for entry, new in ((a, new_a), (b, new_b)):
            if entry.scope != new["scope"] or list(entry.conditions) != new["conditions"]:
                changed.append(entry)
        for entry, new, other in ((a, new_a, b), (b, new_b, a)):
            edited = [f for f in SPLIT_FIELDS if getattr(entry, f) != new[f]]
            note = reason or f"conflict #{conflict.pk} with #{other.pk}: " + (
                f"narrowed {' and '.join(edited)}" if edited else "unchanged, the other entry was narrowed"
            )
            if entry in changed:
                write_entry(
                    entry,
                    new,
                    action=EventAction.CONFLICT_SPLIT,
                    actor=actor,
                    reason=note,
                    after_extra={"conflict": conflict.pk},
                    at=now,
                    also=(conflict,),
                )
            else:  # nothing of this entry changes: its Event says why it stays, at the same version
                unchanged = entry.snapshot()
                record_event(
                    entry,
                    actor=actor,
                    action=EventAction.CONFLICT_SPLIT,
                    reason=note,
                    before=unchanged,
                    after={**unchanged, "conflict": conflict.pk},
                    at=now,
                    also=(conflict,),
                )
        _close(conflict, actor=actor, state=Conflict.State.RESOLVED, resolution="split", now=now)
    return Resolution(conflict, kept=(a, b))


def merge_conflict(
    conflict_id: int, *, actor, version_a: int, version_b: int, data: dict, reason: str = "", at=None
) -> Resolution:
    """Replace both entries with one new active entry written by the reviewer. Its evidence is the union
    of theirs, copied as new rows that name the originals; both old entries are superseded by it. The
    new entry's `supersedes` names the stronger of the two (one link only); its Event names both."""
    now = at or clock.now()
    reason = (reason or "").strip()
    data, findings = redact_fields(data, ("trigger", "content", "boundary", "conditions"))
    fields = clean_entry_fields(data, fields=MERGE_FIELDS)
    with transaction.atomic():
        conflict, a, b = _load_open_conflict(conflict_id, actor, version_a, version_b)
        _require_live(a, b)
        if not access.user_can_see_scope(actor, fields["scope"]):
            raise ValidationError({"scope": ["You can only write an entry in a scope you review."]})
        merged = merge_entries(
            [a, b],
            fields=fields,
            flags=[f.as_flag() for f in findings],
            actor=actor,
            origin=f"conflict #{conflict.pk}",
            reason=reason or f"conflict #{conflict.pk}: merged #{a.pk} and #{b.pk}",
            action=EventAction.CONFLICT_MERGE,
            extra={"conflict": conflict.pk},
            now=now,
            also=(conflict,),
        )
        for old in (a, b):
            _supersede(old, merged, actor=actor, conflict=conflict, reason=reason, now=now)
        _close(conflict, actor=actor, state=Conflict.State.RESOLVED, resolution="merge", now=now)
        close_moot_conflicts([a, b], actor=actor, now=now, except_id=conflict.pk)
        detect_conflicts_for(merged, detected_by="merge", at=now)  # the new text may contradict a third entry
    return Resolution(conflict, superseded=(a, b), created=merged)


def dismiss_conflict(
    conflict_id: int, *, actor, version_a: int, version_b: int, reason: str = "", at=None
) -> Resolution:
    """Not a conflict: both entries stay as they are, and this pair is never raised again."""
    now = at or clock.now()
    reason = (reason or "").strip()
    with transaction.atomic():
        conflict, a, b = _load_open_conflict(conflict_id, actor, version_a, version_b)
        for entry, other in ((a, b), (b, a)):
            record_event(
                entry,
                actor=actor,
                action=EventAction.CONFLICT_DISMISSED,
                reason=reason or f"conflict #{conflict.pk} with #{other.pk}: not a conflict",
                after={"conflict": conflict.pk, "with": other.pk},
                at=now,
                also=(conflict,),
            )
        _close(conflict, actor=actor, state=Conflict.State.DISMISSED, resolution="dismiss", now=now)
    return Resolution(conflict, kept=(a, b))


# --- undo --------------------------------------------------------------------------------------------
#
# A reviewer takes back their own dismissal or keep for a short while (UNDO_SECONDS), as new Events: the
# conflict is open again, and a keep's two entries get back what they were through the write path. A split
# or a merge is not undone here (why_not_undoable says why, on the decided card).


def why_not_undoable(resolution: str) -> str:
    """Why a resolution is not taken back with Undo ("": it is)."""
    return {
        "split": "a split rewrote the entries' scopes or conditions; edit them back on their pages",
        "merge": "the merge wrote a new entry, which agents may read already; supersede or retire it on its page",
    }.get(resolution, "")


def undo_resolution(
    conflict_id: int,
    *,
    actor,
    version_a: int,
    version_b: int,
    reason: str = "",
    at=None,
    after_undoing: frozenset[int] = frozenset(),
) -> Resolution:
    """Take back the actor's own dismissal or keep of a conflict, within UNDO_SECONDS: the conflict is open
    again, with an "undo" Event on each entry. A keep's entries return to what they were (the kept one's
    status and link, the superseded one live again) through the write path, and the other conflicts the
    keep closed as moot open again. Refused as stale when either entry changed since the decision.

    `after_undoing`: the conflicts of the same group decision this transaction has just undone, latest
    first (services.conflict_groups); their keeps and undos of an entry kept in each are passed over."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads resolve conflicts.")
    now = at or clock.now()
    reason = (reason or "").strip()
    try:
        with transaction.atomic():
            conflict = Conflict.objects.select_for_update().get(pk=conflict_id)
            a = Entry.objects.select_for_update().get(pk=conflict.entry_a_id)
            b = Entry.objects.select_for_update().get(pk=conflict.entry_b_id)
            require_in_reach(actor, (a, b))
            _refuse_undo(conflict, actor, now)
            for entry, expected in ((a, version_a), (b, version_b)):
                if entry.version != expected:
                    raise StaleDecision(entry, changes_since(entry, expected))
            if conflict.resolution == "dismiss":
                for entry, other in ((a, b), (b, a)):
                    record_event(
                        entry,
                        actor=actor,
                        action=EventAction.UNDO,
                        reason=reason or f'conflict #{conflict.pk} with #{other.pk}: undid "conflict dismissed"',
                        before={"conflict": conflict.pk, "state": conflict.state},
                        after={"conflict": conflict.pk, "state": Conflict.State.OPEN},
                        at=now,
                        also=(conflict,),
                    )
            else:
                _undo_keep(conflict, a, b, actor=actor, reason=reason, now=now, passed=after_undoing)
            conflict.state, conflict.resolution, conflict.resolved_by, conflict.resolved_at = "open", "", None, None
            conflict.save(update_fields=["state", "resolution", "resolved_by", "resolved_at"])
    except IntegrityError:  # live again, an entry would repeat one submitted or approved since
        raise InvalidTransition(
            f"An entry of conflict #{conflict_id} now repeats another; decide on that one."
        ) from None
    return Resolution(conflict, kept=(a, b))


def _refuse_undo(conflict: Conflict, actor, now) -> None:
    if conflict.state == Conflict.State.OPEN:
        raise InvalidTransition(f"Conflict #{conflict.pk} is open: there is no decision to undo.")
    if conflict.resolved_by_id != actor.pk:
        raise InvalidTransition(f"Conflict #{conflict.pk}'s resolution is not a decision of yours to undo.")
    why = why_not_undoable(conflict.resolution)
    if why or conflict.resolution not in ("dismiss", "keep_a", "keep_b"):
        raise InvalidTransition(f"Conflict #{conflict.pk} cannot be undone: {why or 'it was closed as moot'}.")
    within_undo_window(conflict.resolved_at, now, f"conflict #{conflict.pk}")


def _last_change(entry: Entry, passed: frozenset[int]):
    """The entry's last Event, passing over those about the conflicts in `passed` (a keep and its undo each)."""
    if not passed:
        return entry.events.filter(entry_version=entry.version).order_by("-id").first()
    for event in entry.events.order_by("-id")[: 2 * len(passed) + 1]:
        if (event.after or {}).get("conflict") not in passed:
            return event
    return None


def _undo_keep(conflict: Conflict, a: Entry, b: Entry, *, actor, reason: str, now, passed=frozenset()) -> None:
    """Both entries back to what the keep's Events saw before it, then the conflicts it closed as moot
    (those of the superseded entry, closed by this actor at this same moment) open again."""
    kept, other = (a, b) if conflict.resolution == "keep_a" else (b, a)
    for entry, decided in ((kept, EventAction.CONFLICT_KEEP), (other, EventAction.SUPERSEDE)):
        last = _last_change(entry, passed)
        if last is None or last.action != decided or (last.after or {}).get("conflict") != conflict.pk:
            raise InvalidTransition(f"Entry #{entry.pk}'s last change is not this keep; decide on it again.")
        write_entry(
            entry,
            {
                **restored_from(last.before or {}, entry),
                **({"supersedes_id": last.before["supersedes"]} if "supersedes" in (last.before or {}) else {}),
            },
            action=EventAction.UNDO,
            actor=actor,
            reason=reason or f'conflict #{conflict.pk}: undid "{EventAction(decided).label}"',
            after_extra={"conflict": conflict.pk},
            at=now,
            also=(conflict,),
        )
    moot = list(
        Conflict.objects.select_for_update()
        .filter(resolution="moot", resolved_by=actor, resolved_at=conflict.resolved_at)
        .filter(Q(entry_a_id=other.pk) | Q(entry_b_id=other.pk))
        .exclude(pk=conflict.pk)
        .order_by("id")
    )
    if moot:
        Conflict.objects.filter(pk__in=[c.pk for c in moot]).update(
            state=Conflict.State.OPEN, resolution="", resolved_by=None, resolved_at=None
        )
        record_events(
            build_event(
                c,
                actor=actor,
                action=EventAction.UNDO,
                at=now,
                reason=f"open again: #{other.pk} is live again (conflict #{conflict.pk}'s keep undone)",
                before={"state": Conflict.State.RESOLVED, "resolution": "moot"},
                after={"state": Conflict.State.OPEN},
            )
            for c in moot
        )


@dataclass(frozen=True)
class BulkOutcome:
    conflict_id: int
    ok: bool
    message: str


def bulk_dismiss_conflicts(items: list[tuple[int, int, int]], *, actor, reason: str = "", at=None) -> list[BulkOutcome]:
    """Dismiss many (conflict id, version a, version b). Each is its own decision with its Events, so one
    stale or out-of-scope conflict never blocks the others."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads resolve conflicts.")
    outcomes = []
    for conflict_id, version_a, version_b in items:
        try:
            dismiss_conflict(conflict_id, actor=actor, version_a=version_a, version_b=version_b, reason=reason, at=at)
            outcomes.append(BulkOutcome(conflict_id, True, "dismissed"))
        except (Conflict.DoesNotExist, Entry.DoesNotExist):
            outcomes.append(BulkOutcome(conflict_id, False, "not found"))
        except (StaleDecision, InvalidTransition) as exc:
            outcomes.append(BulkOutcome(conflict_id, False, str(exc)))
    return outcomes
