"""The data of memoryadmin, nothing else: rules live in lifecycle.py, writes in services/. Every free-text
column redacts secrets and personal data on its way to the database (redacted_fields.py)."""

import operator
from functools import reduce

from django.conf import settings
from django.db import models
from django.db.models import Q

from curation.rules import clock, lifecycle, scope_policies
from curation.rules.vocabulary import EventAction, Kind, QueueReason, Signal, Status  # noqa: F401  (the models' vocabulary)
from curation.rules.access import EVERY_SCOPE, clean_grant_prefix, clean_scope
from curation.rules.event_deltas import STATE_KEYS, VERSION_KEY
from curation.rules.redacted_fields import RedactedCharField, RedactedJSONField, RedactedTextField
from curation.rules.skill_format import SKILL_DESCRIPTION_MAX, SKILL_SLUG_MAX
from curation.rules.trust import Sender, Source, Trust

TRIGGER_MAX = 500
CONTENT_MAX = 4000


ONE_PENDING_PER_FINGERPRINT = "entry_one_pending_per_fingerprint"


class Entry(models.Model):
    """One fact or one action rule, with its provenance and usage."""

    kind = models.CharField(max_length=32, choices=Kind.choices)
    scope = models.CharField(max_length=255, validators=[clean_scope])
    trigger = RedactedTextField(max_length=TRIGGER_MAX)
    content = RedactedTextField(max_length=CONTENT_MAX)
    conditions = RedactedJSONField(default=list, blank=True)
    boundary = RedactedTextField(blank=True)
    recheck_when = RedactedTextField(blank=True)
    review_by = models.DateField(null=True, blank=True)

    signal = models.CharField(max_length=16, choices=Signal.choices)
    # Provenance trust (rules/trust.py): the level it was born at (its author's, or the lowest of what a merge
    # made it from) and the level now, which only a confirmation from another source raises.
    trust_origin = models.PositiveSmallIntegerField(choices=Trust.choices, default=Trust.AGENT, db_default=Trust.AGENT)
    trust = models.PositiveSmallIntegerField(choices=Trust.choices, default=Trust.AGENT, db_default=Trust.AGENT)
    # Confidence is derived where it is read (`confidence`), from the base, the last verification and the
    # time; nothing rewrites it as days pass. The entry leaves the active set at `decay_stopped_at`, and
    # its confidence stays as it was then. `decay_key` (lifecycle.decay_key, computed with `decay_rate`)
    # makes "confidence below c at t" an index range, so the sweeps find what crosses a threshold
    # without reading every entry; the write path keeps all three.
    base_confidence = models.FloatField()
    last_verified_at = models.DateTimeField(null=True, blank=True)
    decay_stopped_at = models.DateTimeField(null=True, blank=True)
    # Rows loaded by plain SQL get the database's defaults: a rate no settings give, so the sweeps treat
    # their keys as not yet written (the archive sweep judges them by the rule; decay writes them).
    decay_key = models.FloatField(default=0.0, db_default=0.0)
    decay_rate = models.FloatField(default=-1.0, db_default=-1.0)

    hit_count = models.PositiveIntegerField(default=0)
    retrieval_count = models.PositiveIntegerField(default=0)
    utility_sum = models.FloatField(default=0.0)
    utility_n = models.PositiveIntegerField(default=0)
    last_retrieved_at = models.DateTimeField(null=True, blank=True)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Non-null while the entry waits in the candidates queue; the queue is ordered by it, and a
    # deferred entry carries a time in the future.
    queued_at = models.DateTimeField(null=True, blank=True)
    queue_reason = models.CharField(max_length=32, choices=QueueReason.choices, blank=True)
    flags = models.JSONField(default=list, blank=True)
    # An injection detector (rules/injection.py) found text here that tries to instruct the agent, and no lead
    # has accepted it since: only a lead approves it, and agents read a placeholder instead of its text.
    quarantined = models.BooleanField(default=False, db_default=False)
    # The detector version that last read the entry's text: the injection sweep reads older ones again.
    scanned_with = models.PositiveSmallIntegerField(default=0, db_default=0)
    # sha256 of the normalised trigger and content: an exact duplicate in the same scope is one lookup.
    fingerprint = models.CharField(max_length=64, blank=True)
    # The agent's own embedding of the lesson (a list of floats), for vector retrieval; one dimension per
    # scope tree (services/submissions.py checks it). Null: retrieved by words only.
    embedding = models.JSONField(null=True, blank=True)
    # Set while archived: when, and why ("decayed", "unused", "low utility", "displaced by #12").
    archived_at = models.DateTimeField(null=True, blank=True)
    archive_reason = RedactedCharField(max_length=120, blank=True)
    # Set while a candidate in a two-reviewer scope holds one approval of two: who gave it, and when.
    first_approval_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    first_approval_at = models.DateTimeField(null=True, blank=True)

    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    # Set on a submission that repeats a forgotten lesson: born rejected, kept from every queue and read,
    # and answered to its agent as any new candidate is (an answer that differed would be an oracle).
    held_by = models.ForeignKey(
        "ForgetRequest", null=True, blank=True, on_delete=models.PROTECT, related_name="held_entries"
    )
    source_task = RedactedCharField(max_length=255, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by_label = models.CharField(max_length=150, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=clock.now)
    updated_at = models.DateTimeField(default=clock.now)

    class Meta:
        verbose_name_plural = "entries"
        permissions = [
            ("review_entry", "Can decide on candidate lessons"),
            ("promote_skill", "Can approve or reject skill promotions"),
            ("publish_memory", "Can publish and roll back memory versions"),
            ("handle_forget", "Can handle forget requests"),
            ("export_history", "Can export an entry's history"),
        ]
        indexes = [
            # The candidates queue: oldest first, keyset on (queued_at, id), only queued rows. The queue
            # reason rides along (PostgreSQL) so that a reviewer's count, which leaves out what waits for a
            # lead, stays an index-only scan.
            models.Index(
                fields=["queued_at", "id"],
                name="entry_queue_idx",
                condition=Q(queued_at__isnull=False),
                include=["queue_reason"],
            ),
            # Retrieval and similarity look at active entries of a scope.
            models.Index(fields=["scope", "id"], name="entry_active_scope_idx", condition=Q(status="active")),
            models.Index(fields=["status", "scope"], name="entry_status_scope_idx"),
            models.Index(fields=["scope", "fingerprint"], name="entry_fingerprint_idx"),
            # Background sweeps walk active or archived entries in keyset batches of id.
            models.Index(fields=["status", "id"], name="entry_status_id_idx"),
            # What crosses a confidence threshold (archive, the retrieval floor), and the keys written
            # under other decay settings, which the decay sweep rewrites.
            models.Index(fields=["decay_key"], name="entry_decay_key_idx", condition=Q(status="active")),
            models.Index(fields=["decay_rate"], name="entry_decay_rate_idx", condition=Q(status="active")),
            # The few entries withheld from agents: what a read or an export looks up among its entries.
            models.Index(fields=["id"], name="entry_quarantined_idx", condition=Q(quarantined=True)),
            # What the injection sweep has still to read: entries stamped by an older detector.
            models.Index(fields=["scanned_with", "id"], name="entry_scanned_with_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(base_confidence__gte=0) & Q(base_confidence__lte=1),
                name="entry_confidence_in_unit_range",
            ),
            models.CheckConstraint(
                condition=~Q(status="pending") | Q(queued_at__isnull=False),
                name="entry_pending_is_queued",
            ),
            # One lesson per scope and text waiting for review: a submission repeating a live one (pending
            # or active) adds evidence to it instead. The submission checks under lock before it inserts;
            # this holds against two that both checked before either inserted. Only pending rows: new
            # candidates are the only rows born pending, while two active entries of one text can come of
            # an edit or a merge and are the consolidation queue's to merge.
            models.UniqueConstraint(
                fields=["scope", "fingerprint"],
                condition=Q(status="pending") & ~Q(fingerprint=""),
                name=ONE_PENDING_PER_FINGERPRINT,
            ),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        trigger = self.trigger if len(self.trigger) <= 60 else self.trigger[:57] + "..."
        return f"#{self.pk} {self.scope}: {trigger}"

    @property
    def average_utility(self) -> float | None:
        return self.utility_sum / self.utility_n if self.utility_n else None

    @property
    def confidence(self) -> float:
        """The confidence now (the one clock's now): see confidence_at."""
        return self.confidence_at(clock.now())

    def confidence_at(self, moment) -> float:
        """lifecycle.confidence_at for this entry: decaying while active, as it was when it left the active
        set after that, its base if it never was active. CONFIDENCE_FIELDS names the columns it reads."""
        if self.status == Status.ACTIVE:
            until = moment
        else:
            until = self.decay_stopped_at
        return lifecycle.confidence_at(self.base_confidence, self.verified_from, until, lifecycle.rules())

    @property
    def verified_from(self):
        """Where decay counts from: the last verification (an entry never verified: its creation)."""
        return self.last_verified_at or self.created_at

    def save(self, *args, **kwargs):
        self.refresh_decay_key()
        super().save(*args, **kwargs)

    def refresh_decay_key(self) -> None:
        """The decay index's columns from the base and the verification (the write path calls it)."""
        rules = lifecycle.rules()
        self.decay_key = lifecycle.decay_key(self.base_confidence, self.verified_from, rules)
        self.decay_rate = lifecycle.decay_rate(rules)

    def snapshot(self, at=None) -> dict:
        """The one shape of an entry an Event's before/after is the delta of, whoever writes it (a decision, a
        resolution, a sweep, feedback): each of event_deltas.STATE_KEYS read off its column as
        `snapshot_value` renders it, the confidence at `at` (the Event's time; by default now) and the
        version. SNAPSHOT_FIELDS names the columns it reads, for writers that load rows with only()."""
        state = {
            key: snapshot_value(self._meta.get_field(key), getattr(self, column))
            for key, column in STATE_COLUMNS.items()
        }
        state[DERIVED_CONFIDENCE] = round(self.confidence_at(at or clock.now()), 4)
        return {**{key: state[key] for key in STATE_KEYS}, VERSION_KEY: self.version}


def snapshot_value(field: models.Field, value):
    """A column's value as a snapshot (and so an Event) holds it: dates and times in ISO form, a float to four
    places, a JSON list copied. The write path renders the same in SQL (services/event_sql.py)."""
    if value is None:
        return None
    if isinstance(field, (models.DateField, models.DateTimeField)):
        return value.isoformat()
    if isinstance(field, models.FloatField):
        return round(value, 4)
    if isinstance(field, models.JSONField) and isinstance(value, list):
        return list(value)
    return value


# The columns Entry.snapshot() and Entry.label read.
CONFIDENCE_FIELDS = ("status", "base_confidence", "last_verified_at", "created_at", "decay_stopped_at")
# The column each state key reads (a link's id); the confidence is derived from CONFIDENCE_FIELDS, not stored.
DERIVED_CONFIDENCE = "confidence"
STATE_COLUMNS = {
    key: {"first_approval_by": "first_approval_by_id", "supersedes": "supersedes_id"}.get(key, key)
    for key in STATE_KEYS
    if key != DERIVED_CONFIDENCE
}
SNAPSHOT_FIELDS = tuple(dict.fromkeys(("id", *STATE_COLUMNS.values(), *CONFIDENCE_FIELDS, "version")))


class Evidence(models.Model):
    """Append-only: what supports or contradicts an entry. On PostgreSQL a trigger refuses UPDATE/DELETE."""

    class EvidenceKind(models.TextChoices):
        TOOL_OUTPUT = "tool_output", "tool output"
        TEST_RESULT = "test_result", "test result"
        USER_STATEMENT = "user_statement", "user statement"
        REVIEW = "review", "review"
        TASK_OUTCOME = "task_outcome", "task outcome"
        REFLECTION = "reflection", "reflection"

    class Polarity(models.TextChoices):
        SUPPORTS = "supports", "supports"
        CONTRADICTS = "contradicts", "contradicts"

    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="evidence")
    kind = models.CharField(max_length=32, choices=EvidenceKind.choices)
    signal = models.CharField(max_length=16, choices=Signal.choices)
    # What the sender said the piece is, and the level the server gave it (rules/trust.py).
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.OWN, db_default=Source.OWN)
    trust = models.PositiveSmallIntegerField(choices=Trust.choices, default=Trust.AGENT, db_default=Trust.AGENT)
    # A merge's copy of another entry's evidence: that entry's provenance, never a confirmation of this one.
    copied_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    polarity = models.CharField(max_length=16, choices=Polarity.choices, default=Polarity.SUPPORTS)
    excerpt = RedactedTextField(max_length=4000)
    task_ref = RedactedCharField(max_length=255, blank=True)
    observed_at = models.DateTimeField()
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    recorded_by_label = models.CharField(max_length=150, blank=True)
    # An automatic evaluator's verdict: its name and its score (an admission policy's `auto` rule reads them).
    evaluator = RedactedCharField(max_length=100, blank=True)
    score = models.FloatField(null=True, blank=True)
    # What the injection detector found in its texts (rules/injection.evidence_found): stored all the same, marked
    # on the entry page, and never served to an agent reading the entry.
    injection_found = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        verbose_name_plural = "evidence"
        indexes = [models.Index(fields=["entry", "observed_at"], name="evidence_entry_time_idx")]


