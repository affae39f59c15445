"""Forget requests: "forget this" retires a lesson, purges its text everywhere and keeps it from being
learned again.

- `file_forget_request`: a reviewer (console) or an agent (API, for its user) names an entry, or a text to
  match in a scope, and a reason. The request waits in the Forget queue.
- `decline_forget_request`: a lead declines, with a reason.
- `approve_forget_request`: a lead approves, with the near duplicates ticked on the card. In one
  transaction: each entry is retired through the write path with its text replaced by the request's marker
  ("[forgotten: request #N]"); a version is published at once without them; the forgotten texts are purged
  from the evidence excerpts, the snapshots and reasons stored in Events, every stored version
  (ReleasedEntry rows), the retrieval logs' queries and the proposals made of them; tombstones (fingerprint
  and signature, never the text) are written; and the purge is recorded as an Event.

On PostgreSQL events and evidence are append-only (a trigger refuses UPDATE and DELETE): their purge is
`curation_forget_purge` (migration 0024), the one function the trigger lets through, run inside this
transaction. Elsewhere the same purge is done here (forgetting.purge_value is its rule in Python)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import F, Q

from curation import access, clock
from curation.forgetting import purge_text, purge_value, texts_to_purge
from curation.models import (
    CONTENT_MAX, AgentToken, Conflict, ConsolidationProposal, Entry, Event, EventAction, Evidence, ForgetRequest,
    MemoryVersion, ReleasedEntry, Retrieval, RetrievedEntry, SkillProposal, Status, Tombstone, forgotten_marker,
)
from curation.permissions import FORGET, REVIEW
from curation.selectors import forgets as reads
from curation.selectors.retrieval_cache import forget_cached_answers
from curation.similarity import fingerprint, signature

from .conflicts import close_moot_conflicts
from .entry_writes import write_entry
from .errors import Forgotten, InvalidTransition
from .forget_receipt import Receipt, issue_receipt, receipt_tokens
from .events import actor_label_for, record_event, rewrite_purged_text
from .releases import OutsideScopes, publish_version

REASON_MAX = 2000
SKILL_TEXTS = ("description", "when_to_use", "steps", "parameters", "verification", "rollback", "pitfalls")


def refuse_forgotten(scope: str, trigger: str, content: str) -> None:
    """Raise Forgotten when this lesson repeats a forgotten one (exactly, or nearly by its signature)."""
    stone = reads.tombstone_for(scope, trigger, content)
    if stone is not None:
        raise Forgotten(stone.request_id, stone.forgotten_on)


def forgotten_of(lessons: list[tuple[str, str, str]]) -> list[Forgotten | None]:
    """refuse_forgotten for a batch of (scope, trigger, content), in one query: each one's refusal or None."""
    return [Forgotten(stone.request_id, stone.forgotten_on) if stone else None
            for stone in reads.tombstones_for(lessons)]


# --- filing ---------------------------------------------------------------------------------------------


def _clean_reason(reason) -> str:
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise ValidationError({"reason": ["Say why this should be forgotten (e.g. the user asked for it)."]})
    if len(reason) > REASON_MAX:
        raise ValidationError({"reason": [f"At most {REASON_MAX} characters (this has {len(reason)})."]})
    return reason


def _may_read(actor, token: AgentToken | None, scope: str) -> bool:
    return access.token_covers(token, scope) if token is not None else access.user_can_see_scope(actor, scope)


