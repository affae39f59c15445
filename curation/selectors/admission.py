"""Reads for embeddings at ingest: the embedding dimension of a scope tree. (The admission policies in force
are a scope policy: selectors/scope_policies.py.)"""

from __future__ import annotations

from curation.rules import config
from curation.rules.access import governing_prefix, under_scope
from curation.models import Entry


def scope_tree(scope: str) -> str:
    """The tree a scope belongs to: its first segment (acme for acme/billing-api)."""
    return scope.split("/", 1)[0]


def embedding_dimensions(scope: str) -> int | None:
    """How many numbers an embedding of `scope` must have: the setting of the longest prefix covering it in
    the EMBEDDING_DIMENSIONS setting, else the dimension of the first entry of its tree that carried one,
    else None (the first embedding fixes it). One indexed query at most."""
    configured = config.EMBEDDING_DIMENSIONS.value
    if (prefix := governing_prefix(configured, scope)) is not None:
        return int(configured[prefix])
    first = (
        Entry.objects.filter(under_scope(scope_tree(scope)), embedding__isnull=False)
        .order_by("id")
        .values_list("embedding", flat=True)
        .first()
    )
    return len(first) if first else None
