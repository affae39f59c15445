"""The words of an entry's life: what kind of lesson it is, where a verdict came from, the status it is in,
why it waits in the queue, and every kind of Event. Plain choices, below the models (which store them) and the
rules (the transition table, keyed by them), importing nothing of curation."""

from django.db import models


class Kind(models.TextChoices):
    PROCEDURE = "procedure", "procedure"
    FAILURE_LESSON = "failure_lesson", "failure lesson"
    SUCCESS_PATTERN = "success_pattern", "success pattern"
    HUMAN_CORRECTION = "human_correction", "human correction"
    PREFERENCE = "preference", "preference"
    FACT = "fact", "fact"


class Signal(models.TextChoices):
    """Where a verdict came from; the order is evidence strength, weakest first."""

    SELF = "self", "self"
    INDEPENDENT = "independent", "independent"
    EXTERNAL = "external", "external"


class Status(models.TextChoices):
    PENDING = "pending", "pending"
    ACTIVE = "active", "active"
    REJECTED = "rejected", "rejected"
    ARCHIVED = "archived", "archived"
    SUPERSEDED = "superseded", "superseded"
    RETIRED = "retired", "retired"


class QueueReason(models.TextChoices):
    """Why an entry sits in the candidates queue."""

    NEW = "new", "new candidate"
    DEFERRED = "deferred", "deferred"
    RECHECK_FAILURE = "recheck_failure", "recheck: a task that used it failed"
    RECHECK_REVIEW_DUE = "recheck_review_due", "recheck: review date passed"
    RECHECK_LOW_UTILITY = "recheck_low_utility", "recheck: low utility"
    # Two reviewers disagreed (one approved, the other rejected): only a lead decides it now.
    NEEDS_LEAD = "needs_lead", "reviewers disagree: a lead decides"
    RECHECK_REQUESTED = "recheck_requested", "recheck: sent back by a person"
    # The tasks that used it do worse than comparable tasks without it, at 95% (lift.py).
    RECHECK_HARMFUL = "recheck_harmful", "recheck: tasks with it do worse than without"
    # A newer injection detector flagged an active entry: agents read a placeholder until a lead decides.
    INJECTION_FOUND = "injection_found", "withheld: possible injection, a lead decides"

    @classmethod
    def for_leads(cls) -> tuple["QueueReason", ...]:
        """The reasons only a lead decides on: they leave the reviewers' queue and count."""
        return (cls.NEEDS_LEAD, cls.INJECTION_FOUND)


