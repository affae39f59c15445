"""Skill promotions: a sweep nominates, agents report trial runs, a reviewer
edits the draft, a lead approves (only with the trials the gate asks for) or anyone who reviews rejects,
and a lead retires an approved skill.

While a skill is approved its source entries are withheld from retrieval (selectors.retrieve_memory):
agents get the skill instead. Retiring it gives them back. The entries themselves never change state
here; every decision (and every trial) writes one Event about the skill, carrying the proposal's id and
version, so the skill's history is its own Events, and an entry's page shows those of the skills it is
a source of."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q

from curation.rules import access, clock, injection, lifecycle, skill_format, trust
from curation.rules.forgetting import purge_text, purge_value, texts_to_purge
from curation.models import (
    SKILL_DESCRIPTION_MAX,
    SKILL_SLUG_MAX,
    SKILL_SLUG_PATTERN,
    SKILL_TEXT_MAX,
    AgentToken,
    Entry,
    Event,
    EventAction,
    ReleasedSkill,
    SkillProposal,
    SkillSource,
    SkillTrial,
    Status,
)
from curation.rules.permissions import SKILL_DECISIONS
from curation.rules.redaction import redact_fields
from curation.selectors.forgets import tombstone_for
from curation.selectors.skills import skill_events, unread_injection
from curation.rules.storable_text import text_problem

from .errors import GateNotMet, InvalidTransition, StaleProposal
from .events import build_event, record_event, record_events, rewrite_purged_text
from .validation import unknown_fields


DRAFT_TEXT_FIELDS = ("description", "when_to_use", "steps", "parameters", "verification", "rollback", "pitfalls")
DRAFT_FIELDS = ("slug", *DRAFT_TEXT_FIELDS, "sources")
# A change to these is a different procedure: the trials reported so far were runs of another one.
EXECUTABLE_FIELDS = ("steps", "parameters", "verification", "rollback")
REQUIRED_FIELDS = {
    "slug": "Name the skill: lowercase letters, digits and single hyphens, e.g. run-migrations-from-srv-app.",
    "description": "Say what the skill does and when to use it: agents read only this before they load it.",
    "steps": "A skill needs its steps.",
    "rollback": "A skill needs a rollback path: say how to undo it when it fails.",
}
TRIAL_FIELDS = frozenset({"outcome", "task_ref", "notes"})
_SLUG = re.compile(SKILL_SLUG_PATTERN)
_ENTRY_ID = re.compile(r"#?(\d+)")


# --- decisions -------------------------------------------------------------------------------------------


def draft_of(proposal: SkillProposal) -> dict:
    return {"slug": proposal.slug, **{f: getattr(proposal, f) for f in DRAFT_TEXT_FIELDS}}


def screen_draft(proposal: SkillProposal) -> list[str]:
    """Read the proposal's draft as it is now with the injection detector (the one place a skill draft is
    screened: a nomination's, an edit's, an import's). What it finds is stored on the proposal for the card; a
    finding that differs from the one a lead acknowledged asks a lead again. Answers the findings."""
    found = injection.found(draft_of(proposal), DRAFT_TEXT_FIELDS)
    if found != proposal.injection_found:
        proposal.injection_acknowledged_by, proposal.injection_acknowledged_at = None, None
    proposal.injection_found = found
    return found


SCREENED_FIELDS = ("injection_found", "injection_acknowledged_by", "injection_acknowledged_at")


def proposal_ref(proposal: SkillProposal) -> dict:
    return {
        "proposal": proposal.pk,
        "skill": proposal.slug,
        "proposal_version": proposal.version,
        "revision": proposal.revision,
    }


@dataclass(frozen=True)
class SkillOutcome:
    proposal: SkillProposal
    changed: tuple = ()  # the draft fields an edit changed
    sources_changed: bool = False

    @property
    def summary(self) -> str:
        parts = list(self.changed) + (["sources"] if self.sources_changed else [])
        return f"saved {', '.join(parts)}" if parts else "nothing changed"


def require_allowed(actor, decision: str) -> None:
    """PermissionDenied unless the actor's role makes this skill decision (the views' decorators ask the
    same table before they read a form)."""
    perm, message = SKILL_DECISIONS[decision]
    if not actor.has_perm(perm):
        raise PermissionDenied(message)


def _load(proposal_id: int, actor, expected_version: int | None) -> tuple[SkillProposal, list[SkillSource]]:
    """The proposal and its live sources, locked; SkillProposal.DoesNotExist outside the actor's scopes."""
    proposal = SkillProposal.objects.select_for_update().get(pk=proposal_id)
    if not access.user_can_see_scope(actor, proposal.scope):
        raise SkillProposal.DoesNotExist
    if expected_version is not None and proposal.version != expected_version:
        raise StaleProposal(proposal, changes_since(proposal, expected_version))
    return proposal, _live_sources(proposal)


