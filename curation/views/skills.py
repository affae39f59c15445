"""Skill promotions: the review queue (/review/skills/) and the approved skills (/skills/), with their SKILL.md
downloads. Every decision is one service call; the services check the roles (only a lead approves or
retires) and the trials gate, whatever a template shows. As in the other queues, htmx gets the card's
fragment (and the count, out of band), a plain form post redirects back; bad input answers 422 and a stale
or refused decision 409, both with the card and its message."""

from __future__ import annotations

import io
import zipfile

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from curation.selectors import skills as selectors_skills
from curation.lifecycle import SKILL_KINDS, skill_gates
from curation.models import Kind, SkillProposal
from curation.permissions import PROMOTE, READ, REVIEW, require
from curation.selectors import BadCursor
from curation.selectors.skills import SkillFilters
from curation.services import InvalidTransition
from curation.services import skills as service
from curation.services.errors import StaleProposal

KINDS = [(k, Kind(k).label) for k in SKILL_KINDS]


def parse_filters(params) -> SkillFilters:
    kind = params.get("kind", "")
    if kind and kind not in SKILL_KINDS:
        raise ValidationError({"kind": [f"one of {', '.join(SKILL_KINDS)}"]})
    return SkillFilters(scope=(params.get("scope") or "").strip()[:255], kind=kind, ready=params.get("ready") == "1")


def _context(request) -> dict:
    return {"can_review": request.user.has_perm(REVIEW), "can_promote": request.user.has_perm(PROMOTE),
            "kinds": KINDS, "trials_required": skill_gates().trials_required}


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
    proposal.skill_md = selectors_skills.skill_md(proposal, source_url=_entry_url(request))
    form, errors = form or {}, errors or {}
    current = {**service.draft_of(proposal), "sources": proposal.sources_text}
    proposal.form_fields = [
        {"name": name, "label": label, "rows": rows, "hint": hint, "value": form.get(name, current[name]),
         "errors": errors.get(name, [])}
        for name, label, rows, hint in DRAFT_FORM
    ]
    return proposal


# --- the review queue ---------------------------------------------------------------------------------------


@require_GET
@require(READ)
@vary_on_headers("HX-Request")
def queue(request):
    context = _context(request)
    filters = SkillFilters()
    try:
        filters = parse_filters(request.GET)
        page = selectors_skills.skill_queue(request.user, filters, cursor=request.GET.get("after", ""))
    except ValidationError as exc:
        context.update(filter_errors=exc.message_dict, filters=filters, page=None)
        return render(request, "curation/skills_queue.html", context, status=400)
    except BadCursor as exc:
        context.update(filter_errors={"after": [str(exc)]}, filters=filters, page=None)
        return render(request, "curation/skills_queue.html", context, status=400)
    for proposal in page.proposals:
        _with_preview(request, proposal)
    query = request.GET.copy()
    query.pop("after", None)
    context.update(page=page, filters=filters, filter_query=query.urlencode())
    if request.htmx and not request.htmx.boosted and request.htmx.target == "queue":
        return render(request, "curation/partials/skill_list.html", context)
    return render(request, "curation/skills_queue.html", context)


@require_GET
@require(READ)
def card(request, proposal_id):
    return _card_response(request, proposal_id)


def _card_response(request, proposal_id, *, status=200, errors=None, refused=None, form=None, open_panel="",
                   saved=""):
    try:
        proposal = _with_preview(request, selectors_skills.skill_card(request.user, proposal_id), form=form,
                                 errors=errors)
    except SkillProposal.DoesNotExist:
        raise Http404("No such skill proposal in your scopes.") from None
    context = {**_context(request), "proposal": proposal, "errors": errors or {}, "refused": refused,
               "form": form or {}, "open_panel": open_panel, "saved": saved}
    template = "curation/partials/skill_card.html" if request.htmx else "curation/skill_card_page.html"
    return render(request, template, context, status=status)


def _back(request) -> str:
    """Where the user was: the queue (with its filters) or the card page, never an action URL."""
    back = request.POST.get("next", "")
    if back.startswith("/review/skills/") and not back.startswith("//"):
        try:
            if resolve(back.split("?")[0]).url_name in ("skills-queue", "skill-card"):
                return back
        except Resolver404:
            pass
    return reverse("curation:skills-queue")


def _version(request) -> int:
    raw = request.POST.get("version", "")
    if not raw.isdigit():
        raise ValidationError({"version": ["The form is missing the proposal's version; reload the page."]})
    return int(raw)


