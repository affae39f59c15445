"""Skill nomination: procedures and success patterns that pass the promotion gates become skill proposals
with a draft made from the entry, for the skill promotions queue. An entry is nominated once: a decided
nomination is not made again."""

from __future__ import annotations

from django.db.models import Exists, F, OuterRef, Q, Value, Window
from django.db.models.functions import RowNumber

from curation.rules import lifecycle, skill_format
from curation.models import Conflict, Entry, Event, EventAction, SkillSource, Status
from curation.selectors.forgets import all_tombstones, forgotten_among
from curation.services.skills import NOMINEE_FIELDS, nominate_skills

from .engine import Sweep, keyset_batches

NAME = "skill_nomination"
DESCRIPTION = (
    "Nominate procedures and success patterns that pass the promotion gates (enough hits, high "
    "utility, no recent failure, a rollback note, no open conflict) for the skill promotions queue."
)


def _candidates(batch: Q, gates: lifecycle.SkillGates):
    """The SQL half of the nomination gate (the rest needs the recent outcomes and the content's rollback
    note, decided by lifecycle.nomination_blockers): the kind, the hits, the average utility, not waiting
    for a recheck, in no open conflict, and never part of a skill proposal (a decided nomination is not
    made again)."""
    conflict = Conflict.objects.filter(state=Conflict.State.OPEN)
    return (
        Entry.objects.filter(
            batch,
            kind__in=lifecycle.SKILL_KINDS,
            hit_count__gte=gates.min_hits,
            utility_n__gt=0,
            utility_sum__gte=Value(gates.min_avg_utility - lifecycle.EPSILON) * F("utility_n"),
            queued_at__isnull=True,
        )
        .exclude(Exists(conflict.filter(entry_a=OuterRef("pk"))))
        .exclude(Exists(conflict.filter(entry_b=OuterRef("pk"))))
        .exclude(Exists(SkillSource.objects.filter(entry=OuterRef("pk"))))
    )


def recent_outcomes(entry_ids, *, window: int, as_of) -> dict[int, list[str]]:
    """Each entry's latest `window` task outcomes, newest first, in one query (a window function over the
    entries' outcome Events)."""
    rows = (
        Event.objects.filter(entry_id__in=list(entry_ids), action__in=EventAction.outcomes(), created_at__lte=as_of)
        .annotate(
            nth=Window(RowNumber(), partition_by=[F("entry_id")], order_by=[F("created_at").desc(), F("id").desc()])
        )
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
        "kind": entry.kind,
        "status": entry.status,
        "hit_count": entry.hit_count,
        "utility_sum": entry.utility_sum,
        "utility_n": entry.utility_n,
        "recent_outcomes": outcomes,
        "has_rollback_note": bool(skill_format.rollback_note(entry.content)),
        "awaiting_recheck": entry.queued_at is not None,
    }


def _nomination_reason(entry: Entry, gates: lifecycle.SkillGates) -> str:
    return (
        f"{entry.hit_count} hits, average utility {entry.utility_sum / entry.utility_n:.2f}, no failure in the "
        f"last {gates.recent_window} uses, a rollback note"
    )


def thresholds() -> str:
    g = lifecycle.skill_gates()
    return (
        f"Nominates a procedure or success pattern used at least {g.min_hits} times, with an average reported "
        f"usefulness of at least {g.min_avg_utility:g}, no failure in its last {g.recent_window} uses, a "
        "rollback note and no open conflict. A lead approves it after "
        f"{g.trials_required} successful trial runs."
    )


def run(sweep: Sweep) -> None:
    """Walk the active entries in keyset batches of id; per batch a fixed number of queries (the
    candidates, their recent outcomes, then for the nominees services.skills.nominate_skills: a lock, the
    slugs taken, and one insert each for the proposals, their sources and their Events)."""
    gates = lifecycle.skill_gates()
    tombstones = all_tombstones()
    for batch, count in keyset_batches(Status.ACTIVE, sweep.batch_size):
        rows = list(_candidates(batch, gates).only(*NOMINEE_FIELDS).order_by("id"))
        chosen = []
        if rows:
            outcomes = recent_outcomes([e.pk for e in rows], window=gates.recent_window, as_of=sweep.as_of)
            chosen = [e for e in rows if lifecycle.is_nominable(**_facts(e, outcomes[e.pk]), gates=gates)]
            barred = forgotten_among(chosen, tombstones)  # a forgotten lesson is never proposed again
            chosen = [e for e in chosen if e.pk not in barred]
        if sweep.dry_run:
            for e in chosen[: sweep.samples_left]:
                sweep.sample(
                    f"#{e.pk} nominate as skill {skill_format.slug_base(e.trigger)}: {_nomination_reason(e, gates)}"
                )
            changed = len(chosen)
        else:
            changed = nominate_skills(
                chosen, reason_of=lambda e: _nomination_reason(e, gates), actor_label=sweep.actor_label, at=sweep.as_of
            )
        sweep.batch_done(count, changed)
