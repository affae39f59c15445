"""Reads for the consolidation queue: the merge and supersede proposals of the background sweep, each
read in a fixed number of queries whatever the size of the page or of the table."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Prefetch, Q, prefetch_related_objects

from curation.rules import access
from curation.models import ConsolidationProposal, Entry, Evidence

from .entries import summarise_evidence
from .paging import Page, capped_count, read_page
from .trust import trust_between

PAGE_SIZE = 20


@dataclass(frozen=True)
class ProposalFilters:
    kind: str = ""
    scope: str = ""
    # Provenance trust bounds by level name: a proposal with at least one entry whose trust is within them.
    min_trust: str = ""
    max_trust: str = ""

    def as_q(self) -> Q:
        q = Q(state=ConsolidationProposal.State.OPEN)
        if self.kind:
            q &= Q(kind=self.kind)
        if self.scope:
            q &= access.under_scope(self.scope)
        if self.min_trust or self.max_trust:
            links = ConsolidationProposal.entries.through.objects.filter(consolidationproposal_id=OuterRef("pk"))
            q &= Exists(links.filter(trust_between(self.min_trust, self.max_trust, "entry__")))
        return q

    @property
    def active(self) -> bool:
        return bool(self.kind or self.scope or self.min_trust or self.max_trust)


def visible_proposals(user):
    """Proposals in the user's scopes whose entries all lie there too: one outside (moved since the sweep,
    by an edit on recheck) means the whole proposal is, as with a conflict's pair."""
    prefixes = access.user_scope_prefixes(user)
    proposals = ConsolidationProposal.objects.filter(access.scope_q(prefixes, "scope"))
    if prefixes is None:
        return proposals
    return proposals.exclude(entries__in=Entry.objects.exclude(access.scope_q(prefixes)))


def open_proposals(user, filters: ProposalFilters = ProposalFilters()):
    return visible_proposals(user).filter(filters.as_q())


def proposal_count(user, filters: ProposalFilters = ProposalFilters()) -> tuple[int, bool]:
    return capped_count(open_proposals(user, filters))


def _with_members(proposals: list) -> list:
    """The proposals' entries (in id order) with their evidence: two queries for the whole page."""
    prefetch_related_objects(
        proposals,
        Prefetch("entries", queryset=Entry.objects.order_by("id")),
        Prefetch("entries__evidence", queryset=Evidence.objects.order_by("observed_at", "id")),
    )
    summarise_evidence([e for p in proposals for e in p.entries.all()])
    for p in proposals:
        p.proposed_conditions_text = ", ".join(p.proposed_conditions)
    return proposals


def consolidation_queue(
    user, filters: ProposalFilters = ProposalFilters(), *, cursor: str = "", page_size: int = PAGE_SIZE
) -> Page:
    """One page of open proposals, oldest first, keyset on (created_at, id): 4 queries whatever the page size."""
    qs = open_proposals(user, filters)
    return read_page(
        qs, qs, stamp="created_at", cursor=cursor, page_size=page_size, filters=filters, prepare=_with_members
    )


def proposal_card(user, proposal_id):
    proposal = visible_proposals(user).select_related("decided_by").get(pk=proposal_id)
    return _with_members([proposal])[0]
