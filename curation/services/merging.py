"""What the conflict and consolidation decisions share: superseding an entry by another, and merging
entries into one new entry. Called inside the caller's transaction, on entries it has locked and checked."""

from __future__ import annotations

from curation.rules import lifecycle, trust
from curation.models import Entry, EventAction, Evidence, Status
from curation.selectors import approvals_required
from curation.rules.similarity import fingerprint

from .entry_writes import insert_entry, write_entry
from .memory_tests import create_correction_test


def supersede_entry(entry: Entry, by: Entry, *, actor, reason: str, extra: dict, now, also=()) -> None:
    """`entry` is replaced by `by`: superseded, out of every queue, kept for the audit. A person's decision is a
    correction, and brings its memory test: `by` is never to be outranked by what it corrects."""
    write_entry(
        entry,
        {},
        action=EventAction.SUPERSEDE,
        actor=actor,
        reason=reason,
        after_extra={"superseded_by": by.pk, **extra},
        at=now,
        also=also,
    )
    if actor is not None:
        create_correction_test(entry, by, actor=actor, at=now)


def _copied_excerpt(evidence: Evidence) -> str:
    note = f"\n[copied from evidence #{evidence.pk} of entry #{evidence.entry_id}]"
    return evidence.excerpt[: 4000 - len(note)] + note


def merge_entries(
    sources: list[Entry],
    *,
    fields: dict,
    flags: list,
    actor,
    origin: str,
    reason: str,
    action: EventAction,
    extra: dict | None = None,
    now,
    also=(),
) -> Entry:
    """One new entry written by a reviewer from `sources`, which the caller then supersedes: active, or, in a
    scope that needs two reviewers, a pending candidate with the merger's approval as its first (the merged
    text is new; a second reviewer makes it active, as the write path requires).

    Its evidence is the union of the sources' evidence, copied as new rows (evidence is append-only and
    belongs to one entry) whose excerpt names the original row and entry, with the original task_ref and
    recorder. It starts at the strongest source's base confidence and signal, verified now, and its
    `supersedes` names the strongest source (one link only); its Event names them all. Its provenance trust
    is the lowest of its sources' (a person rewording them vouches for the wording, not for where they came
    from), and the copied evidence, marked as copies, never raises it."""
    primary = max(sources, key=lambda e: (e.base_confidence, -e.pk))
    originals = list(Evidence.objects.filter(entry_id__in=[e.pk for e in sources]).order_by("observed_at", "id"))
    signal = lifecycle.strongest_signal(
        [e.signal for e in originals if e.polarity == Evidence.Polarity.SUPPORTS] + [e.signal for e in sources]
    )
    base = primary.base_confidence
    level = trust.lowest(e.trust for e in sources)
    second_needed = approvals_required(fields["scope"]) >= 2
    merged = Entry(
        **fields,
        fingerprint=fingerprint(fields["trigger"], fields["content"]),
        signal=signal,
        base_confidence=base,
        **(
            {"status": Status.PENDING, "queued_at": now, "first_approval_by": actor, "first_approval_at": now}
            if second_needed
            else {"status": Status.ACTIVE, "last_verified_at": now}
        ),
        flags=flags,
        trust_origin=level,
        trust=level,
        supersedes=primary,
        source_task=origin,
        created_by=actor,
        created_by_label=actor.get_username(),
        created_at=now,
        updated_at=now,
    )
    insert_entry(
        merged,
        action=action,
        actor=actor,
        reason=reason,
        at=now,
        also=also,
        after_extra={
            "merged_from": [e.pk for e in sources],
            "evidence_copied": len(originals),
            "trust": f"{level.label}: the lowest of its sources",
            **(extra or {}),
        },
    )
    Evidence.objects.bulk_create(
        Evidence(
            entry=merged,
            kind=e.kind,
            signal=e.signal,
            source=e.source,
            trust=e.trust,
            copied_from=e,
            injection_found=e.injection_found,
            polarity=e.polarity,
            excerpt=_copied_excerpt(e),
            task_ref=e.task_ref,
            evaluator=e.evaluator,
            score=e.score,
            observed_at=e.observed_at,
            recorded_by=e.recorded_by,
            recorded_by_label=e.recorded_by_label,
            created_at=now,
        )
        for e in originals
    )
    return merged