# Every kind of subject an Event can be about: the name of its link on Event and the model the link points at.
# A new kind of subject is one line here: Event's link, its history index and the "has a subject" check follow
# (services/events.py fills the link of the subject's model).
EVENT_SUBJECTS = {
    "entry": "Entry",
    "conflict": "Conflict",
    "proposal": "ConsolidationProposal",
    "skill": "SkillProposal",
    "token": "AgentToken",
    "memory_version": "MemoryVersion",
    "forget_request": "ForgetRequest",
    "scope_policy": "ScopePolicy",  # a two-reviewer rule, a holdout fraction or an admission policy
    "memory_test": "MemoryTest",
}
EVENT_SUBJECT_FIELDS = tuple(EVENT_SUBJECTS)


def event_has_subject() -> Q:
    """At least one subject link is set: the check every Event row passes, one term per link."""
    return reduce(operator.or_, (Q(**{f"{link}__isnull": False}) for link in EVENT_SUBJECT_FIELDS))


def _subject_link(model: str, related_name: str = "events") -> models.ForeignKey:
    # No index of its own: the partial (subject, created_at, id) index below serves its history.
    return models.ForeignKey(
        model, null=True, blank=True, on_delete=models.PROTECT, related_name=related_name, db_index=False
    )


class Event(models.Model):
    """Append-only history: one row per decision, about one subject (an entry, a conflict, a consolidation
    proposal, a skill proposal or an agent token), sometimes also naming a second one (an entry's Event
    of a conflict's resolution names the conflict). Copies of the actor's name and the subject's label
    (`entry_label`, named when entries were the only subject) keep the history readable whatever
    happens to the rows it points at."""

    # The subject links (entry, conflict, proposal, ...), one per line of EVENT_SUBJECTS, declared from it so
    # that the links, their indexes and the check below cannot disagree. A class body's locals() is the
    # class's namespace, so these are fields like any other.
    locals().update({link: _subject_link(model) for link, model in EVENT_SUBJECTS.items()})
    entry_label = RedactedCharField(max_length=400)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=150)
    action = models.CharField(max_length=48, choices=EventAction.choices)
    reason = RedactedTextField(blank=True)
    before = RedactedJSONField(null=True, blank=True)
    after = RedactedJSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    # The entry's version after this change: "what changed since version N" is a range query.
    entry_version = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        indexes = [
            models.Index(fields=["entry", "created_at", "id"], name="event_entry_time_idx"),
            # A publish's failed-outcome check probes one entry per change for a recent failure: a probe of
            # these few rows alone, never a heap fetch of each changed entry's other Events.
            models.Index(
                fields=["entry", "created_at"],
                name="event_entry_failed_idx",
                condition=Q(action="outcome_failure"),
            ),
            *(
                models.Index(
                    fields=[subject, "created_at", "id"],
                    name=f"event_{subject}_time_idx",
                    condition=Q(**{f"{subject}__isnull": False}),
                )
                for subject in EVENT_SUBJECT_FIELDS[1:]
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=event_has_subject(),
                name="event_has_subject",
            ),
        ]