def file_forget_request(*, reason: str, entry_id: int | None = None, text: str = "", scope: str = "", actor=None,
                        token: AgentToken | None = None, at=None) -> ForgetRequest:
    """A request to forget an entry (`entry_id`) or the lessons matching `text` in `scope`, by a reviewer
    (`actor`) or an agent (`token`). Entry.DoesNotExist for an entry the filer may not read; PermissionDenied
    for a role that may not file or a scope the filer does not cover; ValidationError for bad fields."""
    if token is None and (actor is None or not actor.has_perm(REVIEW)):
        raise PermissionDenied("Only reviewers and leads file forget requests.")
    now = at or clock.now()
    reason = _clean_reason(reason)
    text = text.strip() if isinstance(text, str) else None
    if text is None:
        raise ValidationError({"text": ["The text to forget, as a string."]})
    if (entry_id is None) == (not text):
        raise ValidationError({"entry_id": ["Name an entry (entry_id) or a text to match (text with its scope), "
                                            "not both."]})
    with transaction.atomic():
        entry = None
        if entry_id is not None:
            if isinstance(entry_id, bool) or not isinstance(entry_id, int):
                raise ValidationError({"entry_id": ["An entry id (a whole number)."]})
            entry = Entry.objects.select_for_update().get(pk=entry_id)
            if not _may_read(actor, token, entry.scope):
                raise Entry.DoesNotExist  # outside the filer's scopes: as if it did not exist
            if Tombstone.objects.filter(entry=entry).exists():
                raise ValidationError({"entry_id": [f"Entry #{entry.pk} is already forgotten."]})
            if entry.forget_requests.filter(state=ForgetRequest.State.OPEN).exists():
                raise ValidationError({"entry_id": [f"Entry #{entry.pk} already has an open forget request."]})
            scope = entry.scope
        else:
            if len(text) > CONTENT_MAX:
                raise ValidationError({"text": [f"At most {CONTENT_MAX} characters (this has {len(text)})."]})
            if not isinstance(scope, str) or not scope.strip():
                raise ValidationError({"scope": ["The scope the text is about."]})
            scope = access.clean_scope(scope.strip())
            if not _may_read(actor, token, scope):
                raise PermissionDenied(f"You may not file requests about scope {scope!r}.")
        label = token.label if token is not None else actor_label_for(actor)
        request = ForgetRequest.objects.create(
            entry=entry, match_text=text if entry is None else "", scope=scope, reason=reason,
            requested_by=actor if token is None else None, requested_by_token=token, requested_by_label=label,
            created_at=now,
        )
        record_event(request, actor=actor if token is None else None, actor_label=label,
                     action=EventAction.FORGET_FILED, reason=reason, at=now, also=(entry,) if entry else (),
                     after={"state": request.state, "entry": entry.pk if entry else None, "scope": scope})
    return request


# --- deciding -------------------------------------------------------------------------------------------


def _load_open(request_id: int, actor) -> ForgetRequest:
    if not actor.has_perm(FORGET):
        raise PermissionDenied("Only a lead approves or declines forget requests.")
    request = reads.visible_forget_requests(actor).select_for_update().get(pk=request_id)
    if request.state != ForgetRequest.State.OPEN:
        who = f" by {request.decided_by.get_username()}" if request.decided_by_id else ""
        raise InvalidTransition(f"Forget request #{request.pk} was already {request.state}{who}.")
    return request


def decline_forget_request(request_id: int, *, actor, reason: str, at=None) -> ForgetRequest:
    now = at or clock.now()
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise ValidationError({"reason": ["Say why the lesson is kept: whoever asked reads it."]})
    with transaction.atomic():
        request = _load_open(request_id, actor)
        request.state, request.decided_by, request.decided_at = ForgetRequest.State.DECLINED, actor, now
        request.decision_note = reason[:REASON_MAX]
        request.save(update_fields=["state", "decided_by", "decided_at", "decision_note"])
        record_event(request, actor=actor, action=EventAction.FORGET_DECLINED, reason=request.decision_note, at=now,
                     before={"state": ForgetRequest.State.OPEN}, after={"state": request.state})
    return request


@dataclass
class ForgetOutcome:
    request: ForgetRequest
    forgotten: list[Entry]
    version: MemoryVersion | None
    purged_rows: int
    receipt: Receipt | None = None

    @property
    def request_id(self) -> int:
        return self.request.pk


