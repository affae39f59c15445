"""Skills for agents: the approved skills of their scopes, one skill (a nominated one is what a trial runs),
and trial reports. Handlers parse, call one service or selector, and answer JSON."""

from __future__ import annotations

import re


from curation.models import SKILL_SLUG_MAX, SKILL_SLUG_PATTERN, SkillProposal
from curation.selectors import retrievable_scopes
from curation.selectors import releases
from curation.selectors import skills as skill_reads
from curation.services import skills as service
from curation.services.errors import InvalidTransition

from .http import ApiError, NotFound, api_view, query_int, read_version, readable_scope

_SLUG = re.compile(SKILL_SLUG_PATTERN)
NO_SKILL = "No such skill in this token's scopes."


def progress_json(progress) -> dict:
    return {
        "reported": progress.reported,
        "succeeded": progress.succeeded,
        "failed": progress.failed,
        "required": progress.required,
        "summary": progress.label,
        "passes": progress.passes,
    }


def skill_json(request, p: SkillProposal) -> dict:
    def entry_url(entry_id):
        return request.build_absolute_uri(f"/api/v1/entries/{entry_id}")

    return {
        "slug": p.slug,
        "name": p.slug,
        "scope": p.scope,
        "status": p.status,
        "description": p.description,
        "when_to_use": p.when_to_use,
        "steps": p.steps,
        "parameters": p.parameters,
        "verification": p.verification,
        "rollback": p.rollback,
        "pitfalls": p.pitfalls,
        "revision": p.revision,
        "sources": [s.entry_id for s in p.current_sources],
        "trust": p.trust.label,
        "trials": progress_json(p.progress),
        "approved_at": p.decided_at.isoformat() if p.status != "nominated" and p.decided_at else None,
        "path": f"skills/{p.slug}/SKILL.md",
        "skill_md": skill_reads.skill_md(p, source_url=entry_url),
    }


def _slug(value: str) -> str:
    if len(value) > SKILL_SLUG_MAX or not _SLUG.match(value):
        raise NotFound(NO_SKILL)
    return value


@api_view("GET")
def skill_list(request, token):
    """Approved skills of the published memory version (or the pinned `version=N`) for a scope (the scope
    and its ancestors the token covers), or for every scope of the token when no scope is given."""
    scopes = None
    raw = request.GET.get("scope")
    if raw is not None:
        scopes = retrievable_scopes(readable_scope(token, raw), token.scopes)
    limit = query_int(request.GET, "limit", 100, 1, 200)
    # The cursor is the last slug of the previous page; an empty `after=` is refused, not read as no cursor.
    after = request.GET.get("after")
    if after is not None and (len(after) > SKILL_SLUG_MAX or not _SLUG.match(after)):
        raise ApiError(
            422, "Some parameters are not valid.", {"after": ["The next_after of the previous page: a skill's name."]}
        )
    version = read_version(request.GET)
    found = skill_reads.skills_for_token(
        token, scopes=scopes, after=after or "", limit=limit + 1, released_in=releases.released_skill_ids(version)
    )
    page = found[:limit]
    return 200, {
        "memory_version": version,
        "skills": [skill_json(request, p) for p in page],
        "next_after": page[-1].slug if len(found) > limit else None,
    }


@api_view("GET")
def skill_detail(request, token, slug):
    try:
        proposal = skill_reads.skill_for_token(token, _slug(slug))
    except SkillProposal.DoesNotExist:
        raise NotFound(NO_SKILL) from None
    return 200, skill_json(request, proposal)


@api_view("POST", body=True)
def skill_trials(request, token, slug, body):
    """Report a trial run of a nominated skill: {outcome, task_ref, notes}."""
    try:
        report = service.record_skill_trial(token=token, slug=_slug(slug), data=body)
    except SkillProposal.DoesNotExist:
        raise NotFound(NO_SKILL) from None
    except InvalidTransition as exc:
        raise ApiError(409, str(exc)) from None
    trial = report.trial
    data = {
        "recorded": report.recorded,
        "trial": {
            "id": trial.pk,
            "outcome": trial.outcome,
            "task_ref": trial.task_ref,
            "notes": trial.notes,
            "revision": trial.revision,
            "reported_at": trial.created_at.isoformat(),
        },
        "skill": report.proposal.slug,
        "revision": report.proposal.revision,
        "trials": progress_json(report.progress),
    }
    if not report.recorded:
        data["message"] = (
            f"A trial from task {trial.task_ref!r} was already reported for this revision; nothing changed."
        )
    return (201 if report.recorded else 200), data