class SimilarEntry(models.Model):
    """A queued entry and an active entry that say nearly the same thing: shown on the queue card
    and offered as "merge into". Computed when the candidate arrives, so the queue reads it in one query."""

    candidate = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="similar_links")
    similar = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+")
    score = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["candidate", "similar"], name="similar_entry_unique_pair")]


class EntryBand(models.Model):
    """One MinHash band key of an entry's text (rules/minhash), with the entry's scope: a near-duplicate
    lookup reads only the entries sharing a key, in the overlapping scopes, through the (band, scope) index.
    Derived from the text and kept with it by the write path alone (services/entry_writes.py): written when
    the entry becomes active (a lookup reads only active entries, so a pending candidate has none),
    rewritten when the text or the scope is, kept by an archived entry; none for a held submission or a
    forgotten entry, which are never active, so no key outlives the text it came from.

    No key constraint in the database: every writer of these rows writes them for the entry it has just
    inserted or holds locked, and an entry is never deleted but through Django, whose cascade removes its keys
    first. The constraint's check at commit, a key share of the entry per row (48 an approved entry, ~4,800 a
    batch of 500), was half of a batch's commit (~20 of 40-60 ms). A TRUNCATE of the entries (the benches')
    names this table: no constraint leads its CASCADE here."""

    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    scope = models.CharField(max_length=255)
    band = models.BigIntegerField()

    class Meta:
        # band first: a lookup names its keys; then the scope, equal (the scope and its ancestors) or in the
        # range below it (on PostgreSQL with pattern ops: the range compares bytes, as ~>=~ / ~<~ do)
        indexes = [
            models.Index(
                fields=["band", "scope"], name="entry_band_key_idx", opclasses=["int8_ops", "varchar_pattern_ops"]
            )
        ]