def _entries_to_forget(request: ForgetRequest, actor, duplicate_ids) -> list[Entry]:
    """The request's entry and the ticked duplicates, locked in id order; every one the lead's to see."""
    try:
        ticked = {int(pk) for pk in duplicate_ids}
    except (TypeError, ValueError):
        raise ValidationError({"duplicates": ["The ticked duplicates are entry ids."]}) from None
    ids = ticked | ({request.entry_id} if request.entry_id else set())
    entries = list(Entry.objects.select_for_update().filter(pk__in=ids).order_by("id"))
    unknown = ids - {e.pk for e in entries if access.user_can_see_scope(actor, e.scope)}
    if unknown:
        raise ValidationError({"duplicates": [f"No such entry in your scopes: {', '.join(f'#{pk}' for pk in sorted(unknown))}."]})
    forgotten = set(Tombstone.objects.filter(entry__in=entries).values_list("entry_id", flat=True))
    if request.entry_id in forgotten:
        raise InvalidTransition(f"Entry #{request.entry_id} was forgotten meanwhile (as another request's duplicate): "
                                "decline this request, saying so.")
    if forgotten:
        raise ValidationError({"duplicates": [f"Already forgotten: {', '.join(f'#{pk}' for pk in sorted(forgotten))}."]})
    return entries


PROPOSAL_TEXTS = ("proposed_trigger", "proposed_content", "proposed_boundary")


def _forgotten_texts(request: ForgetRequest, entries: list[Entry]) -> list[str]:
    """Every stored text made of the forgotten lessons: their fields, their evidence, the request's text, and
    the merged text of consolidation proposals made of them (which their Events quote too)."""
    texts = [request.match_text]
    for e in entries:
        texts += [e.trigger, e.content, e.boundary, e.recheck_when, *(c for c in e.conditions or () if isinstance(c, str))]
    texts += Evidence.objects.filter(entry__in=entries).values_list("excerpt", flat=True)
    for proposal in ConsolidationProposal.objects.filter(entries__in=entries).distinct().only(*PROPOSAL_TEXTS):
        texts += [getattr(proposal, name) for name in PROPOSAL_TEXTS]
    return texts_to_purge(texts)


def _publish_without(entries: list[Entry], request: ForgetRequest, actor, now) -> MemoryVersion | None:
    """A new version without the forgotten entries, at once; None when no version ever held them."""
    ids = [e.pk for e in entries]
    if not ReleasedEntry.objects.filter(entry_id__in=ids, valid_to__isnull=True).exists():
        return None
    scopes = sorted({e.scope for e in entries})
    # A lead limited to some scopes publishes under a prefix of theirs: the scopes' common ancestor.
    prefix = "" if access.user_scope_prefixes(actor) is None else _common_scope(scopes)
    try:
        return publish_version(actor=actor, summary=f"Forget request #{request.pk}: {len(ids)} entr"
                               f"{'y' if len(ids) == 1 else 'ies'} forgotten", scope_prefix=prefix,
                               acknowledge=True, entry_ids=ids, at=now)
    except ValidationError as exc:
        if "scope_prefix" in exc.message_dict:  # nothing to publish: the published version lacks them already
            return None
        raise
    except OutsideScopes as exc:  # a scoped lead's entries in two of their grants: no one prefix of theirs
        raise ValidationError({"duplicates": [f"{exc} Tick only entries under one of your scopes."]}) from None


def _common_scope(scopes: list[str]) -> str:
    parts = [s.split("/") for s in scopes]
    common = []
    for segments in zip(*parts):
        if len(set(segments)) != 1:
            break
        common.append(segments[0])
    return "/".join(common)


