"""Reads for admission and embeddings at ingest: the admission policies (settings, then the table, which wins
on the same prefix) and the embedding dimension of a scope tree."""

from __future__ import annotations


from curation import admission, config
from curation.access import governing_prefix, under_scope
from curation.models import AdmissionPolicy, Entry


def admission_policies() -> list[admission.Policy]:
    """Every policy in force, one per prefix: the settings' defaults, replaced by a lead's row of the same
    prefix. One query."""
    by_prefix = config.CURATION_ADMISSION.value
    for row in AdmissionPolicy.objects.all():
        by_prefix[row.prefix] = policy_of(row)
    return sorted(by_prefix.values(), key=lambda p: p.prefix)


def policy_of(row: AdmissionPolicy) -> admission.Policy:
    return admission.Policy(row.prefix, row.name, row.mode, row.evaluator, row.threshold)


def admission_policy_rows():
    """The lead's page: the rows set in the console, by prefix."""
    return list(AdmissionPolicy.objects.order_by("prefix"))


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
    first = (Entry.objects.filter(under_scope(scope_tree(scope)), embedding__isnull=False)
             .order_by("id").values_list("embedding", flat=True).first())
    return len(first) if first else None
