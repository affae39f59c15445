"""Reads: every list, page and lookup of the console, the agent API and the sweeps. Each read runs a fixed
number of queries whatever the size of the page or of the table.

    paging        the one keyset pager and the one capped count behind every list
    sql           the raw SQL fragments (full-text and trigram lookups, the supersedes chain)
    entries       which entries a user sees; the entry page (timeline, supersedes chain, export)
    similar       near duplicates of an entry
    retrieval     what agents are served
    candidates, conflicts, consolidation, skills   the four review queues (and the skills pages)
    dashboard     the lead's dashboard
    maintenance   background task runs; agent tokens
    scope_policies  the settings per scope prefix: review rules, holdout fractions, admission policies

The names below are what services, the API, tasks and commands import from `curation.selectors`."""

from .admission import embedding_dimensions
from .agreement import reviewer_stats
from .candidates import (
    QueueFilters,
    candidate_lines,
    candidate_queue,
    encode_cursor,
    queue_card,
    queue_count,
    waiting_on_others,
)
from .conflicts import (
    ConflictFilters,
    conflict_card,
    conflict_count,
    conflict_group_card,
    conflict_queue,
    merge_defaults,
)
from .consolidation import ProposalFilters, consolidation_queue, proposal_card, proposal_count
from .entries import (
    CHAIN_LIMIT,
    TimelineItem,
    entry_events,
    entry_events_for_token,
    entry_evidence,
    entry_evidence_for_token,
    entry_for_token,
    evidence_as_read,
    evidence_as_sent,
    entry_history,
    entry_page_timeline,
    entry_timeline,
    entry_version,
    entry_versions,
    event_changes,
    supersedes_chain,
    visible_entries,
    visible_entry,
)
from .preferences import queue_preference
from .paging import BadCursor, Page, capped_count, decode_cursor, encode_keyset
from .scope_policies import admission_policies, approvals_required, holdout_fractions, review_rules
from .retrieval import (
    NEAR_DUPLICATE,
    RETRIEVAL_POOL_FACTOR,
    RETRIEVED_FIELDS,
    Ranked,
    retrievable_scopes,
    retrieve_memory,
    withheld_by_skill,
)
from .similar import similar_active_entries, similar_active_entries_many
from .skills import SkillFilters
from .sql import any_word_tsquery_sql, outer_params, outer_rows_sql, overlapping_entries_sql

__all__ = [
    "approvals_required",
    "review_rules",
    "reviewer_stats",
    "admission_policies",
    "holdout_fractions",
    "embedding_dimensions",
    "BadCursor",
    "CHAIN_LIMIT",
    "ConflictFilters",
    "NEAR_DUPLICATE",
    "Page",
    "ProposalFilters",
    "QueueFilters",
    "RETRIEVAL_POOL_FACTOR",
    "RETRIEVED_FIELDS",
    "Ranked",
    "SkillFilters",
    "TimelineItem",
    "any_word_tsquery_sql",
    "candidate_lines",
    "candidate_queue",
    "capped_count",
    "conflict_card",
    "conflict_count",
    "conflict_group_card",
    "conflict_queue",
    "consolidation_queue",
    "decode_cursor",
    "encode_cursor",
    "encode_keyset",
    "entry_events",
    "entry_events_for_token",
    "entry_evidence",
    "entry_evidence_for_token",
    "entry_for_token",
    "evidence_as_read",
    "evidence_as_sent",
    "entry_history",
    "entry_version",
    "entry_versions",
    "entry_page_timeline",
    "entry_timeline",
    "event_changes",
    "merge_defaults",
    "outer_params",
    "outer_rows_sql",
    "overlapping_entries_sql",
    "proposal_card",
    "proposal_count",
    "queue_card",
    "queue_count",
    "waiting_on_others",
    "queue_preference",
    "retrievable_scopes",
    "retrieve_memory",
    "similar_active_entries",
    "similar_active_entries_many",
    "supersedes_chain",
    "visible_entries",
    "visible_entry",
    "withheld_by_skill",
]
