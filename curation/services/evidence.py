from django.core.exceptions import PermissionDenied
from django.db import transaction

from curation.rules import access, clock, injection, trust
from curation.models import Entry, EventAction, Evidence
from curation.rules.permissions import REVIEW
from curation.rules.redaction import redact_fields

from .held import held_evidence
from .events import actor_label_for, record_event
from .trust import raise_trust, with_levels
from .validation import clean_evidence


def add_evidence(entry_id: int, *, data: dict, actor=None, actor_label: str = "", at=None) -> Evidence:
    """Append evidence for or against an entry, with an Event. Evidence is never edited or removed.

    A user needs the review permission and the entry's scope; an agent (actor None, actor_label set)
    has had its token's scopes checked by the API before it calls this. A person's piece is a person's
    (trust.evidence_trust), an agent's its own claim; a confirmation from a source other than the entry's
    author raises the entry's trust (services.trust). What the injection detector finds in its texts marks the
    piece (the entry page shows what was found; an agent reading the entry gets a placeholder instead of its
    text), and the answer to its sender stays that of any piece (no oracle to tune a payload against)."""
    data, findings = redact_fields(data, ("excerpt", "task_ref"))
    sender = trust.Sender.PERSON if actor is not None else trust.Sender.AGENT
    cleaned = clean_evidence(data, sender=sender)
    now = at or clock.now()
    with transaction.atomic():
        entry = Entry.objects.select_for_update().get(pk=entry_id)
        if actor is not None:
            if not access.user_can_see_scope(actor, entry.scope):
                raise Entry.DoesNotExist
            if not actor.has_perm(REVIEW):
                raise PermissionDenied("Only reviewers and leads add evidence in the console.")
        label = actor_label or actor_label_for(actor)
        if entry.held_by_id is not None:  # a held submission's text is never stored (services.held)
            cleaned = held_evidence([cleaned], entry.held_by)[0]
        cleaned = with_levels([cleaned], entry=entry, recorder=label, sender=sender)[0]
        found = injection.evidence_found(cleaned)
        evidence = Evidence.objects.create(
            entry=entry,
            **{**cleaned, "observed_at": cleaned["observed_at"] or now},
            recorded_by=actor,
            recorded_by_label=label,
            injection_found=found,
            created_at=now,
        )
        record_event(
            entry,
            actor=actor,
            actor_label=label,
            action=EventAction.ADD_EVIDENCE,
            reason=f"{evidence.polarity} ({evidence.signal}, {evidence.kind}, trust {trust.name(evidence.trust)})"
            + "".join(f"; redacted {f.kind}" for f in findings),
            after={
                "evidence_id": evidence.pk,
                "signal": evidence.signal,
                "source": evidence.source,
                "trust": evidence.trust,
                "polarity": evidence.polarity,
                "kind": evidence.kind,
                "excerpt": evidence.excerpt,
                "task_ref": evidence.task_ref,
                # In `after`, not the reason: agents read an entry's Event reasons, and which rule caught their
                # text would be an oracle to tune it against.
                **({"injection_found": found} if found else {}),
            },
            at=now,
        )
        raise_trust(entry, [evidence], actor=actor, actor_label=label, at=now)
    return evidence
