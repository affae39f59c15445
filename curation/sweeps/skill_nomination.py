"""Skill nomination: procedures and success patterns that pass the promotion gates become skill proposals
with a draft made from the entry, for the skill promotions queue. An entry is nominated once: a decided
nomination is not made again."""

from __future__ import annotations

from functools import reduce
from operator import or_

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q, Value, Window
from django.db.models.functions import RowNumber

from curation import lifecycle, skill_format
from curation.models import SKILL_SLUG_MAX, Conflict, Entry, Event, EventAction, SkillProposal, SkillSource, Status
from curation.selectors.forgets import all_tombstones, forgotten_among
from curation.services.events import build_event, record_events
from curation.services.skills import draft_of, proposal_ref

from .engine import Sweep, keyset_batches

NAME = "skill_nomination"
DESCRIPTION = ("Nominate procedures and success patterns that pass the promotion gates (enough hits, high "
               "utility, no recent failure, a rollback note, no open conflict) for the skill promotions queue.")


def _candidates(batch: Q, gates: lifecycle.SkillGates):
    """The SQL half of the nomination gate (the rest needs the recent outcomes and the content's rollback
    note, decided by lifecycle.nomination_blockers): the kind, the hits, the average utility, not waiting
    for a recheck, in no open conflict, and never part of a skill proposal (a decided nomination is not
    made again)."""
    conflict = Conflict.objects.filter(state=Conflict.State.OPEN)
    return (
        Entry.objects.filter(batch, kind__in=lifecycle.SKILL_KINDS, hit_count__gte=gates.min_hits, utility_n__gt=0,
                             utility_sum__gte=Value(gates.min_avg_utility - lifecycle.EPSILON) * F("utility_n"),
                             queued_at__isnull=True)
        .exclude(Exists(conflict.filter(entry_a=OuterRef("pk"))))
        .exclude(Exists(conflict.filter(entry_b=OuterRef("pk"))))
        .exclude(Exists(SkillSource.objects.filter(entry=OuterRef("pk"))))
    )


def recent_outcomes(entry_ids, *, window: int, as_of) -> dict[int, list[str]]:
    """Each entry's latest `window` task outcomes, newest first, in one query (a window function over the
    entries' outcome Events)."""
    rows = (
        Event.objects.filter(entry_id__in=list(entry_ids), action__in=EventAction.outcomes(), created_at__lte=as_of)
        .annotate(nth=Window(RowNumber(), partition_by=[F("entry_id")], order_by=[F("created_at").desc(), F("id").desc()]))
        .filter(nth__lte=window)
        .order_by("entry_id", "nth")
        .values_list("entry_id", "action")
    )
    found: dict[int, list[str]] = {pk: [] for pk in entry_ids}
    for entry_id, action in rows:
        found[entry_id].append(action.removeprefix("outcome_"))
    return found


def _facts(entry: Entry, outcomes: list[str]) -> dict:
    return {
        "kind": entry.kind, "status": entry.status, "hit_count": entry.hit_count, "utility_sum": entry.utility_sum,
        "utility_n": entry.utility_n, "recent_outcomes": outcomes,
        "has_rollback_note": bool(skill_format.rollback_note(entry.content)),
        "awaiting_recheck": entry.queued_at is not None,
    }


def _nomination_reason(entry: Entry, gates: lifecycle.SkillGates) -> str:
    return (f"{entry.hit_count} hits, average utility {entry.utility_sum / entry.utility_n:.2f}, no failure in the "
            f"last {gates.recent_window} uses, a rollback note")


_ENTRY_FIELDS = ("id", "kind", "scope", "trigger", "content", "boundary", "conditions", "status", "version",
                 "hit_count", "utility_sum", "utility_n", "queued_at")



def thresholds() -> str:
    g = lifecycle.skill_gates()
    return (f"Nominates a procedure or success pattern used at least {g.min_hits} times, with an average reported "
            f"usefulness of at least {g.min_avg_utility:g}, no failure in its last {g.recent_window} uses, a "
            "rollback note and no open conflict. A lead approves it after "
            f"{g.trials_required} successful trial runs.")