class ScopeGrant(models.Model):
    """A scope prefix a person reads and acts under, or every scope (EVERY_SCOPE). A user without grants
    sees no scope: every scope is given, never assumed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scope_grants")
    prefix = models.CharField(
        max_length=255,
        validators=[clean_grant_prefix],
        help_text=f"A scope prefix such as acme/billing-api (it and everything below it), or {EVERY_SCOPE} for every scope.",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "prefix"], name="scope_grant_unique")]

    def __str__(self) -> str:
        return f"{self.user} → {'every scope' if self.prefix == EVERY_SCOPE else self.prefix}"


class AgentToken(models.Model):
    """An agent's key to the API. Only a hash of the secret is stored; the secret is shown once."""

    # Unique among the tokens its maker can see (services.tokens), not across the install: a scoped lead
    # must not learn another scope's token names by trying them. The database keeps one name per maker.
    name = RedactedCharField(max_length=100)
    key_prefix = models.CharField(max_length=16)  # the first characters, to recognise a token in lists
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)  # scope prefixes it may read and write
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=clock.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["created_by", "name"], name="agent_token_name_once_per_maker"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(created_by__isnull=True), name="agent_token_name_once_by_operator"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def label(self) -> str:
        return f"agent:{self.name}"

    @property
    def trust_sender(self) -> str:
        """Who sends what this token sends (rules/trust.py): an agent, whose word is its own claim."""
        return Sender.AGENT

    def is_usable(self, now) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class IdempotentAnswer(models.Model):
    """The first answer to a submission sent with an `Idempotency-Key` header: a retry with the same key
    (after a timeout, a lost connection, a restart on either side) gets this answer again instead of
    submitting twice. Kept IDEMPOTENCY_KEEP_HOURS; `request_hash` tells a retry from another request
    that reuses the key."""

    token = models.ForeignKey(AgentToken, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)  # sha256 of the path and the JSON body
    status = models.PositiveSmallIntegerField()
    answer = models.JSONField()
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["token", "key"], name="idempotent_answer_once_per_key")]


class ImportRecord(models.Model):
    """One record of another tool's memory, imported: what makes re-importing the same source add nothing
    (its key), and the entry it became or was merged into. `key` is a sha256 of the scope it was imported
    into and the record (format, file, its id or text); `source` says where it was, never its text."""

    key = models.CharField(max_length=64, unique=True)
    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+")
    format = models.CharField(max_length=16)
    source = RedactedCharField(max_length=255)  # "memory/debugging.md line 9", "export.json record 8f4a..."
    outcome = models.CharField(max_length=16)  # added, merged or held
    imported_by_label = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=clock.now)


class ImportJob(models.Model):
    """A lead's upload imported by a worker (a dry run, then the import the lead confirms), and how far it has
    got: what the page polls. The upload's bytes are not here (services/import_uploads keeps them on disk)."""

    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    upload_id = models.CharField(max_length=32)
    name = RedactedCharField(max_length=255)  # the uploaded file's name
    format = models.CharField(max_length=16)
    scope = models.CharField(max_length=255, validators=[clean_scope])
    dry_run = models.BooleanField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    rows = RedactedJSONField(default=list, blank=True)  # the report: outcome, reason, count, where the first were
    error = RedactedTextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=clock.now)
    finished_at = models.DateTimeField(null=True, blank=True)


class Arm(models.TextChoices):
    """What a retrieval served, for the holdout comparison: curated memory, or nothing at all."""

    MEMORY = "memory", "memory"
    HOLDOUT = "holdout", "holdout (no memory)"
    RULES_ONLY = "rules-only", "people's rules only"


class Retrieval(models.Model):
    """One read of memory by an agent: what it asked, what it was given. Feedback refers to it."""

    id = models.UUIDField(primary_key=True)
    token = models.ForeignKey(AgentToken, on_delete=models.PROTECT, related_name="retrievals")
    scope = models.CharField(max_length=255)
    query = RedactedTextField(blank=True)
    task_ref = RedactedCharField(max_length=255, blank=True)
    entry_ids = models.JSONField(default=list)
    # The published memory version the agent read (null: before versions existed).
    memory_version = models.PositiveIntegerField(null=True, blank=True)
    # The holdout arm the task landed in (evaluation.assign_arm): a holdout retrieval was given nothing.
    arm = models.CharField(max_length=16, choices=Arm.choices, default=Arm.MEMORY)
    created_at = models.DateTimeField(default=clock.now)


