"""Skill promotions: the review queue (/review/skills/) and the approved skills (/skills/), with their SKILL.md
downloads. The review queue is a Queue (queues.py) like the other three. Every decision is one service call;
its decorator checks the role before the form is read (only a lead approves or retires), and the service
checks it again with the trials gate, whatever a template shows."""

from __future__ import annotations

import io
import zipfile

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from curation.rules.access import clean_scope
from curation.rules.lifecycle import skill_gates
from curation.models import SkillProposal
from curation.rules.permissions import READ, SKILL_DECISIONS, require
from curation.selectors import skills as skill_reads
from curation.selectors.forgets import ForgetInProgress
from curation.services import InvalidTransition
from curation.services import skills as service
from curation.services.errors import StaleProposal
from curation.views.filters import SkillFilterForm
from curation.views.queues import Queue, decision


def _entry_url(request):
    return lambda entry_id: request.build_absolute_uri(reverse("curation:entry", args=[entry_id]))


# The edit form: (field, label, rows, hint). Rows 0 is a one-line input.
DRAFT_FORM = (
    ("slug", "Name (slug)", 0, "lowercase letters, digits and hyphens; the export's directory name"),
    ("description", "Description", 3, "what it does and when to use it: agents read only this before loading it"),
    ("when_to_use", "When to use", 3, ""),
    ("steps", "Steps", 6, "changing the steps, parameters, verification or rollback starts the trials again"),
    ("parameters", "Parameters", 2, ""),
    ("verification", "Verification", 3, "how the agent checks that it worked"),
    ("rollback", "Rollback", 3, "how to undo it when it fails (required)"),
    ("pitfalls", "Pitfalls", 3, ""),
    ("sources", "Source entries", 0, "entry ids, e.g. #12, #15; the nominated entry stays"),
)


def _with_preview(request, proposal, *, form=None, errors=None):
    """What a card shows besides the proposal itself: its SKILL.md preview and the draft form's fields
    (what was typed, after a refused edit; else the draft)."""
    proposal.skill_md = skill_reads.skill_md(proposal, source_url=_entry_url(request))
    form, errors = form or {}, errors or {}
    current = {**service.draft_of(proposal), "sources": proposal.sources_text}
    proposal.form_fields = [
        {
            "name": name,
            "label": label,
            "rows": rows,
            "hint": hint,
            "value": form.get(name, current[name]),
            "errors": errors.get(name, []),
        }
        for name, label, rows, hint in DRAFT_FORM
    ]
    return proposal


# --- the review queue ---------------------------------------------------------------------------------------


class SkillPromotions(Queue):
    url_name = "skills-queue"
    card_url_name = "skill-card"
    page_template = "curation/skills_queue.html"
    card_template = "curation/partials/skill_card.html"
    decided_template = "curation/partials/skill_decided.html"
    filter_form = SkillFilterForm
    label = "skill proposals"
    empty = "No nominated skills"
    card_title = "Skill proposal"
    back_label = "the skill promotions"
    item_noun = "proposal"
    outcome_id = "proposal_id"
    dom_prefix = "skill"
    keys = (
        ("j / k", "next / previous proposal"),
        ("a", "approve and publish (leads, once the trials passed)"),
        ("e", "edit the draft (Ctrl+Enter saves)"),
        ("r", "reject (Enter sends)"),
        ("o", "open the nominated entry's page"),
    )
    missing = (SkillProposal.DoesNotExist,)
    not_found = "No such skill proposal in your scopes."
    refusals = (StaleProposal, InvalidTransition, ForgetInProgress)

    read_count = staticmethod(skill_reads.skill_count)
    count_noun = "nominated"
    decided_text = "Skill {item.slug}: {verb}."
    decided_attr = "proposal"

    def decided_verb(self, item, verb: str) -> str:
        if item.status == SkillProposal.Status.NOMINATED and item.first_approval_by_id:
            return "approved by one lead of two: a second lead publishes it"
        return verb

    def read_page(self, request, filters, cursor):
        page = skill_reads.skill_queue(request.user, filters, cursor=cursor)
        for proposal in page.items:
            _with_preview(request, proposal)
        return page

    def read_card(self, request, pk, *, form=None, errors=None):
        return _with_preview(request, skill_reads.skill_card(request.user, pk), form=form, errors=errors)

    def context(self, request):
        return {"trials_required": skill_gates().trials_required}

    def versions(self, request):
        return {"expected_version": _version(request)}


QUEUE = SkillPromotions()


def _version(request) -> int:
    raw = request.POST.get("version", "")
    if not raw.isdigit():
        raise ValidationError({"version": ["The form is missing the proposal's version; reload the page."]})
    return int(raw)