def approve_forget_request(request_id: int, *, actor, duplicate_ids=(), note: str = "", at=None) -> ForgetOutcome:
    """Forget the request's entry and the ticked duplicates, everywhere, in one transaction (see the module)."""
    now = at or clock.now()
    with transaction.atomic():
        request = _load_open(request_id, actor)
        entries = _entries_to_forget(request, actor, duplicate_ids)
        if not entries and not request.match_text:
            raise ValidationError({"duplicates": ["Tick the entries to forget."]})
        marker = request.marker
        texts = _forgotten_texts(request, entries)
        tokens = receipt_tokens(texts, entries, request)  # in memory only, for the receipt after the purge
        stones = [Tombstone(request=request, entry=e, scope=e.scope, fingerprint=fingerprint(e.trigger, e.content),
                            signature=signature(f"{e.trigger} {e.content}"), forgotten_on=now.date(), created_at=now)
                  for e in entries]
        if request.match_text:
            stones.append(Tombstone(request=request, scope=request.scope, signature=signature(request.match_text),
                                    forgotten_on=now.date(), created_at=now))
        for entry in entries:
            write_entry(entry, {
                "status": Status.RETIRED, "queued_at": None, "queue_reason": "", "trigger": marker, "content": marker,
                "boundary": "", "recheck_when": "", "conditions": [], "archived_at": None, "archive_reason": "",
                "embedding": None,  # an embedding can be turned back into an approximation of the text
            }, action=EventAction.FORGOTTEN, actor=actor, reason=f"forgotten by forget request #{request.pk}", at=now)
        request.state, request.decided_by, request.decided_at = ForgetRequest.State.APPROVED, actor, now
        request.forgotten_ids = [e.pk for e in entries]
        request.match_text = marker if request.match_text else ""
        request.reason = purge_text(request.reason, texts, marker)
        request.decision_note = purge_text((note or "").strip()[:REASON_MAX], texts, marker)
        request.save()
        close_moot_conflicts(entries, actor=actor, now=now, except_id=0, went=f"forgotten (request #{request.pk})")
        _dismiss_proposals(entries, request, actor, now)
        version = _publish_without(entries, request, actor, now)
        if version is not None:
            ForgetRequest.objects.filter(pk=request.pk).update(published_version=version.number)
            request.published_version = version.number
        purged = _purge(request, [e.pk for e in entries], texts)
        Tombstone.objects.bulk_create(stones)
        record_event(request, actor=actor, action=EventAction.FORGET_APPROVED, reason=request.decision_note, at=now,
                     before={"state": ForgetRequest.State.OPEN},
                     after={"state": request.state, "forgotten": request.forgotten_ids,
                            "published_version": request.published_version})
        record_event(request, actor=actor, action=EventAction.FORGET_PURGE, at=now,
                     reason=f"text of {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} replaced by {marker}",
                     after=purged)
        receipt = issue_receipt(request, tokens, entries, actor=actor, at=now)
    return ForgetOutcome(request, entries, version, sum(purged.values()), receipt)


def _dismiss_proposals(entries: list[Entry], request: ForgetRequest, actor, now) -> None:
    """Open consolidation proposals made of a forgotten entry have nothing left to decide: dismissed, each
    with its Event."""
    proposals = list(ConsolidationProposal.objects.select_for_update().filter(
        state=ConsolidationProposal.State.OPEN, pk__in=ConsolidationProposal.objects.filter(entries__in=entries)
        .values("pk")).order_by("id"))
    for proposal in proposals:
        proposal.state, proposal.decided_by, proposal.decided_at = ConsolidationProposal.State.DISMISSED, actor, now
        proposal.decision_note = f"an entry of it was forgotten (forget request #{request.pk})"
        proposal.save(update_fields=["state", "decided_by", "decided_at", "decision_note"])
        record_event(proposal, actor=actor, action=EventAction.CONSOLIDATION_DISMISSED, at=now,
                     reason=proposal.decision_note, before={"state": ConsolidationProposal.State.OPEN},
                     after={"state": proposal.state})


# --- the purge ------------------------------------------------------------------------------------------