class RetrievedEntry(models.Model):
    """An entry handed out by a retrieval: the usage history that periodic deletion counts."""

    retrieval = models.ForeignKey(Retrieval, on_delete=models.PROTECT, related_name="items")
    # No index of its own: the (entry, created_at) index below serves every lookup by entry, and each
    # retrieval writes up to k rows here.
    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="retrievals", db_index=False)
    rank = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        indexes = [models.Index(fields=["entry", "created_at"], name="retrieved_entry_time_idx")]


class Feedback(models.Model):
    """The outcome an agent reported for a retrieval. One per retrieval: a repeat changes nothing."""

    class Outcome(models.TextChoices):
        SUCCESS = "success", "success"
        FAILURE = "failure", "failure"

    retrieval = models.OneToOneField(Retrieval, on_delete=models.PROTECT, related_name="feedback")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    utility = models.FloatField(null=True, blank=True)
    used_entry_ids = models.JSONField(default=list)
    created_at = models.DateTimeField(default=clock.now)


class OutcomeTally(models.Model):
    """Reported task outcomes per day, scope and arm, counted when the feedback is recorded: the learning
    dashboard reads these few rows instead of joining every retrieval with its feedback."""

    day = models.DateField()
    scope = models.CharField(max_length=255)
    arm = models.CharField(max_length=16, choices=Arm.choices)
    tasks = models.PositiveIntegerField(default=0)
    successes = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "scope", "arm"], name="outcome_tally_once")]


class LessonTally(models.Model):
    """Reported outcomes per day of the tasks that retrieved an entry: which lessons help or hurt."""

    day = models.DateField()
    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+", db_index=False)
    tasks = models.PositiveIntegerField(default=0)
    successes = models.PositiveIntegerField(default=0)
    # The tasks charged to it: those that said they used it, or, when a task did not say, every task given
    # it. A lesson's lift (lift.py) is estimated from these.
    charged_tasks = models.PositiveIntegerField(default=0)
    charged_successes = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "entry"], name="lesson_tally_once")]
        # An outcome reads its lessons' tallies over the window by entry.
        indexes = [models.Index(fields=["entry", "day"], name="lesson_tally_entry_idx")]


class Conflict(models.Model):
    """Two entries whose triggers overlap and whose advice contradicts. The pair is stored once,
    lower id first, so a dismissed pair is never raised again."""

    class State(models.TextChoices):
        OPEN = "open", "open"
        RESOLVED = "resolved", "resolved"
        DISMISSED = "dismissed", "dismissed"

    entry_a = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+")
    entry_b = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    reason = RedactedTextField(blank=True)  # what the detector saw, e.g. "always rebase" against "never rebase"
    detected_by = models.CharField(max_length=32)  # "ingest" or "sweep"
    created_at = models.DateTimeField(default=clock.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    resolution = models.CharField(max_length=32, blank=True)
    # The entry whose detection opened it (a new candidate at ingest, the entry the sweep compared): the
    # queue shows an entry's open conflicts as one card. One of the pair; none on rows made by hand.
    raised_by = models.ForeignKey(Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["entry_a", "entry_b"], name="conflict_unique_pair"),
            models.CheckConstraint(condition=Q(entry_a__lt=models.F("entry_b")), name="conflict_pair_ordered"),
        ]
        indexes = [models.Index(fields=["state", "created_at"], name="conflict_state_idx")]

    @property
    def label(self) -> str:
        return f"conflict #{self.pk}: #{self.entry_a_id} and #{self.entry_b_id}"


class TaskRun(models.Model):
    """One run of a background task: what it looked at and changed, shown on the Maintenance page."""

    class State(models.TextChoices):
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"
        SKIPPED = "skipped", "skipped (another run held the lock)"

    task = models.CharField(max_length=32)
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    as_of = models.DateTimeField()
    dry_run = models.BooleanField(default=False)
    triggered_by = models.CharField(max_length=150, blank=True)  # "beat", "lead:alice", "command"
    started_at = models.DateTimeField(default=clock.wall)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows_examined = models.PositiveIntegerField(default=0)
    rows_changed = models.PositiveIntegerField(default=0)
    error = RedactedTextField(blank=True)
    # The run's lease: the worker process that holds it ("host:pid:start") and its last sign of life. A run
    # whose process is gone, or whose heartbeat is older than the lease, holds nothing (sweeps/runs.py).
    holder = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # A detecting sweep's place in its pass, written with the work it covers: {"after": the last entry id
    # done, or null once the pass is complete; "since": what the pass reads (entries changed since then,
    # null for all); "started": when the pass began}. The next run resumes at "after" (sweeps/engine.py).
    cursor = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["task", "-started_at"], name="task_run_recent_idx"),
            # Every run reads its task's runs still "running" (the lock outside PostgreSQL, the lost runs):
            # a handful among the many finished ones, which a schedule adds to every few minutes.
            models.Index(fields=["task"], condition=models.Q(state="running"), name="task_run_running_idx"),
        ]