def _live_sources(proposal: SkillProposal) -> list[SkillSource]:
    """The proposal's live sources with their entries, locked: a decision depends on their state."""
    sources = list(proposal.sources.filter(live=True).order_by("entry_id"))
    by_id = {e.pk: e for e in Entry.objects.select_for_update().filter(pk__in=[s.entry_id for s in sources])}
    for source in sources:
        source.entry = by_id[source.entry_id]
    return sources


def changes_since(proposal: SkillProposal, version: int) -> list[Event]:
    """The decisions on the proposal after `version`, from its own Events (at most 20)."""
    events = skill_events(proposal).filter(after__proposal_version__gt=version).order_by("-created_at", "-id")[:20]
    return sorted(events, key=lambda e: (e.created_at, e.pk))


def _require_nominated(proposal: SkillProposal, doing: str) -> None:
    if proposal.status != SkillProposal.Status.NOMINATED:
        who = f" by {proposal.decided_by.get_username()}" if proposal.decided_by_id else ""
        raise InvalidTransition(
            f"Skill {proposal.slug} was already {proposal.status}{who}: it cannot be {doing}. "
            "Nothing of yours was saved."
        )


def _record(
    proposal: SkillProposal,
    *,
    actor=None,
    actor_label: str = "",
    action: EventAction,
    reason: str,
    before=None,
    after=None,
    now,
) -> None:
    """The one Event of a decision (or a trial) about the skill, carrying its id, version and revision."""
    record_event(
        proposal,
        actor=actor,
        actor_label=actor_label,
        action=action,
        reason=reason,
        before=before,
        after={**proposal_ref(proposal), **(after or {})},
        at=now,
    )


def _save(proposal: SkillProposal, now, fields) -> None:
    proposal.version += 1
    proposal.updated_at = now
    proposal.save(update_fields=[*fields, "version", "updated_at"])


def _text(errors: dict, data: dict, field: str, *, max_length: int) -> str | None:
    value = data.get(field)
    if value is None:
        value = ""
    if not isinstance(value, str):
        errors[field] = ["Must be text."]
        return None
    value = value.replace("\r\n", "\n").strip()
    if problem := text_problem(value):
        errors[field] = [problem]
    elif len(value) > max_length:
        errors[field] = [f"At most {max_length:,} characters (this has {len(value):,})."]
    elif not value and field in REQUIRED_FIELDS:
        errors[field] = [REQUIRED_FIELDS[field]]
    return value


def _source_ids(value) -> list[int] | None:
    if isinstance(value, str):
        tokens = [t for t in re.split(r"[\s,;]+", value) if t]
        if not all(_ENTRY_ID.fullmatch(t) for t in tokens):
            return None
        return list(dict.fromkeys(int(_ENTRY_ID.fullmatch(t).group(1)) for t in tokens))
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(dict.fromkeys(value))
    return None


def _nominated_entry_is_live(proposal: SkillProposal) -> bool:
    """The nominated entry stays a source, unless it was forgotten (its source row closed then)."""
    return proposal.sources.filter(entry_id=proposal.nominated_entry_id, live=True).exists()


def clean_draft(data: dict, *, proposal: SkillProposal, actor) -> dict:
    """The draft fields present in `data`, checked; one ValidationError with a message per bad field."""
    errors = unknown_fields(data, DRAFT_FIELDS)
    cleaned: dict = {}
    for field in DRAFT_TEXT_FIELDS:
        if field in data:
            limit = SKILL_DESCRIPTION_MAX if field == "description" else SKILL_TEXT_MAX
            cleaned[field] = _text(errors, data, field, max_length=limit)
    if "slug" in data:
        slug = _text(errors, data, "slug", max_length=SKILL_SLUG_MAX)
        if slug and "slug" not in errors:
            if not _SLUG.match(slug):
                errors["slug"] = [
                    f"Lowercase letters a-z, digits and single hyphens between them, at most "
                    f"{SKILL_SLUG_MAX} characters (e.g. {skill_format.slug_base(slug)})."
                ]
            else:
                other = SkillProposal.objects.filter(slug=slug).exclude(pk=proposal.pk).first()
                if other and access.user_can_see_scope(actor, other.scope):
                    errors["slug"] = [f"Already the name of skill #{other.pk} ({other.status}); choose another."]
                elif other:  # a name is unique everywhere; a skill outside the actor's scopes stays unnamed
                    errors["slug"] = ["This name is not available; choose another."]
        cleaned["slug"] = slug
    if "sources" in data:
        ids = _source_ids(data["sources"])
        if ids is None:
            errors["sources"] = ["Entry ids, e.g. #12, #15."]
        elif proposal.nominated_entry_id not in ids and _nominated_entry_is_live(proposal):
            errors["sources"] = [f"The nominated entry #{proposal.nominated_entry_id} stays a source."]
        elif len(ids) > 20:
            errors["sources"] = ["At most 20 source entries."]
        cleaned["sources"] = ids
    if errors:
        raise ValidationError(errors)
    return cleaned


