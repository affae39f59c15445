"""Reads for skill promotions: the review queue, one proposal, the approved skills (console, agent API,
export), each in a fixed number of queries whatever the number of proposals, sources or trials.

A proposal read here carries what its card shows: `current_sources` (with their entries), `recent_trials`,
`progress` (the trials of its current revision) and `blockers` (why a lead may not approve it yet)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Prefetch, Q, QuerySet, prefetch_related_objects

from curation.rules import access, lifecycle, skill_format, trust
from curation.models import AgentToken, Event, SkillProposal, SkillSource, SkillTrial, Status

from .entries import TIMELINE_LIMIT, TimelineItem, TimelinePage, event_changes
from .paging import Page, capped_count, read_page

PAGE_SIZE = 20
RECENT_TRIALS = 20
LIST_LIMIT = 500


def visible_skills(user):
    """Every proposal in the user's scopes (a user without scope grants sees them all)."""
    return SkillProposal.objects.filter(access.scope_q(access.user_scope_prefixes(user), "scope"))


def _annotated(qs):
    on_revision = Q(trials__revision=F("revision"))
    return qs.select_related("decided_by", "retired_by", "first_approval_by", "injection_acknowledged_by").annotate(
        trials_reported=Count("trials", filter=on_revision),
        trials_succeeded=Count("trials", filter=on_revision & Q(trials__outcome=SkillTrial.Outcome.SUCCESS)),
    )


def _with_parts(proposals: list[SkillProposal]) -> list[SkillProposal]:
    """Sources with their entries, and the recent trials: two queries for the whole list."""
    prefetch_related_objects(
        proposals,
        Prefetch(
            "sources",
            queryset=SkillSource.objects.filter(removed_at__isnull=True).select_related("entry").order_by("entry_id"),
            to_attr="current_sources",
        ),
        Prefetch(
            "trials",
            queryset=SkillTrial.objects.order_by("-created_at", "-id")[:RECENT_TRIALS],
            to_attr="recent_trials",
        ),
    )
    gates = lifecycle.skill_gates()
    for p in proposals:
        p.progress = lifecycle.TrialProgress(p.trials_reported, p.trials_succeeded, gates.trials_required)
        inactive = [(s.entry_id, s.entry.status) for s in p.current_sources if s.entry.status != Status.ACTIVE]
        p.blockers = lifecycle.approval_blockers(
            progress=p.progress,
            rollback=p.rollback,
            steps=p.steps,
            inactive_sources=inactive,
            injection_unread=unread_injection(p),
        )
        p.sources_text = ", ".join(f"#{s.entry_id}" for s in p.current_sources)
        # No more trusted than its least trusted source; below the threshold, two leads publish it.
        p.trust = trust.lowest(s.entry.trust for s in p.current_sources)
        p.approvals_needed = trust.skill_approvals_needed(p.trust)
    return proposals


def unread_injection(proposal: SkillProposal) -> list[str]:
    """What the injection detector found in the draft that no lead has acknowledged yet ([] when nothing)."""
    return [] if proposal.injection_acknowledged_at else list(proposal.injection_found)


# --- the review queue ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SkillFilters:
    scope: str = ""
    kind: str = ""  # the nominated entry's kind
    ready: bool = False  # only those a lead could approve now

    def as_q(self) -> Q:
        q = Q(status=SkillProposal.Status.NOMINATED)
        if self.scope:
            q &= access.under_scope(self.scope)
        if self.kind:
            q &= Q(nominated_entry__kind=self.kind)
        return q

    @property
    def active(self) -> bool:
        return bool(self.scope or self.kind or self.ready)


def _nominated(user, filters: SkillFilters):
    qs = visible_skills(user).filter(filters.as_q())
    if filters.ready:
        gates = lifecycle.skill_gates()
        on_revision = Q(trials__revision=F("revision"))
        qs = (
            qs.alias(
                reported=Count("trials", filter=on_revision),
                failed=Count("trials", filter=on_revision & Q(trials__outcome=SkillTrial.Outcome.FAILURE)),
            )
            .filter(reported__gte=gates.trials_required, failed=0)
            .exclude(rollback="")
        )
    return qs


def skill_count(user, filters: SkillFilters = SkillFilters()) -> tuple[int, bool]:
    return capped_count(_nominated(user, filters))


def skill_queue(user, filters: SkillFilters = SkillFilters(), *, cursor: str = "", page_size: int = PAGE_SIZE) -> Page:
    """One page of nominated proposals, oldest first, keyset on (created_at, id): 4 queries (proposals with
    their trial counts, their sources and entries, their recent trials, the capped count)."""
    qs = _nominated(user, filters)
    return read_page(
        _annotated(qs), qs, stamp="created_at", cursor=cursor, page_size=page_size, filters=filters, prepare=_with_parts
    )


def skill_card(user, proposal_id) -> SkillProposal:
    """One proposal in any state, with what its card shows; SkillProposal.DoesNotExist outside the user's scopes."""
    return _with_parts([_annotated(visible_skills(user)).get(pk=proposal_id)])[0]


# --- approved skills -----------------------------------------------------------------------------------------