class ConsolidationProposal(models.Model):
    """A background sweep's proposal: merge near-duplicate active entries of one scope, or let a newer
    entry supersede an outdated one. The sweep never changes an entry; only an accepted proposal does.
    `key` identifies the proposal's kind and entries, so a decided proposal is never made again."""

    class Kind(models.TextChoices):
        MERGE = "merge", "merge duplicates"
        SUPERSEDE = "supersede", "replace outdated"

    class State(models.TextChoices):
        OPEN = "open", "open"
        ACCEPTED = "accepted", "accepted"
        DISMISSED = "dismissed", "dismissed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    scope = models.CharField(max_length=255)
    key = models.CharField(max_length=64, unique=True)  # sha256 of "kind:sorted entry ids"
    entries = models.ManyToManyField(Entry, related_name="consolidation_proposals")
    # {"12": 3, ...}: the versions the sweep read; accepting refuses entries changed since.
    entry_versions = models.JSONField(default=dict)
    # supersede: the newer entry that stays and replaces the others
    target = models.ForeignKey(Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    proposed_trigger = RedactedTextField(blank=True)
    proposed_content = RedactedTextField(blank=True)
    proposed_boundary = RedactedTextField(blank=True)
    proposed_conditions = RedactedJSONField(default=list, blank=True)
    reason = RedactedTextField(blank=True)  # what the sweep saw, e.g. "3 entries, 0.82 alike"
    score = models.FloatField(default=0.0)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    created_at = models.DateTimeField(default=clock.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = RedactedTextField(blank=True)
    # accepted merge: the new entry it made
    result = models.ForeignKey(Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["state", "created_at"], name="consolidation_state_idx")]

    @property
    def label(self) -> str:
        return f"consolidation #{self.pk} ({self.kind}) in {self.scope}"


SKILL_SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"  # the Agent Skills `name`: also the export's directory name
SKILL_TEXT_MAX = 8000


class SkillProposal(models.Model):
    """A procedure or success pattern nominated to become a skill, with the draft a reviewer
    edits, and, once a lead approves it, the published skill itself. While approved, its source entries are
    withheld from retrieval (the skill replaces them); retiring it gives them back. Never deleted."""

    class Status(models.TextChoices):
        NOMINATED = "nominated", "nominated"
        APPROVED = "approved", "approved"
        REJECTED = "rejected", "rejected"
        RETIRED = "retired", "retired"

    slug = models.CharField(max_length=SKILL_SLUG_MAX, unique=True)
    scope = models.CharField(max_length=255, validators=[clean_scope])
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.NOMINATED)
    # The draft: the sections of SKILL.md.
    description = RedactedTextField(max_length=SKILL_DESCRIPTION_MAX)
    when_to_use = RedactedTextField(blank=True)
    steps = RedactedTextField()
    parameters = RedactedTextField(blank=True)
    verification = RedactedTextField(blank=True)
    rollback = RedactedTextField(blank=True)
    pitfalls = RedactedTextField(blank=True)
    entries = models.ManyToManyField(Entry, through="SkillSource", related_name="skill_proposals")
    # The entry the sweep nominated; it stays among the sources.
    nominated_entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+")
    reason = RedactedTextField(blank=True)  # what the sweep saw: hits, average utility, recent uses
    flags = models.JSONField(default=list, blank=True)  # what was redacted from edits
    # What the injection detector found in the draft as it is now, and the lead who read it: a draft with a
    # finding is published only after a lead acknowledged it (a change to the draft asks again).
    injection_found = models.JSONField(default=list, blank=True)
    injection_acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    injection_acknowledged_at = models.DateTimeField(null=True, blank=True)
    # A skill made from low-trust sources (trust.skill_approvals_needed) needs two leads: the first one's
    # approval, until a second lead approves or the draft changes.
    first_approval_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    first_approval_at = models.DateTimeField(null=True, blank=True)
    # Trials count for the current revision only: it goes up when the steps, parameters, verification or
    # rollback change, since trials of other steps prove nothing about these.
    revision = models.PositiveIntegerField(default=1)
    version = models.PositiveIntegerField(default=1)  # optimistic locking: every change bumps it
    created_at = models.DateTimeField(default=clock.now)
    created_by_label = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(default=clock.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = RedactedTextField(blank=True)
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    retired_at = models.DateTimeField(null=True, blank=True)
    retire_reason = RedactedTextField(blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["status", "created_at", "id"], name="skill_status_created_idx"),
            models.Index(fields=["status", "scope"], name="skill_status_scope_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["nominated", "approved", "rejected", "retired"]), name="skill_status_known"
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def label(self) -> str:
        return f"skill {self.slug} (#{self.pk})"


class SkillSource(models.Model):
    """An entry a skill proposal was made from. `live` while the proposal is nominated or approved: an entry
    belongs to at most one live proposal, and the database keeps it so. A source a reviewer took out of the
    draft keeps its row, with `removed_at`."""

    proposal = models.ForeignKey(SkillProposal, on_delete=models.PROTECT, related_name="sources")
    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="skill_sources")
    live = models.BooleanField(default=True)
    entry_version = models.PositiveIntegerField()  # the entry's version when it was linked
    added_at = models.DateTimeField(default=clock.now)
    added_by_label = models.CharField(max_length=150, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "entry"], name="skill_source_unique"),
            models.UniqueConstraint(fields=["entry"], condition=Q(live=True), name="skill_source_one_live_proposal"),
        ]


class SkillTrial(models.Model):
    """An agent's trial run of a proposed skill: append-only (a PostgreSQL trigger refuses UPDATE/DELETE).
    One report per task and revision, so a retried POST counts once."""

    class Outcome(models.TextChoices):
        SUCCESS = "success", "success"
        FAILURE = "failure", "failure"

    proposal = models.ForeignKey(SkillProposal, on_delete=models.PROTECT, related_name="trials")
    revision = models.PositiveIntegerField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    task_ref = RedactedCharField(max_length=255)
    notes = RedactedTextField(max_length=4000, blank=True)
    token = models.ForeignKey(AgentToken, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    reported_by_label = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "revision", "task_ref"], name="skill_trial_once_per_task"),
        ]
        indexes = [models.Index(fields=["proposal", "revision", "created_at"], name="skill_trial_recent_idx")]