# What a skill is for and what it does, compared with the forgotten lessons as a lesson's trigger and content.
TRIGGER_TEXTS = ("description", "when_to_use")
CONTENT_TEXTS = ("steps", "parameters", "verification", "rollback", "pitfalls")


def refuse_forgotten_draft(scope: str, draft: dict) -> None:
    """ValidationError naming the forget request when this draft repeats a forgotten lesson in an overlapping
    scope: a skill text is a write like any other, and a forgotten lesson does not come back as a skill."""
    stone = tombstone_for(
        scope, "\n".join(draft[f] or "" for f in TRIGGER_TEXTS), "\n".join(draft[f] or "" for f in CONTENT_TEXTS)
    )
    if stone is not None:
        raise ValidationError(
            {
                "forgotten": [
                    f"This skill's text repeats a lesson forgotten by forget request #{stone.request_id} "
                    f"(on {stone.forgotten_on:%Y-%m-%d}): write it without that lesson. Nothing was saved."
                ]
            }
        )


def _check_new_sources(proposal: SkillProposal, ids: list[int], actor) -> list[Entry]:
    """Entries to add: visible to the actor, active, at or below the proposal's scope (so that withholding
    them never takes a lesson away from an agent the skill does not reach), and in no other live proposal."""
    entries = {
        e.pk: e
        for e in Entry.objects.select_for_update().filter(pk__in=ids)
        if access.user_can_see_scope(actor, e.scope)
    }
    problems = []
    for pk in ids:
        entry = entries.get(pk)
        if entry is None:
            problems.append(f"#{pk}: no such entry in your scopes")
        elif entry.status != Status.ACTIVE:
            problems.append(f"#{pk} is {entry.status}, not active")
        elif not access.scope_covers(proposal.scope, entry.scope):
            problems.append(f"#{pk} is in {entry.scope}, outside the skill's scope {proposal.scope}")
    held = (
        SkillSource.objects.filter(entry_id__in=list(entries), live=True)
        .exclude(proposal=proposal)
        .values_list("entry_id", "proposal__slug", "proposal__scope")
    )
    problems += [
        f"#{pk} is already a source of "
        + (f"skill {slug}" if access.user_can_see_scope(actor, scope) else "another skill")
        for pk, slug, scope in sorted(held)
    ]
    if problems:
        raise ValidationError({"sources": problems})
    return [entries[pk] for pk in ids]