def _purge(request: ForgetRequest, ids: list[int], texts: list[str]) -> dict:
    """Replace the forgotten texts by the marker wherever they are stored; answers how many rows, per place."""
    marker = request.marker
    counts = {"history": _purge_history(request, ids, texts)}
    # Every stored version: the text goes, and the rows close where they start, so that no version holds
    # them any more and a rollback to a version before the forget cannot serve the marker as a lesson.
    # Cached answers of every version may hold them: none is served once this commits.
    transaction.on_commit(forget_cached_answers)
    counts["released_rows"] = ReleasedEntry.objects.filter(entry_id__in=ids).update(
        trigger=marker, content=marker, boundary="", conditions=[], embedding=None, valid_to=F("valid_from"))
    counts["retrievals"] = Retrieval.objects.filter(
        pk__in=RetrievedEntry.objects.filter(entry_id__in=ids).values("retrieval_id")).exclude(query="").update(query=marker)
    counts["proposals"] = _purge_proposals(ids, texts, marker)
    counts["skills"] = _purge_rows(SkillProposal.objects.filter(sources__entry_id__in=ids).distinct(),
                                   (*SKILL_TEXTS, "reason", "decision_note", "retire_reason"), texts, marker)
    # The warnings a publisher acknowledged quote the entries' triggers; versions are few.
    counts["versions"] = _purge_rows(MemoryVersion.objects.exclude(acknowledged=[]), ("acknowledged", "summary"),
                                     texts, marker)
    counts["conflicts"] = _purge_rows(Conflict.objects.filter(Q(entry_a_id__in=ids) | Q(entry_b_id__in=ids)),
                                      ("reason",), texts, marker)
    return counts


def _purge_proposals(ids: list[int], texts: list[str], marker: str) -> int:
    """A consolidation proposal made of a forgotten entry: its merged text is made of the forgotten one, so
    all of it goes (its keywords too, which may be shorter than what is searched for inside texts)."""
    proposals = list(ConsolidationProposal.objects.filter(entries__in=ids).distinct())
    for p in proposals:
        ConsolidationProposal.objects.filter(pk=p.pk).update(
            **{name: marker if getattr(p, name) else "" for name in PROPOSAL_TEXTS}, proposed_conditions=[],
            reason=purge_text(p.reason, texts, marker), decision_note=purge_text(p.decision_note, texts, marker))
    return len(proposals)


def _purge_rows(rows, fields, texts: list[str], marker: str) -> int:
    """Working rows that may quote a forgotten text (few: those made of the forgotten entries)."""
    changed = 0
    for row in rows:
        values = {f: purge_value(getattr(row, f), texts, marker) for f in fields}
        if any(values[f] != getattr(row, f) for f in fields):
            type(row).objects.filter(pk=row.pk).update(**values)
            changed += 1
    return changed


def _purge_history(request: ForgetRequest, ids: list[int], texts: list[str]) -> int:
    """Events and evidence: on PostgreSQL the one function the append-only trigger lets through."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT curation_forget_purge(%s, %s)", [request.pk, texts])
            return cursor.fetchone()[0]
    marker = request.marker
    changed = Evidence.objects.filter(entry_id__in=ids).exclude(excerpt=marker).update(excerpt=marker)
    events = Event.objects.filter(
        Q(entry_id__in=ids) | Q(forget_request=request)
        | Q(conflict__in=Conflict.objects.filter(Q(entry_a_id__in=ids) | Q(entry_b_id__in=ids)))
        | Q(proposal__entries__in=ids) | Q(skill__sources__entry_id__in=ids)
    ).distinct()
    for event in events:
        own = event.entry_id in ids
        rewrite_purged_text(
            event,
            before=purge_value(event.before, texts, marker, own_snapshot=own),
            after=purge_value(event.after, texts, marker, own_snapshot=own),
            reason=purge_text(event.reason, texts, marker),
            entry_label=f"#{event.entry_id} {marker}" if own else purge_text(event.entry_label, texts, marker),
        )
        changed += 1
    return changed


__all__ = ["Forgotten", "ForgetOutcome", "approve_forget_request", "decline_forget_request", "file_forget_request",
           "forgotten_marker", "refuse_forgotten"]