class EventAction(models.TextChoices):
    """Every kind of Event. The stored values are the history's words: never rename one."""

    # An entry arrives or gains evidence.
    SUBMIT = "submit", "submitted"
    RESUBMIT = "resubmit", "submitted again"
    ADD_EVIDENCE = "add_evidence", "evidence added"
    # Another source confirmed it at a higher provenance trust level (rules/trust.py).
    TRUST_RAISED = "trust_raised", "trust raised by a confirmation"
    # A reviewer decides on the candidates queue.
    APPROVE = "approve", "approved"
    EDIT_APPROVE = "edit_approve", "edited and approved"
    CONFIRM = "confirm", "confirmed on recheck"
    REACTIVATE = "reactivate", "kept and reactivated"
    REJECT = "reject", "rejected"
    RETIRE = "retire", "retired"
    DEFER = "defer", "deferred"
    MERGE_INTO = "merge_into", "merged into another entry"
    MERGE_IN = "merge_in", "a candidate merged in"
    UNDO = "undo", "decision undone"
    # Two-reviewer scopes: the first approval, the second that activates, a disagreement sent to a lead.
    FIRST_APPROVAL = "first_approval", "approved (1 of 2)"
    SECOND_APPROVAL = "second_approval", "approved by a second reviewer"
    DISAGREEMENT = "disagreement", "rejected against an approval: sent to a lead"
    # An agent reports the outcome of a task that used the entry.
    OUTCOME_SUCCESS = "outcome_success", "task succeeded"
    OUTCOME_FAILURE = "outcome_failure", "task failed"
    # Background sweeps.
    ARCHIVE = "archive", "archived"
    REVIVE = "revive", "revived"
    QUEUE_RECHECK = "queue_recheck", "sent back for a recheck"
    # The injection sweep: a newer detector found text that tries to instruct the agent.
    QUARANTINE = "quarantine", "withheld: an injection detector flagged it"
    # Conflicts.
    CONFLICT_OPENED = "conflict_opened", "conflict opened"
    CONFLICT_KEEP = "conflict_keep", "kept over the other entry"
    CONFLICT_SPLIT = "conflict_split", "split from the other entry"
    CONFLICT_MERGE = "conflict_merge", "merged from a conflict"
    CONFLICT_DISMISSED = "conflict_dismissed", "conflict dismissed"
    CONFLICT_MOOT = "conflict_moot", "conflict closed as moot"
    SUPERSEDE = "supersede", "superseded"
    # Consolidation proposals.
    CONSOLIDATION_PROPOSED = "consolidation_proposed", "consolidation proposed"
    CONSOLIDATION_MERGE = "consolidation_merge", "merged from a consolidation"
    CONSOLIDATION_KEEP = "consolidation_keep", "kept by a consolidation"
    CONSOLIDATION_DISMISSED = "consolidation_dismissed", "consolidation dismissed"
    # Skill promotions.
    SKILL_NOMINATED = "skill_nominated", "nominated as a skill"
    SKILL_DRAFT_EDITED = "skill_draft_edited", "skill draft edited"
    SKILL_TRIAL = "skill_trial", "skill trial reported"
    SKILL_APPROVED = "skill_approved", "skill approved"
    # Made from low-trust sources: a second lead's approval publishes it.
    SKILL_FIRST_APPROVAL = "skill_first_approval", "skill approved (1 of 2 leads)"
    SKILL_INJECTION_ACKNOWLEDGED = "skill_injection_acknowledged", "skill draft's possible injection read by a lead"
    SKILL_REJECTED = "skill_rejected", "skill rejected"
    SKILL_RETIRED = "skill_retired", "skill retired"
    SKILL_WITHDRAWN = "skill_withdrawn", "skill withdrawn: a source was forgotten"
    # Agent tokens.
    TOKEN_CREATED = "token_created", "token created"
    TOKEN_REVOKED = "token_revoked", "token revoked"
    # Memory versions: what agents read.
    VERSION_PUBLISHED = "version_published", "memory version published"
    VERSION_ROLLED_BACK = "version_rolled_back", "memory version rolled back"
    # Forget requests: "forget this" retires a lesson, purges its text everywhere and leaves a tombstone.
    FORGET_FILED = "forget_filed", "forget requested"
    FORGET_APPROVED = "forget_approved", "forget request approved"
    FORGET_DECLINED = "forget_declined", "forget request declined"
    FORGOTTEN = "forgotten", "forgotten: retired and its text purged"
    FORGET_PURGE = "forget_purge", "text purged from the history"
    FORGET_HELD = "forget_held", "held: repeats a forgotten lesson"
    # After the purge, every surface searched for what is left of the text; a residue reopens the request.
    FORGET_RECEIPT = "forget_receipt", "searched for residues after the purge"
    FORGET_REOPENED = "forget_reopened", "reopened: a residue was found"
    FORGET_RESIDUE_CLOSED = "forget_residue_closed", "residues dealt with: closed again"
    # How many reviewers a scope's candidates need.
    REVIEW_RULE_SET = "review_rule_set", "approvals required set"
    # Holdout evaluation: the share of tasks under a scope prefix that get no memory.
    HOLDOUT_SET = "holdout_set", "holdout fraction set"
    # Admission policies: who decides on new candidates of a scope prefix.
    ADMISSION_POLICY_SET = "admission_policy_set", "admission policy set"
    # Memory tests: a lead's tests of what a scope's answers hold, run at every publish.
    MEMORY_TEST_CREATED = "memory_test_created", "memory test created"
    MEMORY_TEST_CHANGED = "memory_test_changed", "memory test changed"
    MEMORY_TEST_RETIRED = "memory_test_retired", "memory test retired"
    MEMORY_TEST_PASSED = "memory_test_passed", "memory test passed"
    MEMORY_TEST_FAILED = "memory_test_failed", "memory test failed"
    # A lead published a version a memory test failed on, having read the failure.
    MEMORY_TEST_ACKNOWLEDGED = "memory_test_acknowledged", "memory test failure acknowledged"

    @classmethod
    def activating(cls) -> frozenset["EventAction"]:
        """The actions after which their entry is active because someone chose it (or fresh evidence
        revived it): the capacity budget treats the latest of these as the scope's newcomer."""
        return frozenset(
            {
                cls.APPROVE,
                cls.EDIT_APPROVE,
                cls.SECOND_APPROVAL,
                cls.CONFIRM,
                cls.REACTIVATE,
                cls.REVIVE,
                cls.CONFLICT_KEEP,
                cls.CONFLICT_MERGE,
                cls.CONSOLIDATION_MERGE,
                cls.CONSOLIDATION_KEEP,
            }
        )

    @classmethod
    def undoable(cls) -> frozenset["EventAction"]:
        """A reviewer's decisions on the candidates queue that the reviewer may take back for a short while:
        each changes only the entry itself (a merge also writes its target, a reactivation its archive)."""
        return frozenset(
            {
                cls.APPROVE,
                cls.EDIT_APPROVE,
                cls.CONFIRM,
                cls.REJECT,
                cls.RETIRE,
                cls.DEFER,
                cls.FIRST_APPROVAL,
                cls.SECOND_APPROVAL,
                cls.DISAGREEMENT,
            }
        )

    @classmethod
    def reviewer_decisions(cls) -> frozenset["EventAction"]:
        """What a person decides on the candidates queue: the reviewers' page counts and times these."""
        return frozenset(
            {
                cls.APPROVE,
                cls.EDIT_APPROVE,
                cls.CONFIRM,
                cls.REACTIVATE,
                cls.REJECT,
                cls.RETIRE,
                cls.DEFER,
                cls.MERGE_INTO,
                cls.FIRST_APPROVAL,
                cls.SECOND_APPROVAL,
                cls.DISAGREEMENT,
            }
        )

    @classmethod
    def outcomes(cls) -> frozenset["EventAction"]:
        """An agent's reported task outcomes, one Event per used entry."""
        return frozenset({cls.OUTCOME_SUCCESS, cls.OUTCOME_FAILURE})