def edit_skill_draft(
    proposal_id: int, *, actor, expected_version: int, changes: dict, note: str = "", at=None
) -> SkillOutcome:
    """Change the draft of a nominated skill (reviewers and leads). Fields not in `changes` stay; a change to
    the steps, parameters, verification or rollback starts a new revision, and the trials start again.
    Secrets and personal data typed into the draft are redacted and flagged. Nothing changed, nothing written."""
    require_allowed(actor, "edit")
    if not isinstance(changes, dict):
        raise ValidationError({"_": ["The changes are an object of draft fields."]})
    now = at or clock.now()
    with transaction.atomic():
        proposal, sources = _load(proposal_id, actor, expected_version)
        _require_nominated(proposal, "edited")
        texts = [f for f in DRAFT_TEXT_FIELDS if isinstance(changes.get(f), str)]
        changes, findings = redact_fields(changes, texts)
        cleaned = clean_draft(changes, proposal=proposal, actor=actor)
        before = draft_of(proposal)
        changed = [f for f in ("slug", *DRAFT_TEXT_FIELDS) if f in cleaned and cleaned[f] != before[f]]
        if any(f in DRAFT_TEXT_FIELDS for f in changed):
            refuse_forgotten_draft(proposal.scope, {**before, **{f: cleaned[f] for f in changed}})
        current = [s.entry_id for s in sources]
        new_ids = cleaned.get("sources", current)
        added = [pk for pk in new_ids if pk not in current]
        removed = [s for s in sources if s.entry_id not in new_ids]
        added_entries = _check_new_sources(proposal, added, actor) if added else []
        if not changed and not added and not removed:
            return SkillOutcome(proposal)
        for field in changed:
            setattr(proposal, field, cleaned[field])
        if any(f in EXECUTABLE_FIELDS for f in changed):
            proposal.revision += 1
        proposal.flags = [*proposal.flags, *(f.as_flag() for f in findings)]
        before_found = list(proposal.injection_found)
        found = screen_draft(proposal)
        # A lead's first approval was of the draft as it was: a changed draft needs both approvals again.
        halved = proposal.first_approval_by_id is not None
        proposal.first_approval_by, proposal.first_approval_at = None, None
        try:
            with transaction.atomic():
                _save(
                    proposal,
                    now,
                    [
                        "slug",
                        *DRAFT_TEXT_FIELDS,
                        "revision",
                        "flags",
                        "first_approval_by",
                        "first_approval_at",
                        *SCREENED_FIELDS,
                    ],
                )
        except IntegrityError:
            raise ValidationError({"slug": ["Another skill took this name a moment ago; choose another."]}) from None
        if removed:
            SkillSource.objects.filter(pk__in=[s.pk for s in removed]).update(live=False, removed_at=now)
        for entry in added_entries:
            try:
                with transaction.atomic():
                    SkillSource.objects.update_or_create(
                        proposal=proposal,
                        entry=entry,
                        defaults={
                            "live": True,
                            "entry_version": entry.version,
                            "added_at": now,
                            "added_by_label": actor.get_username(),
                            "removed_at": None,
                        },
                    )
            except IntegrityError:
                raise ValidationError(
                    {"sources": [f"#{entry.pk} became a source of another skill meanwhile."]}
                ) from None
        parts = [f"edited {', '.join(changed)}"] if changed else []
        parts += [f"added source #{pk}" for pk in added] + [f"removed source #{s.entry_id}" for s in removed]
        if any(f in EXECUTABLE_FIELDS for f in changed):
            parts.append(f"revision {proposal.revision}: its trials start again")
        if halved:
            parts.append("the first lead's approval no longer holds")
        parts += [f"redacted {f.kind}" for f in findings]
        if found != before_found:
            parts.append(
                f"possible injection: {', '.join(found)}: a lead acknowledges it before it is published"
                if found
                else "the injection detector finds nothing in it now"
            )
        _record(
            proposal,
            actor=actor,
            action=EventAction.SKILL_DRAFT_EDITED,
            reason=note.strip() or "; ".join(parts),
            before={f: before[f] for f in changed} | ({"sources": current} if added or removed else {}),
            after={f: cleaned[f] for f in changed} | ({"sources": new_ids} if added or removed else {}),
            now=now,
        )
    return SkillOutcome(proposal, tuple(changed), sources_changed=bool(added or removed))


def trial_outcomes(proposal: SkillProposal) -> list[str]:
    return list(
        proposal.trials.filter(revision=proposal.revision)
        .order_by("created_at", "id")
        .values_list("outcome", flat=True)
    )


def approval_check(proposal: SkillProposal, sources: list[SkillSource]) -> tuple[lifecycle.TrialProgress, list[str]]:
    progress = lifecycle.trial_progress(trial_outcomes(proposal), lifecycle.skill_gates())
    inactive = [(s.entry_id, s.entry.status) for s in sources if s.entry.status != Status.ACTIVE]
    return progress, lifecycle.approval_blockers(
        progress=progress,
        rollback=proposal.rollback,
        steps=proposal.steps,
        inactive_sources=inactive,
        injection_unread=unread_injection(proposal),
    )


def skill_trust(sources: list[SkillSource]) -> trust.Trust:
    """A skill is no more trusted than the least trusted of its live sources (rules/trust.py)."""
    return trust.lowest(s.entry.trust for s in sources)


def approve_skill(proposal_id: int, *, actor, expected_version: int, note: str = "", at=None) -> SkillOutcome:
    """Publish the skill (leads only), when the gate passes: enough trials of this revision, all of them
    successful, a rollback path, every source still active. Its source entries leave retrieval. A skill
    made from low-trust sources (trust.skill_approvals_needed) needs two leads: the first approval is
    recorded (`skill_first_approval`) and the skill stays nominated until a different lead approves it."""
    require_allowed(actor, "approve")
    now = at or clock.now()
    with transaction.atomic():
        proposal, sources = _load(proposal_id, actor, expected_version)
        _require_nominated(proposal, "approved")
        refuse_forgotten_draft(proposal.scope, draft_of(proposal))
        progress, blockers = approval_check(proposal, sources)
        if blockers:
            raise GateNotMet(f"Skill {proposal.slug} cannot be approved yet", blockers)
        level = skill_trust(sources)
        if trust.skill_approvals_needed(level) > 1:
            if proposal.first_approval_by_id is None:
                return _first_skill_approval(proposal, level, actor=actor, note=note, now=now)
            if proposal.first_approval_by_id == actor.pk:
                raise InvalidTransition(
                    f"Skill {proposal.slug} is made from {level.label}-trust sources: a second lead, other than "
                    "the one who approved it first, publishes it. Nothing of yours was saved."
                )
        proposal.status = SkillProposal.Status.APPROVED
        proposal.decided_by, proposal.decided_at, proposal.decision_note = actor, now, note.strip()
        _save(proposal, now, ["status", "decided_by", "decided_at", "decision_note"])
        _record(
            proposal,
            actor=actor,
            action=EventAction.SKILL_APPROVED,
            reason=note.strip()
            or f"approved as skill {proposal.slug} after {progress.label}; withheld from "
            "retrieval while the skill is approved",
            before={"status": SkillProposal.Status.NOMINATED},
            after={"status": proposal.status},
            now=now,
        )
    return SkillOutcome(proposal)


