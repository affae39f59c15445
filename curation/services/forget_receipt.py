"""A forget's receipt: after the purge, in the approval's transaction, every surface is searched for the
forgotten texts' distinctive tokens (selectors/forget_receipt.py) and the result is an Event on the request:
"0 residues in N places checked", or where residues were found (table and column with row ids, a version,
a skill, an export file; never the text). A residue reopens the request for a lead (its own Event), who
deals with each place and closes it again with a note.

The tokens exist only in memory, in the approval's transaction: no text leaves the process (no task message,
no log). Once the purge commits, the sweep `vacuum_purged` is queued to VACUUM the purged tables."""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from curation.rules import clock
from curation.rules.forget_receipt import Receipt, distinctive_tokens
from curation.models import Entry, EventAction, ForgetRequest
from curation.rules.permissions import FORGET
from curation.selectors import forgets as forget_reads
from curation.selectors.forget_receipt import common_words, search_surfaces

from .errors import InvalidTransition
from .events import record_event

logger = logging.getLogger(__name__)

RECEIPT_ACTOR = "forget receipt"
NOTE_MAX = 2000
VACUUM_TASK = "curation.rules.lifecycle.vacuum_purged"


def receipt_tokens(texts, entries: list[Entry], request: ForgetRequest) -> list[str]:
    """Before the purge: what the receipt will search for (the texts' distinctive tokens, less what stays:
    the entries' scopes, the request's marker and the words other lessons use too). In memory only."""
    tokens = distinctive_tokens(texts, kept=[*(e.scope for e in entries), request.scope, request.marker])
    common = common_words(tokens, besides=[e.pk for e in entries])
    return [t for t in tokens if t not in common]


def issue_receipt(request: ForgetRequest, tokens: list[str], entries: list[Entry], *, actor, at=None) -> Receipt:
    """After the purge, in its transaction: search, record the receipt, reopen the request on a residue,
    and queue the vacuum for when the purge commits."""
    now = at or clock.now()
    receipt = search_surfaces(tokens, scopes=[e.scope for e in entries] or [request.scope])
    record_event(
        request,
        actor=actor,
        action=EventAction.FORGET_RECEIPT,
        reason=receipt.summary(),
        at=now,
        after=receipt.as_json(),
    )
    if not receipt.clean:
        before = request.state
        request.state = ForgetRequest.State.REOPENED
        ForgetRequest.objects.filter(pk=request.pk).update(state=request.state)
        record_event(
            request,
            actor=None,
            actor_label=RECEIPT_ACTOR,
            action=EventAction.FORGET_REOPENED,
            at=now,
            reason="the search after the purge found residues: a lead checks each place "
            f"({', '.join(r.place for r in receipt.residues)})",
            before={"state": before},
            after={"state": request.state, "places": [r.place for r in receipt.residues]},
        )
    transaction.on_commit(queue_vacuum)
    return receipt


def queue_vacuum() -> None:
    """Queue the vacuum sweep; a lost broker only delays it to its next scheduled run."""
    try:
        # a lead just purged: the interactive queue, not behind the nightly sweeps
        current_app.send_task(
            VACUUM_TASK, kwargs={"triggered_by": "forget purge"}, queue=settings.TASK_QUEUE_INTERACTIVE
        )
    except Exception:  # the broker is down: the beat schedule runs it later
        logger.warning("could not queue %s; its scheduled run will vacuum", VACUUM_TASK, exc_info=True)


def close_reopened(request_id: int, *, actor, note: str, at=None) -> ForgetRequest:
    """A lead has dealt with every residue of a reopened request (edited or forgotten the rows quoting the
    text, or judged a match a coincidence) and says how: the request is approved again."""
    if not actor.has_perm(FORGET):
        raise PermissionDenied("Only a lead closes a reopened forget request.")
    note = note.strip() if isinstance(note, str) else ""
    if not note:
        raise ValidationError({"note": ["Say what was done about each residue: the person who asked reads it."]})
    now = at or clock.now()
    with transaction.atomic():
        request = forget_reads.visible_forget_requests(actor).select_for_update().get(pk=request_id)
        if request.state != ForgetRequest.State.REOPENED:
            raise InvalidTransition(f"Forget request #{request.pk} is {request.state}, not reopened.")
        request.state = ForgetRequest.State.APPROVED
        ForgetRequest.objects.filter(pk=request.pk).update(state=request.state)
        record_event(
            request,
            actor=actor,
            action=EventAction.FORGET_RESIDUE_CLOSED,
            reason=note[:NOTE_MAX],
            at=now,
            before={"state": ForgetRequest.State.REOPENED},
            after={"state": request.state},
        )
    return request