class QueuePreference(models.Model):
    """How a reviewer last left a queue: its filters (the page's filter parameters) and whether it was the
    compact list, so that coming back to the queue, on any device, finds it as it was. A preference, not
    a decision: no Event."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="queue_preferences")
    queue = models.CharField(max_length=40)
    filters = RedactedCharField(max_length=1000, blank=True)
    compact = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "queue"], name="one_queue_preference_per_user")]


# --- published memory versions ------------------------------------------------------------------------------


class MemoryVersion(models.Model):
    """A numbered, immutable release of the curated memory: the active entries and approved skills agents
    read. Its content is the ReleasedEntry / ReleasedSkill rows valid in it (valid_from <= number and
    valid_to null or above it): a release stores only what changed, never a copy of the memory."""

    number = models.PositiveIntegerField(unique=True)
    summary = RedactedTextField(max_length=2000)
    # The prefix a publish was limited to ("" for every pending change); a rollback has none.
    scope_prefix = models.CharField(max_length=255, blank=True)
    based_on = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    published_by_label = models.CharField(max_length=150)
    added = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    removed = models.PositiveIntegerField(default=0)
    # The draft on top of this version is read from the Events from this id on (and from what differs
    # between it and the newest version, after a rollback): a full publish moves it past every Event it
    # saw, a publish under a prefix keeps its base's, since what lies outside the prefix is still pending.
    pending_from_event = models.PositiveBigIntegerField(default=0)
    # Pre-publish warnings the publisher acknowledged, as shown: [{"check": ..., "entry": id, "text": ...}].
    acknowledged = RedactedJSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=clock.now)

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"memory version {self.number}"


class PublishedVersion(models.Model):
    """The one pointer agents follow: a single row (id 1), switched in the publishing (or rolling back)
    transaction, so an agent reads the old version or the new one, never a mix."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.ForeignKey(MemoryVersion, on_delete=models.PROTECT, related_name="+")
    switched_at = models.DateTimeField(default=clock.now)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="published_version_single_row")]


class ReleasedEntry(models.Model):
    """An entry as agents read it, valid from one version number up to (not including) `valid_to`."""

    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="+", db_index=False)
    valid_from = models.PositiveIntegerField()
    valid_to = models.PositiveIntegerField(null=True, blank=True)
    entry_version = models.PositiveIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    scope = models.CharField(max_length=255)
    # Copies of the entry's columns, which redacted them when they were written: publishing copies
    # thousands of rows, and running the detectors again on each would find nothing new.
    trigger = models.TextField(max_length=TRIGGER_MAX)
    content = models.TextField(max_length=CONTENT_MAX)
    conditions = models.JSONField(default=list, blank=True)
    boundary = models.TextField(blank=True)
    signal = models.CharField(max_length=16, choices=Signal.choices)
    trust = models.PositiveSmallIntegerField(choices=Trust.choices, default=Trust.AGENT, db_default=Trust.AGENT)
    # A version holds what confidence is derived from, not a value of it: a released lesson decays as the
    # live one does (lifecycle.confidence_at), so an old version's answers fade like the live rows.
    base_confidence = models.FloatField()
    last_verified_at = models.DateTimeField(null=True, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True)
    embedding = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [
            # Reading version N of some scopes: the rows of a scope that start at or before N.
            models.Index(fields=["scope", "valid_from"], name="released_entry_scope_idx"),
            # An entry's rows, in any version: what publishing and a diff compare (an IN list of the changes).
            models.Index(fields=["entry", "valid_from"], name="released_entry_entry_idx"),
            # The diff of two versions: the rows that start or end between them.
            models.Index(fields=["valid_from"], name="released_entry_from_idx"),
            models.Index(fields=["valid_to"], name="released_entry_to_idx", condition=Q(valid_to__isnull=False)),
        ]
        constraints = [
            # The head version's row of an entry, the one publishing closes and replaces (and its index).
            models.UniqueConstraint(
                fields=["entry"], condition=Q(valid_to__isnull=True), name="released_entry_one_open_row"
            ),
        ]

    @property
    def label(self) -> str:
        trigger = self.trigger if len(self.trigger) <= 60 else self.trigger[:57] + "..."
        return f"#{self.entry_id} {self.scope}: {trigger}"

    @property
    def confidence(self) -> float:
        """Released rows are of active entries: decaying since their verification (see Entry.confidence_at;
        a row without one, which no service makes, keeps its base)."""
        rules = lifecycle.rules()
        return lifecycle.confidence_at(
            self.base_confidence, self.last_verified_at, clock.now() if self.last_verified_at else None, rules
        )


class ReleasedSkill(models.Model):
    """An approved skill in the versions from `valid_from` up to (not including) `valid_to`."""

    skill = models.ForeignKey(SkillProposal, on_delete=models.PROTECT, related_name="+", db_index=False)
    valid_from = models.PositiveIntegerField()
    valid_to = models.PositiveIntegerField(null=True, blank=True)
    slug = models.CharField(max_length=SKILL_SLUG_MAX)
    scope = models.CharField(max_length=255)
    revision = models.PositiveIntegerField()
    skill_version = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["valid_from"], name="released_skill_from_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["skill"], condition=Q(valid_to__isnull=True), name="released_skill_one_open_row"
            ),
        ]


# --- forget requests ---------------------------------------------------------------------------------------


def forgotten_marker(request_id: int) -> str:
    """What stands where a forgotten text was, everywhere it was: it names the request that purged it."""
    return f"[forgotten: request #{request_id}]"