def _first_skill_approval(proposal: SkillProposal, level: trust.Trust, *, actor, note: str, now) -> SkillOutcome:
    proposal.first_approval_by, proposal.first_approval_at = actor, now
    _save(proposal, now, ["first_approval_by", "first_approval_at"])
    _record(
        proposal,
        actor=actor,
        action=EventAction.SKILL_FIRST_APPROVAL,
        reason=note.strip()
        or f"approved by one lead of two: its sources' lowest trust is {level.label}, so a second lead publishes it",
        after={"first_approval_by": actor.get_username()},
        now=now,
    )
    return SkillOutcome(proposal)


def acknowledge_skill_injection(
    proposal_id: int, *, actor, expected_version: int, note: str = "", at=None
) -> SkillOutcome:
    """A lead read what the injection detector found in the draft (the card says it): the gate lets the draft be
    published again, and an Event records who acknowledged which findings. Only a lead (who alone approves a
    skill); a change to the draft that changes the findings asks again."""
    require_allowed(actor, "approve")
    now = at or clock.now()
    with transaction.atomic():
        proposal, _ = _load(proposal_id, actor, expected_version)
        _require_nominated(proposal, "acknowledged")
        if not unread_injection(proposal):
            raise InvalidTransition(
                f"Skill {proposal.slug}'s draft has no finding of the injection detector waiting for a lead. "
                "Nothing of yours was saved."
            )
        proposal.injection_acknowledged_by, proposal.injection_acknowledged_at = actor, now
        _save(proposal, now, ["injection_acknowledged_by", "injection_acknowledged_at"])
        _record(
            proposal,
            actor=actor,
            action=EventAction.SKILL_INJECTION_ACKNOWLEDGED,
            reason=note.strip() or f"read the possible injection in the draft: {', '.join(proposal.injection_found)}",
            after={"injection_found": proposal.injection_found},
            now=now,
        )
    return SkillOutcome(proposal)


def reject_skill(proposal_id: int, *, actor, expected_version: int, reason: str, at=None) -> SkillOutcome:
    """Not a skill (reviewers and leads): the entries stay as they are, and are never nominated again."""
    require_allowed(actor, "reject")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["Say why this is not a skill: whoever nominates the next one reads it."]})
    now = at or clock.now()
    with transaction.atomic():
        proposal, sources = _load(proposal_id, actor, expected_version)
        _require_nominated(proposal, "rejected")
        proposal.status = SkillProposal.Status.REJECTED
        proposal.decided_by, proposal.decided_at, proposal.decision_note = actor, now, reason
        _save(proposal, now, ["status", "decided_by", "decided_at", "decision_note"])
        SkillSource.objects.filter(proposal=proposal, live=True).update(live=False)
        _record(
            proposal,
            actor=actor,
            action=EventAction.SKILL_REJECTED,
            reason=reason,
            before={"status": SkillProposal.Status.NOMINATED},
            after={"status": proposal.status},
            now=now,
        )
    return SkillOutcome(proposal)


def retire_skill(proposal_id: int, *, actor, expected_version: int, reason: str, at=None) -> SkillOutcome:
    """Take an approved skill out of service (leads only): it is no longer served or exported, and its
    source entries return to normal retrieval. Kept, like everything, for the audit."""
    require_allowed(actor, "retire")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["Say why the skill is retired."]})
    now = at or clock.now()
    with transaction.atomic():
        proposal, sources = _load(proposal_id, actor, expected_version)
        if proposal.status != SkillProposal.Status.APPROVED:
            raise InvalidTransition(f"Skill {proposal.slug} is {proposal.status}: only an approved skill is retired.")
        proposal.status = SkillProposal.Status.RETIRED
        proposal.retired_by, proposal.retired_at, proposal.retire_reason = actor, now, reason
        _save(proposal, now, ["status", "retired_by", "retired_at", "retire_reason"])
        SkillSource.objects.filter(proposal=proposal, live=True).update(live=False)
        _record(
            proposal,
            actor=actor,
            action=EventAction.SKILL_RETIRED,
            reason=f"{reason} (back in retrieval)",
            before={"status": SkillProposal.Status.APPROVED},
            after={"status": proposal.status},
            now=now,
        )
    return SkillOutcome(proposal)


