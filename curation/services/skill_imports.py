"""An imported SKILL.md becomes a skill proposal for a lead, nominated with the entry its procedure became
(that entry went through the agents' ingest first: redaction, tombstones, duplicates, conflicts, admission).
The draft is the file's own sections, redacted like a reviewer's edit, screened like any draft (a finding of
the injection detector waits for a lead's acknowledgement) and checked against the forgotten lessons; a lead
approves it as any other proposal (once its entry is active and its trials pass)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q

from curation.models import SKILL_SLUG_MAX, SKILL_TEXT_MAX, Entry, EventAction, SkillProposal, SkillSource, Status
from curation.rules import skill_format
from curation.rules.redaction import redact_fields
from curation.rules.skill_import import SkillDraft
from curation.selectors.forgets import ForgetInProgress

from .events import build_event, record_events
from .skills import DRAFT_TEXT_FIELDS, draft_of, nomination_reason, proposal_ref, refuse_forgotten_draft, screen_draft


def propose_imported_skill(entry: Entry, draft: SkillDraft, *, where: str, label: str, at) -> tuple[str, str]:
    """(the proposal's name, "") when `draft` became a skill proposal nominating `entry`; ("", why) when not.
    Runs inside the import's batch transaction."""
    if entry.held_by_id is not None or entry.status not in (Status.PENDING, Status.ACTIVE):
        return "", f"no skill proposal: its entry #{entry.pk} is {'held' if entry.held_by_id else entry.status}"
    if SkillSource.objects.filter(entry_id=entry.pk, live=True).exists():
        return "", f"no skill proposal: entry #{entry.pk} is already a source of a skill"
    texts, findings = redact_fields(draft.texts(), DRAFT_TEXT_FIELDS)
    too_long = [f for f in DRAFT_TEXT_FIELDS if f != "description" and len(texts[f]) > SKILL_TEXT_MAX]
    if too_long:
        return "", f"no skill proposal: its {too_long[0]} is longer than {SKILL_TEXT_MAX:,} characters"
    try:
        refuse_forgotten_draft(entry.scope, texts)
    except ForgetInProgress:
        raise  # the tombstones could not be read: the import's batch is tried again, not told "forgotten"
    except ValidationError:
        return "", "no skill proposal: it repeats a forgotten lesson"
    taken = set(
        SkillProposal.objects.filter(Q(slug__startswith=draft.slug[: SKILL_SLUG_MAX - 10])).values_list(
            "slug", flat=True
        )
    )
    slug = skill_format.unique_slug(draft.slug, taken)
    proposal = SkillProposal(
        slug=slug,
        scope=entry.scope,
        nominated_entry=entry,
        reason=f"imported from {where}" + (f" (named {draft.slug} there)" if slug != draft.slug else ""),
        flags=[f.as_flag() for f in findings],
        created_at=at,
        updated_at=at,
        created_by_label=label,
        **texts,
    )
    screen_draft(proposal)
    proposal.save(force_insert=True)
    SkillSource.objects.create(
        proposal=proposal, entry_id=entry.pk, entry_version=entry.version, added_at=at, added_by_label=label
    )
    record_events(
        [
            build_event(
                proposal,
                also=(entry,),
                actor=None,
                actor_label=label,
                action=EventAction.SKILL_NOMINATED,
                reason=nomination_reason(proposal),
                after={**proposal_ref(proposal), "draft": draft_of(proposal)},
                at=at,
            )
        ]
    )
    return slug, ""


def exported_skill_here(draft: SkillDraft) -> str:
    """The name of the skill here that this console's export wrote as `draft` (the same name, description and
    steps), "" when there is none: importing it would only repeat that skill."""
    if not draft.exported_entries:
        return ""
    here = SkillProposal.objects.filter(slug=draft.slug).only("slug", "description", "steps").first()
    if here is None:
        return ""
    same = " ".join(here.description.split()) == draft.description and here.steps.strip() == draft.steps.strip()
    return here.slug if same else ""