def skills_list(user, *, status: str = SkillProposal.Status.APPROVED, scope: str = "") -> list[SkillProposal]:
    """Approved (or retired) skills in the user's scopes, by name: 3 queries, at most LIST_LIMIT skills."""
    qs = visible_skills(user).filter(status=status)
    if scope:
        qs = qs.filter(access.under_scope(scope))
    return _with_parts(list(_annotated(qs).order_by("slug")[:LIST_LIMIT]))


def skill_id_by_slug(user, slug: str) -> int:
    """The id of the proposal with this slug in the user's scopes; SkillProposal.DoesNotExist otherwise."""
    return visible_skills(user).values_list("pk", flat=True).get(slug=slug)


def skill_by_slug(user, slug: str) -> SkillProposal:
    return _with_parts([_annotated(visible_skills(user)).get(slug=slug)])[0]


def exported_skills(*, scope: str = "") -> list[SkillProposal]:
    """Every approved skill (for `export_skills`), optionally under a scope prefix."""
    qs = SkillProposal.objects.filter(status=SkillProposal.Status.APPROVED)
    if scope:
        qs = qs.filter(access.under_scope(scope))
    return exported_skills_of(qs)


def exported_skills_of(qs) -> list[SkillProposal]:
    """The proposals of `qs` with what SKILL.md shows, by name."""
    return _with_parts(list(_annotated(qs).order_by("slug")))


def skills_of_entry(user, entry) -> list[SkillSource]:
    """The skill proposals an entry is (still) a source of, newest first, with their proposal: one query."""
    return list(
        SkillSource.objects.filter(entry=entry, removed_at__isnull=True)
        .filter(access.scope_q(access.user_scope_prefixes(user), "proposal__scope"))
        .select_related("proposal")
        .order_by("-added_at", "-id")
    )


# --- for agents --------------------------------------------------------------------------------------------


def skills_for_token(
    token: AgentToken,
    *,
    scopes: list[str] | None,
    after: str = "",
    limit: int = 100,
    released_in: list[int] | None = None,
) -> list:
    """Approved skills an agent may read: of `scopes` exactly (a scope and its ancestors that the token
    covers, as retrieval reads them), or every one under the token's prefixes when `scopes` is None.
    By name, keyset on the slug: 3 queries."""
    qs = SkillProposal.objects.filter(status=SkillProposal.Status.APPROVED)
    if released_in is not None:  # the skills of a memory version (retired since, but still in it, included)
        qs = SkillProposal.objects.filter(pk__in=released_in)
    qs = qs.filter(scope__in=scopes) if scopes is not None else qs.filter(access.token_scope_q(token))
    if after:
        qs = qs.filter(slug__gt=after)
    return _with_parts(list(_annotated(qs).order_by("slug")[:limit]))


def skill_for_token(token: AgentToken, slug: str) -> SkillProposal:
    """A skill in any state under the token's prefixes (a nominated one is what trials run); DoesNotExist
    otherwise, whether it is missing or outside them."""
    return _with_parts([_annotated(SkillProposal.objects.filter(access.token_scope_q(token))).get(slug=slug)])[0]


# --- SKILL.md ------------------------------------------------------------------------------------------------


def skill_footer(p: SkillProposal) -> str:
    if p.status == SkillProposal.Status.APPROVED:
        who = p.decided_by.get_username() if p.decided_by_id else "a lead"
        return (
            f"Curated in memoryadmin for scope `{p.scope}`: approved by {who} on {p.decided_at:%Y-%m-%d} "
            f"after {p.progress.label}."
        )
    if p.status == SkillProposal.Status.RETIRED:
        return f"Retired in memoryadmin on {p.retired_at:%Y-%m-%d}: {p.retire_reason}"
    return f"Draft (revision {p.revision}), {p.status} in memoryadmin: {p.progress.label} so far; not approved yet."


def skill_md(p: SkillProposal, *, source_url=None) -> str:
    """The proposal's SKILL.md (from a proposal read by this module). `source_url(entry_id)` links sources."""
    sources = [
        skill_format.SourceLine(
            s.entry_id, s.entry.scope, s.entry.trigger, source_url(s.entry_id) if source_url else ""
        )
        for s in p.current_sources
    ]
    return skill_format.render_skill_md(
        slug=p.slug,
        description=p.description,
        sections={key: getattr(p, key) for _, key in skill_format.BODY_SECTIONS},
        sources=sources,
        footer=skill_footer(p),
        trust=p.trust.label,
    )


def skill_events(proposal: SkillProposal) -> QuerySet[Event]:
    """The skill's Events. Before Events had subjects, a skill's decisions were written on each of its
    source entries with the proposal's id in `after`: those on its nominated entry (always a source) are
    read as the skill's own, once each, so a skill decided then keeps its history."""
    return Event.objects.filter(
        Q(skill=proposal)
        | Q(
            skill__isnull=True,
            entry_id=proposal.nominated_entry_id,
            action__startswith="skill_",
            after__proposal=proposal.pk,
        )
    )


def skill_history(proposal: SkillProposal, *, limit: int = TIMELINE_LIMIT) -> TimelinePage:
    """The skill's Events, oldest first: its nomination, draft edits, trials and decisions (one query,
    the newest `limit`)."""
    events = list(skill_events(proposal).order_by("-created_at", "-id")[: limit + 1])
    items = [TimelineItem(e.created_at, "event", e, event_changes(e)) for e in reversed(events[:limit])]
    return TimelinePage(items, complete=len(events) <= limit)