# --- trial runs, reported by agents ------------------------------------------------------------------


@dataclass(frozen=True)
class TrialReport:
    trial: SkillTrial
    recorded: bool  # False: this task's trial of this revision was already reported; nothing changed
    progress: lifecycle.TrialProgress
    proposal: SkillProposal


def clean_trial(data) -> dict:
    if not isinstance(data, dict):
        raise ValidationError({"_": ["The body is an object: {outcome, task_ref, notes}."]})
    errors = unknown_fields(data, TRIAL_FIELDS)
    if data.get("outcome") not in SkillTrial.Outcome.values:
        errors["outcome"] = ["success or failure."]
    task_ref = _text(errors, data, "task_ref", max_length=255)
    if task_ref == "" and "task_ref" not in errors:
        errors["task_ref"] = ["The task the trial ran in, e.g. task-2417: a trial is counted once per task."]
    notes = _text(errors, data, "notes", max_length=4000)
    if errors:
        raise ValidationError(errors)
    return {"outcome": data["outcome"], "task_ref": task_ref, "notes": notes}


def record_skill_trial(*, token: AgentToken, slug: str, data, at=None) -> TrialReport:
    """An agent ran a nominated skill as written and reports how it went. Counted for the proposal's
    current revision, once per task: a repeated report changes nothing and says so. SkillProposal.DoesNotExist
    for a skill outside the token's scopes."""
    cleaned = clean_trial(data)
    cleaned, findings = redact_fields(cleaned, ("task_ref", "notes"))
    now = at or clock.now()
    gates = lifecycle.skill_gates()
    with transaction.atomic():
        proposal = SkillProposal.objects.select_for_update().filter(slug=slug).first()
        if proposal is None or not access.token_covers(token, proposal.scope):
            raise SkillProposal.DoesNotExist
        if proposal.status != SkillProposal.Status.NOMINATED:
            raise InvalidTransition(
                f"Skill {proposal.slug} is {proposal.status}: trials are reported while a "
                "skill is nominated, before a lead decides."
            )
        existing = proposal.trials.filter(revision=proposal.revision, task_ref=cleaned["task_ref"]).first()
        if existing:
            return TrialReport(existing, False, lifecycle.trial_progress(trial_outcomes(proposal), gates), proposal)
        trial = SkillTrial.objects.create(
            proposal=proposal,
            revision=proposal.revision,
            token=token,
            reported_by_label=token.label,
            created_at=now,
            **cleaned,
        )
        progress = lifecycle.trial_progress(trial_outcomes(proposal), gates)
        reason = f"trial {trial.outcome} in {trial.task_ref} (revision {proposal.revision}): {progress.label}"
        if findings:
            reason += "".join(f"; redacted {f.kind}" for f in findings)
        _record(
            proposal,
            actor_label=token.label,
            action=EventAction.SKILL_TRIAL,
            reason=reason,
            after={"trial": trial.pk, "outcome": trial.outcome, "task_ref": trial.task_ref},
            now=now,
        )
    return TrialReport(trial, True, progress, proposal)


# --- withdrawal: a source entry was forgotten -------------------------------------------------------------


def withdraw_skills_made_of(entry_ids, *, request_id: int, marker: str, texts: list[str], actor, at) -> int:
    """The skills made of entries that a forget request forgets (a source now or once), inside the forget's
    transaction. For each one: its text that holds the forgotten lesson becomes the marker (all of it, and
    a neutral name, when the draft was made of the forgotten entry), in its own Events too; the forgotten
    source leaves it; an approved one goes back to the skill queue as nominated, for a lead to rewrite from
    its other sources or reject (a rejected or retired one stays so); its rows close where they start in
    every published version, so that no version, pinned or rolled back, serves it. One SKILL_WITHDRAWN
    Event each. Answers how many skills."""
    ids = list(entry_ids)
    proposals = list(
        SkillProposal.objects.select_for_update()
        .filter(pk__in=SkillSource.objects.filter(entry_id__in=ids).values("proposal_id"))
        .order_by("id")
    )
    for proposal in proposals:
        _withdraw(proposal, ids, request_id=request_id, marker=marker, texts=texts, actor=actor, now=at)
    return len(proposals)