class ForgetRequest(models.Model):
    """ "Forget this": a request, by a reviewer in the console or by an agent for its user, to retire a lesson
    (an entry, or the entries matching a text) and purge its text everywhere. A lead approves (ticking the
    near duplicates to forget with it) or declines. Never deleted; on approval its own text is purged too."""

    class State(models.TextChoices):
        OPEN = "open", "open"
        APPROVED = "approved", "approved"
        DECLINED = "declined", "declined"
        # Approved and purged, but the receipt's search found the text somewhere: back to a lead.
        REOPENED = "reopened", "reopened: residue found"

    entry = models.ForeignKey(Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="forget_requests")
    # Without an entry: the text to match (the lead ticks the entries it matches) and the scope it is about.
    match_text = RedactedTextField(max_length=CONTENT_MAX, blank=True)
    scope = models.CharField(max_length=255, validators=[clean_scope])
    reason = RedactedTextField(max_length=2000)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    requested_by_token = models.ForeignKey(
        "AgentToken", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    requested_by_label = models.CharField(max_length=150)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    created_at = models.DateTimeField(default=clock.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = RedactedTextField(blank=True)
    # Approved: every entry it forgot (its own, and the duplicates the lead ticked), in id order.
    forgotten_ids = models.JSONField(default=list, blank=True)
    # The version published without them.
    published_version = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["state", "created_at", "id"], name="forget_state_created_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(entry__isnull=False) | ~Q(match_text=""), name="forget_request_names_something"
            ),
            models.CheckConstraint(
                condition=Q(state__in=["open", "approved", "declined", "reopened"]), name="forget_request_state_known"
            ),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"forget request #{self.pk}"

    @property
    def marker(self) -> str:
        return forgotten_marker(self.pk)


class Tombstone(models.Model):
    """What keeps a forgotten lesson from being learned again, without its text: the exact-duplicate
    fingerprint, the near-duplicate signature (hashes of the lesson's readable word stems) and the hashes of
    its distinctive tokens (forgetting.forgotten_lesson), all keyed with the install's key named by `key_id`
    ("": the fixed key of the tombstones written before, fingerprint and signature only), the scope it was
    in, the request and the day. Append-only."""

    request = models.ForeignKey(ForgetRequest, on_delete=models.PROTECT, related_name="tombstones")
    entry = models.ForeignKey(Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    scope = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, blank=True)
    signature = models.JSONField(default=list)
    tokens = models.JSONField(default=list, blank=True)
    key_id = models.CharField(max_length=16, blank=True, default="")
    forgotten_on = models.DateField()
    created_at = models.DateTimeField(default=clock.now)

    class Meta:
        indexes = [models.Index(fields=["scope"], name="tombstone_scope_idx")]


# --- settings per scope prefix: review rules, holdout fractions, admission policies ---------------------


class ScopePolicy(models.Model):
    """A lead's setting of one kind for a scope prefix (scope_policies.KINDS): how many reviewers its
    candidates need, the share of its tasks in the holdout, or who decides on its new candidates. The
    server's settings hold the defaults; a row replaces the setting of its prefix; the longest prefix
    covering a scope wins (scope_policies.resolve). Never deleted: a lead sets a prefix back (1 approval, a
    holdout of 0, manual admission). Each change is an Event about the row."""

    kind = models.CharField(max_length=16, choices=scope_policies.KIND_CHOICES)
    prefix = models.CharField(max_length=255, validators=[clean_scope])
    # The kind's value, as scope_policies.clean makes it: {"approvals"}, {"fraction", "rules_only"} or
    # {"name", "mode", "evaluator", "threshold"}; an admission decision is signed policy:<name>.
    value = RedactedJSONField()
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(default=clock.now)
    updated_by_label = models.CharField(max_length=150, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "prefix"], name="scope_policy_once_per_prefix"),
            models.CheckConstraint(
                condition=~Q(kind=scope_policies.REVIEW) | Q(value__approvals__in=[1, 2]),
                name="scope_policy_review_one_or_two",
            ),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"{scope_policies.KIND_LABELS[self.kind]} of {self.prefix}"

    @property
    def shown(self) -> dict:
        """What an Event records before and after a change: the prefix, the value and the version."""
        return {"prefix": self.prefix, **self.value, "version": self.version}


# --- memory tests: what a scope's answers must hold, checked at every publish --------------------------------


class MemoryTest(models.Model):
    """A lead's test of what agents of a scope receive: a query asked at `scope` (with k and a budget in
    tokens) and what the answer must and must not hold (memory_tests.parse_expectations). Active tests run
    on the version about to be published; a failure holds the publish for a lead's acknowledgement. Never
    deleted: a lead retires it. Every change and every run is an Event about it."""

    scope = models.CharField(max_length=255, validators=[clean_scope])
    name = RedactedCharField(max_length=200)
    query = RedactedTextField(max_length=2000)
    k = models.PositiveSmallIntegerField(default=5)
    budget_tokens = models.PositiveIntegerField(default=500)
    # [{"kind": "top", "entry": 12}, {"kind": "no_scope", "scope": "acme/web"}, ...]
    expectations = models.JSONField(default=list)
    # The superseded entry a person's correction replaced, when the test was made with that correction.
    corrects = models.ForeignKey(Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    retired_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_by_label = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=clock.now)
    updated_at = models.DateTimeField(default=clock.now)

    class Meta:
        indexes = [models.Index(fields=["scope"], name="memory_test_active_idx", condition=Q(retired_at__isnull=True))]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"memory test #{self.pk} {self.name}"[:400]

    @property
    def shown(self) -> dict:
        """What an Event records before and after a change."""
        return {
            "scope": self.scope,
            "name": self.name,
            "query": self.query,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "expectations": self.expectations,
            "retired": self.retired_at is not None,
            "version": self.version,
        }