@decision(*SKILL_DECISIONS["edit"])
def edit(request, pk):
    """Save the draft (reviewers and leads); the card comes back with the changes."""
    form = {f: request.POST[f] for f in service.DRAFT_FIELDS if f in request.POST}

    def saved(outcome):
        summary = f"Draft {outcome.summary}."
        if not request.htmx:
            messages.success(request, f"Skill {outcome.proposal.slug}: {summary}")
            return redirect(QUEUE.back_url(request))
        return QUEUE.card_response(request, pk, saved=summary)

    return QUEUE.decide(
        request,
        pk,
        "saved",
        service.edit_skill_draft,
        panel="edit",
        form=form,
        answer=saved,
        changes=form,
        note=request.POST.get("note", ""),
    )


@decision(*SKILL_DECISIONS["approve"])
def approve(request, pk):
    return QUEUE.decide(request, pk, "approved and published", service.approve_skill, note=request.POST.get("note", ""))


@decision(*SKILL_DECISIONS["approve"])
def acknowledge(request, pk):
    """A lead read what the injection detector found in the draft: it may be published (once the gate passes)."""
    return QUEUE.decide(
        request,
        pk,
        "possible injection acknowledged",
        service.acknowledge_skill_injection,
        answer=lambda outcome: _acknowledged(request, pk, outcome),
        note=request.POST.get("note", ""),
    )


def _acknowledged(request, pk, outcome):
    said = "Possible injection acknowledged: the draft may be published once the gate passes."
    if not request.htmx:
        messages.success(request, f"Skill {outcome.proposal.slug}: {said}")
        return redirect(QUEUE.back_url(request))
    return QUEUE.card_response(request, pk, saved=said)


@decision(*SKILL_DECISIONS["reject"])
def reject(request, pk):
    reason = request.POST.get("reason", "")
    return QUEUE.decide(
        request,
        pk,
        "rejected, never nominated again",
        service.reject_skill,
        panel="reject",
        form={"reason": reason},
        reason=reason,
    )


urlpatterns = QUEUE.urls(
    "review/skills/", {"edit": edit, "approve": approve, "reject": reject, "acknowledge": acknowledge}
)


# --- approved skills --------------------------------------------------------------------------------------


@require_GET
@require(READ)
def skill_list(request):
    status = request.GET.get("status", SkillProposal.Status.APPROVED)
    if status not in (SkillProposal.Status.APPROVED, SkillProposal.Status.RETIRED):
        raise Http404("The skills list shows approved or retired skills.")
    scope = request.GET.get("scope") or ""
    try:
        scope = clean_scope(scope) if scope.strip() else ""
    except ValidationError as exc:
        return render(
            request,
            "curation/skills.html",
            {"skills": [], "status": status, "scope": scope, "filter_errors": {"scope": exc.messages}},
            status=422,
        )
    found = [_with_preview(request, p) for p in skill_reads.skills_list(request.user, status=status, scope=scope)]
    return render(request, "curation/skills.html", {"skills": found, "status": status, "scope": scope})


def _visible_skill(request, slug) -> SkillProposal:
    try:
        return _with_preview(request, skill_reads.skill_by_slug(request.user, slug))
    except SkillProposal.DoesNotExist:
        raise Http404("No such skill in your scopes.") from None


@require_GET
@require(READ)
def skill_page(request, slug):
    skill = _visible_skill(request, slug)
    if skill.status in (SkillProposal.Status.NOMINATED, SkillProposal.Status.REJECTED):
        return redirect("curation:skill-card", skill.pk)  # never a skill: its card tells its story
    return render(request, "curation/skill.html", {"skill": skill, "history": skill_reads.skill_history(skill)})


@require_GET
@require(READ)
def skill_md(request, slug):
    """The skill's SKILL.md, as a download named `<slug>-SKILL.md` (several downloads do not overwrite
    one another); it goes to `<skills dir>/<slug>/SKILL.md`. The slug is validated (SKILL_SLUG_PATTERN)."""
    skill = _visible_skill(request, slug)
    response = HttpResponse(skill.skill_md, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{skill.slug}-SKILL.md"'
    return response


@require_GET
@require(READ)
def export_zip(request):
    """Every approved skill in the user's scopes as `skills/<slug>/SKILL.md` in one zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for skill in skill_reads.skills_list(request.user):
            archive.writestr(
                f"skills/{skill.slug}/SKILL.md", skill_reads.skill_md(skill, source_url=_entry_url(request))
            )
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = 'attachment; filename="skills.zip"'
    return response


@require_POST
@require(*SKILL_DECISIONS["retire"])
def retire(request, slug):
    """Retire an approved skill (leads only): its source entries return to retrieval."""
    try:
        proposal_id = skill_reads.skill_id_by_slug(request.user, slug)
        outcome = service.retire_skill(
            proposal_id, actor=request.user, expected_version=_version(request), reason=request.POST.get("reason", "")
        )
    except SkillProposal.DoesNotExist:
        raise Http404("No such skill in your scopes.") from None
    except (StaleProposal, InvalidTransition) as exc:
        messages.error(request, str(exc))
        return redirect("curation:skill", slug)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("curation:skill", slug)
    messages.success(request, f"Skill {outcome.proposal.slug} retired: its source entries are back in retrieval.")
    return redirect("curation:skills")