def _withdraw(
    proposal: SkillProposal, ids: list[int], *, request_id: int, marker: str, texts: list[str], actor, now
) -> None:
    made_of_it = proposal.nominated_entry_id in ids
    before = draft_of(proposal)
    drafts, slugs = _drafts_in_history(proposal)
    draft = skill_format.withdrawn_draft(before, texts=texts, marker=marker, made_of_it=made_of_it)
    replaced = [f for f in DRAFT_TEXT_FIELDS if draft[f] != before[f]]
    for field in replaced:
        setattr(proposal, field, draft[field])
    if made_of_it:
        taken = set(SkillProposal.objects.filter(slug__startswith="withdrawn-skill-").values_list("slug", flat=True))
        proposal.slug = skill_format.unique_slug(skill_format.withdrawn_slug(proposal.pk), taken - {proposal.slug})
    if any(f in EXECUTABLE_FIELDS for f in replaced):
        proposal.revision += 1  # other steps now: the trials so far were runs of the forgotten ones
    screen_draft(proposal)  # the marker replaced text: what the detector finds is read again
    status = proposal.status
    gone = sorted(set(ids) & set(proposal.sources.values_list("entry_id", flat=True)))
    why = (
        f"withdrawn: its source entr{'y' if len(gone) == 1 else 'ies'} {', '.join(f'#{pk}' for pk in gone)} "
        f"{'was' if len(gone) == 1 else 'were'} forgotten by forget request #{request_id}"
    )
    if status in (SkillProposal.Status.APPROVED, SkillProposal.Status.NOMINATED):
        # What the lead reads on its card in the queue: why it is there, what to do.
        proposal.status, proposal.decided_by, proposal.decided_at = SkillProposal.Status.NOMINATED, None, None
        proposal.decision_note = (
            f"{'Back in the queue' if status == SkillProposal.Status.APPROVED else 'Changed'}"
            f", {why}: its text made of it is replaced by {marker}. Rewrite it from its other "
            "sources and run its trials again, or reject it."
        )
    else:
        proposal.decision_note = purge_text(proposal.decision_note, texts, marker)
    proposal.retire_reason = purge_text(proposal.retire_reason, texts, marker)
    _save(
        proposal,
        now,
        [
            "slug",
            *DRAFT_TEXT_FIELDS,
            "revision",
            "status",
            "decided_by",
            "decided_at",
            "decision_note",
            "retire_reason",
            *SCREENED_FIELDS,
        ],
    )
    SkillSource.objects.filter(proposal=proposal, entry_id__in=ids).update(live=False, removed_at=now)
    # No published version holds it any more, at any number: its rows close where they start.
    ReleasedSkill.objects.filter(skill=proposal).update(slug=proposal.slug, valid_to=F("valid_from"))
    # Its own Events quote its draft (the nomination's, every edit's) and its name: they go with it.
    own_texts = texts_to_purge([*texts, *(before[f] for f in replaced), *(drafts if made_of_it else ())])
    _purge_skill_history(
        proposal,
        request_id=request_id,
        marker=marker,
        texts=own_texts,
        slugs=slugs if made_of_it else [],
        whole=made_of_it,
    )
    _record(
        proposal,
        actor=actor,
        action=EventAction.SKILL_WITHDRAWN,
        now=now,
        reason=f"{why}; {', '.join(replaced) or 'no text'} replaced by {marker}"
        + ("; back in the skill queue" if status == SkillProposal.Status.APPROVED else ""),
        before={"status": status},
        after={"status": proposal.status, "replaced": replaced},
    )


def _drafts_in_history(proposal: SkillProposal) -> tuple[list[str], list[str]]:
    """Every draft text and every name of the skill that its Events hold (the nomination's draft, each
    edit's before and after), with its current ones."""
    texts, slugs = [*draft_of(proposal).values()], [proposal.slug]
    for before, after in skill_events(proposal).values_list("before", "after"):
        for snapshot in (before, after, *(v.get("draft") for v in (before, after) if isinstance(v, dict))):
            if not isinstance(snapshot, dict):
                continue
            texts += [snapshot[k] for k in skill_format.DRAFT_TEXTS if isinstance(snapshot.get(k), str)]
            slugs += [snapshot[k] for k in skill_format.SLUG_KEYS if isinstance(snapshot.get(k), str)]
    return texts, sorted({s for s in slugs if s}, key=lambda s: (-len(s), s))