def _decide(request, proposal_id, decision, verb, call, *, panel="", form=None):
    """Run one decision and answer: the decided card, or the card again with what went wrong."""
    service.require_allowed(request.user, decision)
    try:
        outcome = call(_version(request))
    except SkillProposal.DoesNotExist:
        raise Http404("No such skill proposal in your scopes.") from None
    except (StaleProposal, InvalidTransition) as exc:
        return _card_response(request, proposal_id, status=409, refused=exc)
    except ValidationError as exc:
        return _card_response(request, proposal_id, status=422, errors=exc.message_dict, form=form or {},
                              open_panel=panel)
    proposal = outcome.proposal
    if not request.htmx:
        messages.success(request, f"Skill {proposal.slug}: {verb}.")
        return redirect(_back(request))
    try:
        filters = parse_filters(request.POST)
    except ValidationError:
        filters = SkillFilters()
    count, capped = selectors_skills.skill_count(request.user, filters)
    page = selectors_skills.SkillPage([], count=count, count_is_capped=capped)
    return render(request, "curation/partials/skill_decided.html",
                  {"proposal": proposal, "verb": verb, "page": page, "oob": True})


@require_POST
@require(READ)
def edit(request, proposal_id):
    """Save the draft (reviewers and leads); the card comes back with the changes."""
    service.require_allowed(request.user, "edit")
    form = {f: request.POST[f] for f in service.DRAFT_FIELDS if f in request.POST}
    try:
        outcome = service.edit_skill_draft(proposal_id, actor=request.user, expected_version=_version(request),
                                           changes=form, note=request.POST.get("note", ""))
    except SkillProposal.DoesNotExist:
        raise Http404("No such skill proposal in your scopes.") from None
    except (StaleProposal, InvalidTransition) as exc:
        return _card_response(request, proposal_id, status=409, refused=exc)
    except ValidationError as exc:
        return _card_response(request, proposal_id, status=422, errors=exc.message_dict, form=form, open_panel="edit")
    saved = f"Draft {outcome.summary}."
    if not request.htmx:
        messages.success(request, f"Skill {outcome.proposal.slug}: {saved}")
        return redirect(_back(request))
    return _card_response(request, proposal_id, saved=saved)


@require_POST
@require(READ)
def approve(request, proposal_id):
    return _decide(
        request, proposal_id, "approve", "approved and published",
        lambda version: service.approve_skill(proposal_id, actor=request.user, expected_version=version,
                                              note=request.POST.get("note", "")),
    )


@require_POST
@require(READ)
def reject(request, proposal_id):
    return _decide(
        request, proposal_id, "reject", "rejected, never nominated again",
        lambda version: service.reject_skill(proposal_id, actor=request.user, expected_version=version,
                                             reason=request.POST.get("reason", "")),
        panel="reject", form={"reason": request.POST.get("reason", "")},
    )


# --- approved skills --------------------------------------------------------------------------------------


@require_GET
@require(READ)
def skill_list(request):
    status = request.GET.get("status", SkillProposal.Status.APPROVED)
    if status not in (SkillProposal.Status.APPROVED, SkillProposal.Status.RETIRED):
        raise Http404("The skills list shows approved or retired skills.")
    scope = (request.GET.get("scope") or "").strip()[:255]
    found = [_with_preview(request, p) for p in selectors_skills.skills_list(request.user, status=status, scope=scope)]
    return render(request, "curation/skills.html", {**_context(request), "skills": found, "status": status,
                                                    "scope": scope})


def _visible_skill(request, slug) -> SkillProposal:
    try:
        return _with_preview(request, selectors_skills.skill_by_slug(request.user, slug))
    except SkillProposal.DoesNotExist:
        raise Http404("No such skill in your scopes.") from None


@require_GET
@require(READ)
def skill_page(request, slug):
    skill = _visible_skill(request, slug)
    if skill.status in (SkillProposal.Status.NOMINATED, SkillProposal.Status.REJECTED):
        return redirect("curation:skill-card", skill.pk)  # never a skill: its card tells its story
    return render(request, "curation/skill.html", {**_context(request), "skill": skill})


@require_GET
@require(READ)
def skill_md(request, slug):
    """The skill's SKILL.md, as a download: it goes to `<skills dir>/<slug>/SKILL.md`."""
    skill = _visible_skill(request, slug)
    response = HttpResponse(skill.skill_md, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="SKILL.md"'
    return response


@require_GET
@require(READ)
def export_zip(request):
    """Every approved skill in the user's scopes as `skills/<slug>/SKILL.md` in one zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for skill in selectors_skills.skills_list(request.user):
            archive.writestr(f"skills/{skill.slug}/SKILL.md",
                             selectors_skills.skill_md(skill, source_url=_entry_url(request)))
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = 'attachment; filename="skills.zip"'
    return response


@require_POST
@require(READ)
def retire(request, slug):
    """Retire an approved skill (leads only): its source entries return to retrieval."""
    service.require_allowed(request.user, "retire")
    try:
        proposal = SkillProposal.objects.only("pk", "scope").get(slug=slug)
        outcome = service.retire_skill(proposal.pk, actor=request.user, expected_version=_version(request),
                                       reason=request.POST.get("reason", ""))
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
