"""Every free-text column redacts what it stores, whichever path writes it: a new text column fails here
until it is a redacting one (redacted_fields.py) or is named below with why no typed text reaches it."""

import pytest
from django.apps import apps
from django.db import connection, models

from curation.rules.redacted_fields import RedactedCharField, RedactedJSONField, RedactedTextField
from tests.factories import SECRET_CORPUS

REDACTING = (RedactedCharField, RedactedTextField, RedactedJSONField)

# Columns that hold no text anyone types: validated names and paths, hashes, ids, and copies of labels
# made from usernames and token names (themselves checked when they are made).
NOT_FREE_TEXT = {
    "Entry.scope": "a scope path, validated by access.clean_scope",
    "EntryBand.scope": "a copy of its entry's scope path, for the near-duplicate lookup",
    "Entry.flags": "what redaction found: a kind and a field name",
    "Entry.fingerprint": "a sha256",
    "Entry.embedding": "numbers only, checked by vectors.clean_embedding",
    "ReleasedEntry.embedding": "a copy of Entry.embedding: numbers only",
    "Entry.created_by_label": "a username or an agent token's label",
    "Evidence.recorded_by_label": "a username or a token's label, and the entry it was merged from",
    "Evidence.injection_found": "what the injection detector found: its findings' names and a field name",
    "SkillProposal.injection_found": "what the injection detector found in the draft: findings' names and a field",
    "Event.actor_label": "a username, a token's label or a sweep's name",
    "Event.request_id": "a uuid the middleware makes",
    "ScopeGrant.prefix": "a scope path or * (every scope), validated by access.clean_grant_prefix",
    "ScopePolicy.prefix": "a scope path, validated by access.clean_scope",
    "ScopePolicy.updated_by_label": "a lead's username",
    "MemoryTest.scope": "a scope path, validated by access.clean_scope",
    "MemoryTest.expectations": "kinds, ids, token counts and scope paths, read by memory_tests.parse_expectations",
    "MemoryTest.created_by_label": "a username",
    "AgentToken.key_prefix": "the token's first characters, kept on purpose to recognise it in lists",
    "AgentToken.key_hash": "a sha256",
    "AgentToken.scopes": "scope paths, validated by access.clean_scope",
    "Retrieval.scope": "a scope path, validated by access.clean_scope",
    "Retrieval.entry_ids": "entry ids",
    "Feedback.used_entry_ids": "entry ids",
    "Conflict.detected_by": "the detector's name",
    "Conflict.resolution": "the resolution's name",
    "TaskRun.task": "a sweep's name",
    "QueuePreference.queue": "a queue's URL name, from the code",
    "TaskRun.triggered_by": "beat, command, or a username",
    "TaskRun.holder": "the worker process: host name, pid and start time",
    "TaskRun.cursor": "a detecting sweep's place in its pass: an entry id and times",
    "ConsolidationProposal.scope": "a scope path, validated by access.clean_scope",
    "ConsolidationProposal.key": "a sha256",
    "ImportRecord.key": "a sha256",
    "ImportRecord.format": "one of memory_import.FORMATS",
    "ImportRecord.outcome": "added, merged or held",
    "ImportRecord.imported_by_label": "the import's label: its format and a username",
    "ImportJob.upload_id": "32 hex digits, made by the server (secrets.token_hex)",
    "ImportJob.format": "one of memory_import.FORMATS",
    "ImportJob.scope": "a scope path, validated by access.clean_scope",
    "IdempotentAnswer.key": "the sha256 of the client's Idempotency-Key",
    "IdempotentAnswer.request_hash": "a sha256",
    "IdempotentAnswer.answer": "the API's answer, made of stored rows that were redacted when they were written",
    "ConsolidationProposal.entry_versions": "entry ids and versions",
    "SkillProposal.slug": "validated against SKILL_SLUG_PATTERN",
    "SkillProposal.scope": "a scope path, validated by access.clean_scope",
    "SkillProposal.flags": "what redaction found: a kind and a field name",
    "SkillProposal.created_by_label": "a sweep's name or a username",
    "SkillSource.added_by_label": "a username or a sweep's name",
    "SkillTrial.reported_by_label": "a token's label",
    "MemoryVersion.published_by_label": "a username or auto-publish",
    "MemoryVersion.scope_prefix": "a scope path, validated by access.clean_scope",
    "OutcomeTally.scope": "a copy of a retrieval's scope path, validated by access.clean_scope",
    "ReleasedEntry.scope": "a copy of a redacted entry's scope path",
    "ReleasedEntry.trigger": "a copy of Entry.trigger, redacted when the entry was written",
    "ReleasedEntry.content": "a copy of Entry.content, redacted when the entry was written",
    "ReleasedEntry.conditions": "a copy of Entry.conditions, redacted when the entry was written",
    "ReleasedEntry.boundary": "a copy of Entry.boundary, redacted when the entry was written",
    "ReleasedEntry.fingerprint": "a sha256",
    "ForgetRequest.scope": "a scope path, validated by access.clean_scope",
    "ForgetRequest.requested_by_label": "a username or an agent token's label",
    "ForgetRequest.forgotten_ids": "entry ids",
    "Tombstone.scope": "a copy of a redacted entry's scope path",
    "Tombstone.fingerprint": "a keyed blake2b of the readable words (a sha256 on rows from before keys per install)",
    "Tombstone.signature": "keyed hashes of word stems, never the words",
    "Tombstone.tokens": "keyed hashes of distinctive tokens, never the tokens",
    "Tombstone.key_id": "a short hash naming the key, from forgetting.key_id",
    "ReleasedSkill.slug": "a copy of a skill's slug, validated against SKILL_SLUG_PATTERN",
    "ReleasedSkill.scope": "a copy of a skill's scope path",
}


def text_columns():
    for model in apps.get_app_config("curation").get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, (models.CharField, models.TextField, models.JSONField)) and not field.choices:
                yield f"{model.__name__}.{field.name}", field


def test_every_free_text_column_redacts_what_it_stores():
    assert [
        name for name, field in text_columns() if not isinstance(field, REDACTING) and name not in NOT_FREE_TEXT
    ] == []


def test_the_named_exceptions_exist_and_do_not_redact():
    plain = {name for name, field in text_columns() if not isinstance(field, REDACTING)}
    assert set(NOT_FREE_TEXT) == plain


@pytest.mark.parametrize(
    "name, field",
    [(n, f) for n, f in text_columns() if isinstance(f, REDACTING)],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_each_redacting_column_redacts_on_every_way_to_the_database(name, field):
    text = " ".join(value for _, value, _ in SECRET_CORPUS)
    value = {"note": [text]} if isinstance(field, models.JSONField) else text
    stored = str(field.get_db_prep_save(value, connection))  # what update() and bulk_create() send
    instance = field.model()
    setattr(instance, field.attname, value)
    kept = str(field.pre_save(instance, add=True))  # what save() sends, and the instance then holds
    assert str(getattr(instance, field.attname)) == kept
    for _, _, secret in SECRET_CORPUS:
        assert secret not in stored and secret not in kept, (name, secret)
    if field.max_length and not isinstance(field, models.TextField):
        assert len(kept) <= field.max_length  # cut to the column after redaction, never before


def test_migrations_see_plain_columns():
    field = apps.get_model("curation", "Entry")._meta.get_field("trigger")
    assert field.deconstruct()[1] == "django.db.models.TextField"