def _purge_skill_history(
    proposal: SkillProposal, *, request_id: int, marker: str, texts: list[str], slugs: list[str], whole: bool
) -> None:
    """The skill's Events with the forgotten texts replaced (`whole`: every draft text and every old name).
    On PostgreSQL the history is append-only: the one function its trigger lets through for this,
    curation_forget_skill (migration 0033), does the same."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT curation_forget_skill(%s, %s, %s, %s)", [request_id, proposal.pk, slugs, texts])
        return

    def snapshot(value):
        if whole:
            value = skill_format.withdrawn_snapshot(value, marker=marker, new_slug=proposal.slug)
        return purge_value(value, texts, marker)

    def text(value):
        return purge_text(skill_format.replace_slugs(value, slugs, proposal.slug), texts, marker)

    for event in skill_events(proposal):
        rewrite_purged_text(
            event,
            before=snapshot(event.before),
            after=snapshot(event.after),
            reason=text(event.reason),
            entry_label=text(event.entry_label),
        )


# --- nominations -----------------------------------------------------------------------------------------
#
# The skill_nomination sweep picks the entries that pass the gates; inserting their proposals is here.


def nomination_reason(proposal: SkillProposal) -> str:
    """The reason of a nomination's Event: why, and what the injection detector found in its draft."""
    found = f"; possible injection: {', '.join(proposal.injection_found)}" if proposal.injection_found else ""
    return f"nominated as skill {proposal.slug}: {proposal.reason}{found}"


# What a nomination reads of an entry: its draft's sources, its version, and what the reason says.
NOMINEE_FIELDS = (
    "id",
    "kind",
    "scope",
    "trigger",
    "content",
    "boundary",
    "conditions",
    "status",
    "version",
    "hit_count",
    "utility_sum",
    "utility_n",
    "queued_at",
)


def nominate_skills(entries: list[Entry], *, reason_of: Callable[[Entry], str], actor_label: str, at) -> int:
    """A skill proposal for each of `entries` still active and not waiting for a recheck, with a draft made
    from the entry, the entry as its source, and one Event about both; `reason_of(entry)` says why it was
    nominated. All in one transaction; when a reviewer took a slug or linked one of the entries meanwhile,
    one entry at a time, skipping the refused. Answers how many were nominated."""
    if not entries:
        return 0
    try:
        with transaction.atomic():
            return _nominate(entries, reason_of=reason_of, actor_label=actor_label, at=at)
    except IntegrityError:
        made = 0
        for entry in entries:
            try:
                with transaction.atomic():
                    made += _nominate([entry], reason_of=reason_of, actor_label=actor_label, at=at)
            except IntegrityError:
                continue
        return made


def _nominate(entries: list[Entry], *, reason_of: Callable[[Entry], str], actor_label: str, at) -> int:
    ids = [e.pk for e in entries]
    locked = list(
        Entry.objects.select_for_update()
        .filter(pk__in=ids, status=Status.ACTIVE, queued_at__isnull=True)
        .only(*NOMINEE_FIELDS)
        .order_by("id")
    )
    if not locked:
        return 0
    drafts = {
        e.pk: skill_format.draft_from_entry(
            kind=e.kind,
            scope=e.scope,
            trigger=e.trigger,
            content=e.content,
            boundary=e.boundary,
            conditions=e.conditions,
        )
        for e in locked
    }
    bases = {d["slug"] for d in drafts.values()}
    taken = set(
        # A suffixed slug ("-2") may shorten its base: every slug sharing the first 54 characters is read.
        SkillProposal.objects.filter(
            reduce(or_, (Q(slug__startswith=b[: SKILL_SLUG_MAX - 10]) for b in bases))
        ).values_list("slug", flat=True)
    )
    proposals = []
    for e in locked:
        draft = drafts[e.pk]
        slug = skill_format.unique_slug(draft.pop("slug"), taken)
        taken.add(slug)
        proposals.append(
            SkillProposal(
                slug=slug,
                scope=e.scope,
                nominated_entry_id=e.pk,
                reason=reason_of(e),
                created_at=at,
                updated_at=at,
                created_by_label=actor_label,
                **draft,
            )
        )
    for proposal in proposals:
        screen_draft(proposal)
    SkillProposal.objects.bulk_create(proposals)
    by_entry = {p.nominated_entry_id: p for p in proposals}
    SkillSource.objects.bulk_create(
        SkillSource(
            proposal=by_entry[e.pk], entry_id=e.pk, entry_version=e.version, added_at=at, added_by_label=actor_label
        )
        for e in locked
    )
    # One Event each, about the new skill proposal and its entry: both histories show the nomination.
    record_events(
        build_event(
            by_entry[e.pk],
            also=(e,),
            actor=None,
            actor_label=actor_label,
            action=EventAction.SKILL_NOMINATED,
            reason=nomination_reason(by_entry[e.pk]),
            after={**proposal_ref(by_entry[e.pk]), "draft": draft_of(by_entry[e.pk])},
            at=at,
        )
        for e in locked
    )
    return len(locked)