def run(sweep: Sweep) -> None:
    """Walk the active entries in keyset batches of id; per batch a
    fixed number of queries (the candidates, their recent outcomes, then for the nominees: a lock, the
    slugs taken, and one insert each for the proposals, their sources and their Events)."""
    gates = lifecycle.skill_gates()
    tombstones = all_tombstones()
    for batch, count in keyset_batches(Status.ACTIVE, sweep.batch_size):
        rows = list(_candidates(batch, gates).only(*_ENTRY_FIELDS).order_by("id"))
        chosen = []
        if rows:
            outcomes = recent_outcomes([e.pk for e in rows], window=gates.recent_window, as_of=sweep.as_of)
            chosen = [e for e in rows if lifecycle.is_nominable(**_facts(e, outcomes[e.pk]), gates=gates)]
            barred = forgotten_among(chosen, tombstones)  # a forgotten lesson is never proposed again
            chosen = [e for e in chosen if e.pk not in barred]
        if sweep.dry_run:
            for e in chosen[:sweep.samples_left]:
                sweep.sample(f"#{e.pk} nominate as skill {skill_format.slug_base(e.trigger)}: {_nomination_reason(e, gates)}")
            changed = len(chosen)
        else:
            changed = _nominate_all(sweep, chosen, gates)
        sweep.batch_done(count, changed)


def _nominate_all(sweep, entries: list[Entry], gates) -> int:
    if not entries:
        return 0
    try:
        with transaction.atomic():
            return _nominate(sweep, entries, gates)
    except IntegrityError:
        # A reviewer took a slug or linked one of these entries meanwhile: one at a time, skip the refused.
        made = 0
        for entry in entries:
            try:
                with transaction.atomic():
                    made += _nominate(sweep, [entry], gates)
            except IntegrityError:
                continue
        return made


def _nominate(sweep, entries: list[Entry], gates) -> int:
    ids = [e.pk for e in entries]
    locked = list(Entry.objects.select_for_update().filter(pk__in=ids, status=Status.ACTIVE, queued_at__isnull=True)
                  .only(*_ENTRY_FIELDS).order_by("id"))
    if not locked:
        return 0
    drafts = {
        e.pk: skill_format.draft_from_entry(kind=e.kind, scope=e.scope, trigger=e.trigger, content=e.content,
                                            boundary=e.boundary, conditions=e.conditions)
        for e in locked
    }
    bases = {d["slug"] for d in drafts.values()}
    taken = set(
        # A suffixed slug ("-2") may shorten its base: every slug sharing the first 54 characters is read.
        SkillProposal.objects.filter(reduce(or_, (Q(slug__startswith=b[:SKILL_SLUG_MAX - 10]) for b in bases)))
        .values_list("slug", flat=True)
    )
    proposals = []
    for e in locked:
        draft = drafts[e.pk]
        slug = skill_format.unique_slug(draft.pop("slug"), taken)
        taken.add(slug)
        proposals.append(SkillProposal(
            slug=slug, scope=e.scope, nominated_entry_id=e.pk, reason=_nomination_reason(e, gates),
            created_at=sweep.as_of, updated_at=sweep.as_of, created_by_label=sweep.actor_label, **draft,
        ))
    SkillProposal.objects.bulk_create(proposals)
    by_entry = {p.nominated_entry_id: p for p in proposals}
    SkillSource.objects.bulk_create(
        SkillSource(proposal=by_entry[e.pk], entry_id=e.pk, entry_version=e.version, added_at=sweep.as_of,
                    added_by_label=sweep.actor_label)
        for e in locked
    )
    # One Event each, about the new skill proposal and its entry: both histories show the nomination.
    record_events(
        build_event(by_entry[e.pk], also=(e,), actor=None, actor_label=sweep.actor_label, action=EventAction.SKILL_NOMINATED,
                    reason=f"nominated as skill {by_entry[e.pk].slug}: {by_entry[e.pk].reason}",
                    after={**proposal_ref(by_entry[e.pk]), "draft": draft_of(by_entry[e.pk])}, at=sweep.as_of)
        for e in locked
    )
    return len(locked)
