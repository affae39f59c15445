"""Consolidation proposals: a sweep proposes, a reviewer decides.

The consolidation sweep (sweeps/consolidation.py) reads the active entries from one consistent snapshot
and finds (a) clusters of near-duplicates in one scope and (b) newer entries that supersede an outdated one
with the same trigger; `write_proposals` here inserts its proposals, with pre-filled merged text and
their Events. Neither changes an entry. `accept_proposal` (as is, or with edited text) and
`dismiss_proposal` are the decisions, each with its Events.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from curation.rules import access, clock
from curation.models import ConsolidationProposal, Entry, EventAction, Status
from curation.rules.permissions import REVIEW
from curation.rules.redaction import redact_fields
from curation.rules.similarity import merged_content, normalise

from .conflicts import close_moot_conflicts, detect_conflicts_for
from .candidates import within_undo_window
from .entry_writes import changes_since, write_entry
from .errors import InvalidTransition, StaleDecision
from .events import record_event
from .merging import merge_entries, supersede_entry
from .validation import clean_entry_fields

SWEEP_ACTOR = "lifecycle:consolidation"
CLUSTER_MAX = 10
EDITABLE = ("trigger", "content", "boundary", "conditions")


def proposal_key(kind: str, ids) -> str:
    return hashlib.sha256(f"{kind}:{','.join(str(i) for i in sorted(ids))}".encode()).hexdigest()


def merged_text(members: list[Entry]) -> dict:
    """The merge form's starting text: the strongest entry's trigger and content, then only the sentences
    of the others that say something new (similarity.merged_content), and every distinct boundary and
    keyword, so nothing a source said is lost and nothing is said twice before a person edits it."""
    ordered = sorted(members, key=lambda e: (-e.base_confidence, e.pk))
    content, _ = merged_content([e.content for e in ordered])
    boundaries, seen_b = [], set()
    for e in ordered:
        if e.boundary and normalise(e.boundary) not in seen_b:
            seen_b.add(normalise(e.boundary))
            boundaries.append(e.boundary)
    conditions = list(dict.fromkeys(c for e in ordered for c in e.conditions))
    return {
        "trigger": ordered[0].trigger,
        "content": content,
        "boundary": "\n".join(boundaries),
        "conditions": conditions,
    }


class MergeClusters:
    """Union-find over the entries found in near-duplicate pairs."""

    def __init__(self):
        self.parent: dict[int, int] = {}
        self.best: dict[int, float] = {}

    def find(self, x: int) -> int:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int, score: float) -> None:
        ra, rb = self.find(a), self.find(b)
        root, other = min(ra, rb), max(ra, rb)
        best = max(self.best.get(ra, 0.0), self.best.get(rb, 0.0), score)
        if other != root:
            self.parent[other] = root
            self.best.pop(other, None)
        self.best[root] = best

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for x in list(self.parent):
            out[self.find(x)].append(x)
        return [sorted(g) for g in out.values() if len(g) > 1]


def write_proposals(clusters: MergeClusters, outdated: dict, seen: dict, now) -> list[ConsolidationProposal]:
    candidates = []
    for group in clusters.groups():
        members = sorted((seen[i] for i in group), key=lambda e: -e.pk)[:CLUSTER_MAX]
        score = clusters.best.get(min(group), 0)
        candidates.append(
            (
                ConsolidationProposal.Kind.MERGE,
                members,
                None,
                f"{len(members)} entries in {members[0].scope}, up to {score:.2f} alike",
                score,
            )
        )
    for (older, newer), reason in sorted(outdated.items()):
        candidates.append((ConsolidationProposal.Kind.SUPERSEDE, [seen[older], seen[newer]], seen[newer], reason, 0.0))
    if not candidates:
        return []
    all_ids = {e.pk for _, members, *_ in candidates for e in members}
    keys = {proposal_key(kind, [e.pk for e in members]) for kind, members, *_ in candidates}
    known = set(ConsolidationProposal.objects.filter(key__in=keys).values_list("key", flat=True))
    busy = set(
        ConsolidationProposal.entries.through.objects.filter(
            entry_id__in=all_ids, consolidationproposal__state=ConsolidationProposal.State.OPEN
        ).values_list("entry_id", flat=True)
    )
    made = []
    for kind, members, target, reason, score in candidates:
        ids = [e.pk for e in members]
        key = proposal_key(kind, ids)
        if key in known or busy & set(ids):
            continue
        text = merged_text(members) if kind == ConsolidationProposal.Kind.MERGE else {}
        try:
            with transaction.atomic():
                proposal = ConsolidationProposal.objects.create(
                    kind=kind,
                    scope=members[0].scope,
                    key=key,
                    entry_versions={str(e.pk): e.version for e in members},
                    target=target,
                    proposed_trigger=text.get("trigger", ""),
                    proposed_content=text.get("content", ""),
                    proposed_boundary=text.get("boundary", ""),
                    proposed_conditions=text.get("conditions", []),
                    reason=reason,
                    score=score,
                    created_at=now,
                )
                proposal.entries.add(*members)
                record_event(
                    proposal,
                    actor=None,
                    actor_label=SWEEP_ACTOR,
                    action=EventAction.CONSOLIDATION_PROPOSED,
                    reason=reason,
                    after={"kind": kind, "entries": ids, "entry_versions": proposal.entry_versions},
                    at=now,
                )
        except IntegrityError:
            continue  # another sweep made it first
        busy |= set(ids)
        made.append(proposal)
    return made


# --- decisions --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProposalOutcome:
    proposal: ConsolidationProposal
    created: Entry | None = None
    kept: tuple = ()
    superseded: tuple = ()


def _load_open_proposal(proposal_id: int, actor) -> tuple[ConsolidationProposal, list[Entry]]:
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on consolidation proposals.")
    proposal = ConsolidationProposal.objects.select_for_update().get(pk=proposal_id)
    ids = [int(i) for i in proposal.entry_versions]
    members = list(Entry.objects.select_for_update().filter(pk__in=ids).order_by("id"))
    if not access.user_can_see_all(actor, [proposal.scope, *(e.scope for e in members)]):
        # outside the actor's scopes, or an entry of it is (moved since the sweep, by an edit on recheck):
        # as if it did not exist
        raise ConsolidationProposal.DoesNotExist
    if proposal.state != ConsolidationProposal.State.OPEN:
        who = proposal.decided_by.get_username() if proposal.decided_by_id else "someone"
        raise InvalidTransition(
            f"Proposal #{proposal.pk} was already {proposal.state} by {who}. Nothing of yours was saved."
        )
    return proposal, members


def _require_unchanged(proposal: ConsolidationProposal, members: list[Entry]) -> None:
    """The proposal was made from what the sweep read; an entry changed since is decided again by a person."""
    for entry in members:
        seen = proposal.entry_versions[str(entry.pk)]
        if entry.version != seen:
            raise StaleDecision(entry, changes_since(entry, seen))
        if entry.status != Status.ACTIVE:
            raise InvalidTransition(f"Entry #{entry.pk} is now {entry.status}: dismiss this proposal.")


def _decide(proposal: ConsolidationProposal, *, actor, state: str, note: str, now, result=None) -> None:
    proposal.state = state
    proposal.decided_by = actor
    proposal.decided_at = now
    proposal.decision_note = note
    proposal.result = result
    proposal.save(update_fields=["state", "decided_by", "decided_at", "decision_note", "result"])


def accept_proposal(proposal_id: int, *, actor, edits: dict | None = None, note: str = "", at=None) -> ProposalOutcome:
    """Accept a proposal as is, or (merge only) after editing its text.

    merge: one new active entry with the (edited) text in the proposal's scope, carrying copies of every
    source's evidence; every source is superseded by it. supersede: the newer entry stays (and records the
    older in `supersedes` when that is empty); the older is superseded by it."""
    now = at or clock.now()
    note = (note or "").strip()
    with transaction.atomic():
        proposal, members = _load_open_proposal(proposal_id, actor)
        _require_unchanged(proposal, members)
        extra = {"proposal": proposal.pk}
        if proposal.kind == ConsolidationProposal.Kind.MERGE:
            text = {
                "trigger": proposal.proposed_trigger,
                "content": proposal.proposed_content,
                "boundary": proposal.proposed_boundary,
                "conditions": proposal.proposed_conditions,
            }
            edited = sorted(f for f in EDITABLE if edits and f in edits)
            text.update({f: edits[f] for f in edited})
            text, findings = redact_fields(text, EDITABLE)
            fields = clean_entry_fields(text, fields=EDITABLE)
            primary = max(members, key=lambda e: (e.base_confidence, -e.pk))
            merged = merge_entries(
                members,
                fields={**fields, "kind": primary.kind, "scope": proposal.scope},
                flags=[f.as_flag() for f in findings],
                actor=actor,
                origin=f"consolidation #{proposal.pk}",
                reason=note
                or f"consolidation #{proposal.pk}: merged {', '.join(f'#{e.pk}' for e in members)}"
                + (f" (edited {', '.join(edited)})" if edited else ""),
                action=EventAction.CONSOLIDATION_MERGE,
                extra={**extra, "edited": edited},
                now=now,
                also=(proposal,),
            )
            for entry in members:
                supersede_entry(
                    entry,
                    merged,
                    actor=actor,
                    extra=extra,
                    now=now,
                    also=(proposal,),
                    reason=note or f"consolidation #{proposal.pk}: merged into #{merged.pk}",
                )
            close_moot_conflicts(members, actor=actor, now=now, except_id=0)
            detect_conflicts_for(merged, detected_by="merge", at=now)
            _decide(
                proposal, actor=actor, state=ConsolidationProposal.State.ACCEPTED, note=note, now=now, result=merged
            )
            return ProposalOutcome(proposal, created=merged, superseded=tuple(members))
        target = next(e for e in members if e.pk == proposal.target_id)
        older = [e for e in members if e.pk != target.pk]
        write_entry(
            target,
            {"supersedes_id": older[0].pk} if target.supersedes_id is None else {},
            action=EventAction.CONSOLIDATION_KEEP,
            actor=actor,
            reason=note or f"consolidation #{proposal.pk}: replaces {', '.join(f'#{e.pk}' for e in older)}",
            after_extra={"superseded": [e.pk for e in older], **extra},
            at=now,
            also=(proposal,),
        )
        for entry in older:
            supersede_entry(
                entry,
                target,
                actor=actor,
                extra=extra,
                now=now,
                also=(proposal,),
                reason=note or f"consolidation #{proposal.pk}: outdated, replaced by #{target.pk}",
            )
        close_moot_conflicts(older, actor=actor, now=now, except_id=0)
        _decide(proposal, actor=actor, state=ConsolidationProposal.State.ACCEPTED, note=note, now=now)
        return ProposalOutcome(proposal, kept=(target,), superseded=tuple(older))


def dismiss_proposal(proposal_id: int, *, actor, note: str = "", at=None) -> ProposalOutcome:
    """Not worth doing: the entries stay as they are, and this proposal is never made again."""
    now = at or clock.now()
    note = (note or "").strip()
    with transaction.atomic():
        proposal, members = _load_open_proposal(proposal_id, actor)
        for entry in members:
            record_event(
                entry,
                actor=actor,
                action=EventAction.CONSOLIDATION_DISMISSED,
                reason=note or f"consolidation #{proposal.pk} ({proposal.kind}) dismissed",
                after={"proposal": proposal.pk},
                at=now,
                also=(proposal,),
            )
        _decide(proposal, actor=actor, state=ConsolidationProposal.State.DISMISSED, note=note, now=now)
    return ProposalOutcome(proposal, kept=tuple(members))


def why_not_undoable(proposal: ConsolidationProposal) -> str:
    """Why a decided proposal is not taken back with Undo ("": it is, a dismissal)."""
    if proposal.state != ConsolidationProposal.State.ACCEPTED:
        return ""
    if proposal.result_id:
        return f"the merge wrote new entry #{proposal.result_id}, which agents may read already; supersede or retire it on its page"
    return "Undo takes back a dismissal only; the replaced entries stay superseded"


def undo_dismissal(proposal_id: int, *, actor, note: str = "", at=None) -> ProposalOutcome:
    """Take back the actor's own dismissal of a proposal, within UNDO_SECONDS: the proposal is open again,
    with an "undo" Event on each of its entries (a dismissal changed none of them, nor does its undo).
    Refused when one of its entries is in another open proposal since: it is decided there."""
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on consolidation proposals.")
    now = at or clock.now()
    note = (note or "").strip()
    with transaction.atomic():
        proposal = ConsolidationProposal.objects.select_for_update().get(pk=proposal_id)
        members = list(Entry.objects.select_for_update().filter(pk__in=[int(i) for i in proposal.entry_versions]))
        if not access.user_can_see_all(actor, [proposal.scope, *(e.scope for e in members)]):
            raise ConsolidationProposal.DoesNotExist
        if proposal.state == ConsolidationProposal.State.OPEN:
            raise InvalidTransition(f"Proposal #{proposal.pk} is open: there is no decision to undo.")
        if proposal.decided_by_id != actor.pk:
            raise InvalidTransition(f"Proposal #{proposal.pk}'s decision is not one of yours to undo.")
        why = why_not_undoable(proposal)
        if why:
            raise InvalidTransition(f"Proposal #{proposal.pk} cannot be undone: {why}.")
        within_undo_window(proposal.decided_at, now, f"proposal #{proposal.pk}")
        elsewhere = (
            ConsolidationProposal.entries.through.objects.filter(
                entry_id__in=[e.pk for e in members], consolidationproposal__state=ConsolidationProposal.State.OPEN
            )
            .exclude(consolidationproposal_id=proposal.pk)
            .first()
        )
        if elsewhere:
            raise InvalidTransition(
                f"#{elsewhere.entry_id} is in proposal #{elsewhere.consolidationproposal_id} since; decide it there."
            )
        for entry in members:
            record_event(
                entry,
                actor=actor,
                action=EventAction.UNDO,
                reason=note or f'consolidation #{proposal.pk}: undid "consolidation dismissed"',
                before={"proposal": proposal.pk, "state": proposal.state},
                after={"proposal": proposal.pk, "state": ConsolidationProposal.State.OPEN},
                at=now,
                also=(proposal,),
            )
        proposal.state, proposal.decided_by, proposal.decided_at, proposal.decision_note = "open", None, None, ""
        proposal.save(update_fields=["state", "decided_by", "decided_at", "decision_note"])
    return ProposalOutcome(proposal, kept=tuple(members))


@dataclass(frozen=True)
class BulkOutcome:
    proposal_id: int
    ok: bool
    message: str


def bulk_decide_proposals(ids: list[int], *, actor, action: str, note: str = "", at=None) -> list[BulkOutcome]:
    """Accept (as proposed) or dismiss many proposals; each is its own decision with its Events."""
    if action not in ("accept", "dismiss"):
        raise ValidationError({"action": ["Bulk actions are accept or dismiss."]})
    if not actor.has_perm(REVIEW):
        raise PermissionDenied("Only reviewers and leads decide on consolidation proposals.")
    decide = accept_proposal if action == "accept" else dismiss_proposal
    outcomes = []
    for proposal_id in ids:
        try:
            decide(proposal_id, actor=actor, note=note, at=at)
            outcomes.append(BulkOutcome(proposal_id, True, f"{action}ed"))
        except ConsolidationProposal.DoesNotExist:
            outcomes.append(BulkOutcome(proposal_id, False, "not found"))
        except (StaleDecision, InvalidTransition) as exc:
            outcomes.append(BulkOutcome(proposal_id, False, str(exc)))
        except ValidationError as exc:
            outcomes.append(BulkOutcome(proposal_id, False, "; ".join(exc.messages)))
    return outcomes
