"""Forget requests: "forget this" retires a lesson, purges its text and keeps it from being learned again.

- `file_forget_request`: a reviewer (console) or an agent (API, for its user) names an entry, or a text to
  match in a scope, and a reason. The request waits in the Forget queue.
- `decline_forget_request`: a lead declines, with a reason.
- `approve_forget_request`: a lead approves, with the near duplicates and the quoting rows ("Also found
  in", selectors.forget_quotes) ticked on the card. In one transaction: each entry is retired through the
  write path with its text replaced by the request's marker ("[forgotten: request #N]"); a version is
  published at once without them; the purge rewrites exactly what the forgotten lesson left (see "the
  purge" below); tombstones (never the text) are written; and the purge is recorded as an Event.

On PostgreSQL events and evidence are append-only (a trigger refuses UPDATE and DELETE): their purge is
`curation_forget_purge` (migrations 0024, 0032), the one function the trigger lets through, run inside this
transaction. Elsewhere the same purge is done here (forgetting.purge_keys and purge_text are its rules)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import F, Q

from curation.rules import access, clock, memory_tests
from curation.rules.forgetting import (
    DERIVED_TEXT_KEYS,
    DERIVED_TEXT_LISTS,
    ENTRY_TEXT_KEYS,
    ENTRY_TEXT_LISTS,
    purge_keys,
    purge_text,
    purge_value,
    purge_warnings,
    quoted_texts,
)
from curation.models import (
    CONTENT_MAX,
    AgentToken,
    Conflict,
    ConsolidationProposal,
    Entry,
    Event,
    EventAction,
    Evidence,
    ForgetRequest,
    MemoryTest,
    MemoryVersion,
    ReleasedEntry,
    Retrieval,
    RetrievedEntry,
    Tombstone,
    forgotten_marker,
)
from curation.rules.permissions import FORGET, REVIEW
from curation.rules.similarity import fingerprint
from curation.selectors import forgets as reads
from curation.selectors import visible_entries
from curation.selectors.forget_quotes import lesson_texts, quotes_of
from curation.infra.db_router import fence_replica_reads
from curation.selectors.retrieval_cache import forget_cached_answers

from . import retrieval_buffer
from .conflicts import close_moot_conflicts
from .entry_writes import write_entry
from .errors import Forgotten, InvalidTransition
from .forget_receipt import Receipt, issue_receipt, receipt_tokens
from .memory_tests import retire_corrections_of_forgotten
from .events import actor_label_for, record_event, rewrite_purged_text
from .releases import OutsideScopes, publish_version
from .skills import withdraw_skills_made_of

REASON_MAX = 2000


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


def file_forget_request(
    *,
    reason: str,
    entry_id: int | None = None,
    text: str = "",
    scope: str = "",
    actor=None,
    token: AgentToken | None = None,
    at=None,
) -> ForgetRequest:
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
        raise ValidationError(
            {"entry_id": ["Name an entry (entry_id) or a text to match (text with its scope), not both."]}
        )
    with transaction.atomic():
        entry = None
        if entry_id is not None:
            if isinstance(entry_id, bool) or not isinstance(entry_id, int):
                raise ValidationError({"entry_id": ["An entry id (a whole number)."]})
            # A person reads entries as every page does (selectors.visible_entries: no held submission); an
            # agent reads its scopes' rows, its held submissions too (the candidates they would have been).
            rows = Entry.objects if token is not None else visible_entries(actor)
            entry = rows.select_for_update().get(pk=entry_id)
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
            scope = access.clean_scope(scope)
            if not _may_read(actor, token, scope):
                raise PermissionDenied(f"You may not file requests about scope {scope!r}.")
        label = token.label if token is not None else actor_label_for(actor)
        request = ForgetRequest.objects.create(
            entry=entry,
            match_text=text if entry is None else "",
            scope=scope,
            reason=reason,
            requested_by=actor if token is None else None,
            requested_by_token=token,
            requested_by_label=label,
            created_at=now,
        )
        record_event(
            request,
            actor=actor if token is None else None,
            actor_label=label,
            action=EventAction.FORGET_FILED,
            reason=reason,
            at=now,
            also=(entry,) if entry else (),
            after={"state": request.state, "entry": entry.pk if entry else None, "scope": scope},
        )
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
        record_event(
            request,
            actor=actor,
            action=EventAction.FORGET_DECLINED,
            reason=request.decision_note,
            at=now,
            before={"state": ForgetRequest.State.OPEN},
            after={"state": request.state},
        )
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
    # A ticked id is one the lead may read as every page reads entries (no held submission); the request's own
    # entry, one its filer read (an agent's held submission included), within the lead's scopes.
    readable = set(visible_entries(actor).filter(pk__in=ticked).values_list("pk", flat=True))
    readable |= {e.pk for e in entries if e.pk == request.entry_id and access.user_can_see_scope(actor, e.scope)}
    unknown = ids - readable
    if unknown:
        raise ValidationError(
            {"duplicates": [f"No such entry in your scopes: {', '.join(f'#{pk}' for pk in sorted(unknown))}."]}
        )
    forgotten = set(Tombstone.objects.filter(entry__in=entries).values_list("entry_id", flat=True))
    if request.entry_id in forgotten:
        raise InvalidTransition(
            f"Entry #{request.entry_id} was forgotten meanwhile (as another request's duplicate): "
            "decline this request, saying so."
        )
    if forgotten:
        raise ValidationError(
            {"duplicates": [f"Already forgotten: {', '.join(f'#{pk}' for pk in sorted(forgotten))}."]}
        )
    return entries


PROPOSAL_TEXTS = ("proposed_trigger", "proposed_content", "proposed_boundary")


def _forgotten_texts(request: ForgetRequest, entries: list[Entry]) -> list[str]:
    """The forgotten lesson's texts, as the rows that quote them are searched for (never its keywords or
    conditions, which other lessons share): what the card's "Also found in" found, and what a ticked
    quote has replaced. The merged drafts of consolidation proposals made of the entries count too."""
    texts = lesson_texts(request, entries)
    for proposal in ConsolidationProposal.objects.filter(entries__in=entries).distinct().only(*PROPOSAL_TEXTS):
        texts += [getattr(proposal, name) for name in PROPOSAL_TEXTS]
    return quoted_texts(texts)


def _ticked_quotes(actor, request: ForgetRequest, entries: list[Entry], texts: list[str], keys) -> dict[str, list[str]]:
    """The ticked "Also found in" rows, by kind: each must still be one the card lists (so a key names no row
    the lead could not see, nor one that does not quote the lesson)."""
    keys = {k for k in keys if isinstance(k, str) and k}
    if not keys:
        return {}
    listed = {q.key: q for q in quotes_of(actor, request, entries, texts)}
    unknown = keys - listed.keys()
    if unknown:
        raise ValidationError(
            {"quotes": [f"Not found quoting this lesson any more: {', '.join(sorted(unknown))}. Reload the request."]}
        )
    ticked: dict[str, list[str]] = {}
    for key in sorted(keys):
        ticked.setdefault(listed[key].kind, []).append(listed[key].pk)
    return ticked


def _publish_without(entries: list[Entry], request: ForgetRequest, actor, now) -> MemoryVersion | None:
    """A new version without the forgotten entries, at once; None when no version ever held them."""
    ids = [e.pk for e in entries]
    if not ReleasedEntry.objects.filter(entry_id__in=ids, valid_to__isnull=True).exists():
        return None
    scopes = sorted({e.scope for e in entries})
    # A lead limited to some scopes publishes under a prefix of theirs: the scopes' common ancestor.
    prefix = "" if access.user_scope_prefixes(actor) is None else _common_scope(scopes)
    try:
        return publish_version(
            actor=actor,
            summary=f"Forget request #{request.pk}: {len(ids)} entr{'y' if len(ids) == 1 else 'ies'} forgotten",
            scope_prefix=prefix,
            acknowledge=True,
            entry_ids=ids,
            at=now,
        )
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


def approve_forget_request(
    request_id: int, *, actor, duplicate_ids=(), quotes=(), note: str = "", at=None
) -> ForgetOutcome:
    """Forget the request's entry and the ticked duplicates, everywhere, in one transaction (see the module);
    `quotes`: the keys of the ticked "Also found in" rows (selectors.forget_quotes), rewritten too."""
    now = at or clock.now()
    retrieval_buffer.flush()  # the purge rewrites the queries of the retrievals that returned the entries
    # Before any read: what a write let through is committed by then (selectors.forgets).
    with transaction.atomic(), reads.forgetting_alone():
        request = _load_open(request_id, actor)
        entries = _entries_to_forget(request, actor, duplicate_ids)
        if not entries and not request.match_text:
            raise ValidationError({"duplicates": ["Tick the entries to forget."]})
        marker = request.marker
        texts = _forgotten_texts(request, entries)
        ticked = _ticked_quotes(actor, request, entries, texts, quotes)
        tokens = receipt_tokens(texts, entries, request)  # in memory only, for the receipt after the purge
        stones = reads.tombstones_of(request, entries, now=now)
        left = reads.live_matches(request, entries, stones)  # kept out of releases; refused by the write path
        if unticked := reads.unticked_active(actor, left):
            raise ValidationError(
                {
                    "duplicates": [
                        f"Still active and the same lesson: {', '.join(f'#{e.pk}' for e in unticked)}. "
                        "Tick them to forget them with it."
                    ]
                }
            )
        for entry in entries:
            write_entry(
                entry,
                {  # retired and out of the queue: the transition table's FORGOTTEN row
                    "trigger": marker,
                    "content": marker,
                    "boundary": "",
                    "recheck_when": "",
                    "conditions": [],
                    "archived_at": None,
                    "archive_reason": "",
                    "embedding": None,  # an embedding can be turned back into an approximation of the text
                    "source_task": marker if entry.source_task else "",  # an agent's words for its task
                },
                action=EventAction.FORGOTTEN,
                actor=actor,
                reason=f"forgotten by forget request #{request.pk}",
                at=now,
            )
        request.state, request.decided_by, request.decided_at = ForgetRequest.State.APPROVED, actor, now
        request.forgotten_ids = [e.pk for e in entries]
        request.match_text = marker if request.match_text else ""
        request.reason = marker  # purged with it, whatever it says (the form asks not to paste the text)
        request.decision_note = purge_text((note or "").strip()[:REASON_MAX], texts, marker)
        request.save()
        close_moot_conflicts(entries, actor=actor, now=now, except_id=0, went=f"forgotten (request #{request.pk})")
        _dismiss_proposals(entries, request, actor, now)
        # Skills made of them follow: withdrawn, their text purged, out of every published version.
        withdrawn = withdraw_skills_made_of(
            [e.pk for e in entries], request_id=request.pk, marker=marker, texts=texts, actor=actor, at=now
        )
        version = _publish_without(entries, request, actor, now)
        if version is not None:
            ForgetRequest.objects.filter(pk=request.pk).update(published_version=version.number)
            request.published_version = version.number
        purged = {
            **_purge(request, [e.pk for e in entries], texts, ticked, actor=actor, now=now),
            "skills_withdrawn": withdrawn,
        }
        Tombstone.objects.bulk_create(stones)
        record_event(
            request,
            actor=actor,
            action=EventAction.FORGET_APPROVED,
            reason=request.decision_note,
            at=now,
            before={"state": ForgetRequest.State.OPEN},
            after={
                "state": request.state,
                "forgotten": request.forgotten_ids,
                "published_version": request.published_version,
                "left_matching": [e.pk for e in left],
            },
        )
        record_event(
            request,
            actor=actor,
            action=EventAction.FORGET_PURGE,
            at=now,
            reason=f"text of {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} replaced by {marker}",
            after=purged,
        )
        receipt = issue_receipt(request, tokens, entries, actor=actor, at=now)
    return ForgetOutcome(request, entries, version, sum(purged.values()), receipt)


def _dismiss_proposals(entries: list[Entry], request: ForgetRequest, actor, now) -> None:
    """Open consolidation proposals made of a forgotten entry have nothing left to decide: dismissed, each
    with its Event."""
    proposals = list(
        ConsolidationProposal.objects.select_for_update()
        .filter(
            state=ConsolidationProposal.State.OPEN,
            pk__in=ConsolidationProposal.objects.filter(entries__in=entries).values("pk"),
        )
        .order_by("id")
    )
    for proposal in proposals:
        proposal.state, proposal.decided_by, proposal.decided_at = ConsolidationProposal.State.DISMISSED, actor, now
        proposal.decision_note = f"an entry of it was forgotten (forget request #{request.pk})"
        proposal.save(update_fields=["state", "decided_by", "decided_at", "decision_note"])
        record_event(
            proposal,
            actor=actor,
            action=EventAction.CONSOLIDATION_DISMISSED,
            at=now,
            reason=proposal.decision_note,
            before={"state": ConsolidationProposal.State.OPEN},
            after={"state": proposal.state},
        )


# --- the purge ------------------------------------------------------------------------------------------
#
# Exactly the forgotten text, nowhere else: the forgotten entries' own rows (their text whole), the rows
# made of them (their conflicts and proposals, by the keys that hold text; skills are withdrawn by
# services.skills), the request's own, and
# the rows the lead ticked as quoting it (the quoted text replaced there). No search at purge time, and no
# replacement inside a scope, a slug, a condition or a summary the lead did not tick.


def _purge(
    request: ForgetRequest, ids: list[int], texts: list[str], ticked: dict[str, list[str]], *, actor, now
) -> dict:
    """Replace the forgotten text by the marker where it is stored; answers how many rows, per place."""
    marker = request.marker
    tests = _correction_tests(ids)
    counts = {"history": _purge_history(request, ids, texts, ticked, tests)}
    # Every stored version: the text goes, and the rows close where they start, so that no version holds
    # them any more and a rollback to a version before the forget cannot serve the marker as a lesson.
    # Cached answers of every version may hold them: none is served once this commits.
    transaction.on_commit(forget_cached_answers)
    fence_replica_reads()  # and no replica serves them before it has replayed this
    counts["released_rows"] = ReleasedEntry.objects.filter(entry_id__in=ids).update(
        trigger=marker,
        content=marker,
        fingerprint=fingerprint(marker, marker),  # as the entry's row has it (services.entry_writes.write_entry)
        boundary="",
        conditions=[],
        embedding=None,
        valid_to=F("valid_from"),
    )
    returned_it = Retrieval.objects.filter(
        pk__in=RetrievedEntry.objects.filter(entry_id__in=ids).values("retrieval_id")
    )
    counts["retrievals"] = returned_it.exclude(query="").update(query=marker) + _purge_rows(
        Retrieval.objects.filter(pk__in=ticked.get("retrieval", [])), ("query", "task_ref"), texts, marker
    )
    counts["proposals"] = _purge_proposals(ids, texts, marker)
    counts["memory_tests"] = MemoryTest.objects.filter(pk__in=tests).update(query=marker)
    counts["memory_tests_retired"] = retire_corrections_of_forgotten(
        tests, actor=actor, reason=f"its correction was forgotten (request #{request.pk})", at=now
    )
    counts["versions"] = _purge_versions(ids, ticked.get("version", []), texts, marker)
    conflicts = Conflict.objects.filter(Q(entry_a_id__in=ids) | Q(entry_b_id__in=ids)).exclude(reason="")
    counts["conflicts"] = conflicts.exclude(reason=marker).update(reason=marker)  # it quotes the forgotten side
    counts["requests"] = _purge_rows(
        ForgetRequest.objects.filter(pk__in=ticked.get("request", [])), ("reason",), texts, marker
    )
    return counts


def _correction_tests(ids: list[int]) -> list[int]:
    """The memory tests a person's correction brought (services.memory_tests.create_correction_test) whose
    correction is a forgotten entry: asked with its trigger, so made of it. Named by their link to what the
    correction corrects and their "outranks" expectation, in the forgotten entries' scopes (a test is asked at
    its correction's); never searched for by text."""
    wanted = set(ids)
    tests = MemoryTest.objects.filter(
        corrects__isnull=False, scope__in=Entry.objects.filter(pk__in=ids).values("scope")
    ).only("expectations")
    return [
        test.pk
        for test in tests
        if any(x.get("kind") == memory_tests.OUTRANKS and x.get("entry") in wanted for x in test.expectations)
    ]


def _purge_proposals(ids: list[int], texts: list[str], marker: str) -> int:
    """A consolidation proposal made of a forgotten entry: its merged text is made of the forgotten one, so
    all of it goes (its keywords too, which may be shorter than what is searched for inside texts)."""
    proposals = list(ConsolidationProposal.objects.filter(entries__in=ids).distinct())
    for p in proposals:
        ConsolidationProposal.objects.filter(pk=p.pk).update(
            **{name: marker if getattr(p, name) else "" for name in PROPOSAL_TEXTS},
            proposed_conditions=[],
            reason=purge_text(p.reason, texts, marker),
            decision_note=purge_text(p.decision_note, texts, marker),
        )
    return len(proposals)


def _purge_versions(ids: list[int], ticked: list[str], texts: list[str], marker: str) -> int:
    """The warnings a publisher acknowledged about a forgotten entry (by its id), and the ticked summaries."""
    changed = 0
    id_set = set(ids)
    for version in MemoryVersion.objects.exclude(acknowledged=[]):  # versions are few
        changed += _update_if_changed(version, {"acknowledged": purge_warnings(version.acknowledged, id_set, marker)})
    return changed + _purge_rows(MemoryVersion.objects.filter(pk__in=ticked), ("summary",), texts, marker)


def _purge_rows(rows, fields, texts: list[str], marker: str) -> int:
    """Rows made of or quoting the forgotten lesson (few; a ticked quote): the quoted texts replaced where
    they occur in `fields`, nothing else."""
    return sum(
        _update_if_changed(row, {f: purge_value(getattr(row, f), texts, marker) for f in fields}) for row in rows
    )


def _update_if_changed(row, values: dict) -> int:
    """Write `values` to `row` when they differ from what it holds (1), else nothing (0). Not for Events:
    their one rewrite is events.rewrite_purged_text."""
    if all(values[f] == getattr(row, f) for f in values):
        return 0
    type(row).objects.filter(pk=row.pk).update(**values)
    return 1


def _related_events_q(request: ForgetRequest, ids: list[int]) -> Q:
    """The Events about what the forgotten entries made: their conflicts and consolidation proposals (a
    skill's own Events are purged by its withdrawal, services.skills.withdraw_skills_made_of)."""
    return Q(conflict__in=Conflict.objects.filter(Q(entry_a_id__in=ids) | Q(entry_b_id__in=ids))) | Q(
        proposal__in=ConsolidationProposal.objects.filter(entries__in=ids)
    )


def _copied_evidence(ids: list[int]) -> list[int]:
    """The evidence rows merges copied from the forgotten entries' evidence onto other entries, named by their
    `copied_from` link (a copy of a copy names the copy), never searched: one query per generation of copies."""
    copies, sources = [], list(Evidence.objects.filter(entry_id__in=ids).values_list("pk", flat=True))
    while sources:
        sources = list(
            Evidence.objects.filter(copied_from_id__in=sources).exclude(entry_id__in=ids).values_list("pk", flat=True)
        )
        copies += sources
    return copies


def _purge_history(
    request: ForgetRequest, ids: list[int], texts: list[str], ticked: dict[str, list[str]], tests: list[int]
) -> int:
    """Events and evidence: on PostgreSQL the one function the append-only trigger lets through, which
    does what this does elsewhere (forgetting.purge_keys is its rule). `tests`: the correction tests made of
    the forgotten entries, whose Events quote their query."""
    quoting_events = [int(pk) for pk in ticked.get("event", [])]
    quoting_events += Event.objects.filter(memory_test__in=tests).values_list("pk", flat=True) if tests else []
    quoting_evidence = [int(pk) for pk in ticked.get("evidence", [])]
    if copies := _copied_evidence(ids):
        # The forgotten entries' evidence copied by a merge onto another entry: its texts (the excerpt is
        # among the lesson's texts, the task reference is copied as it was) go there as in a ticked row.
        quoting_evidence += copies
        task_refs = Evidence.objects.filter(entry_id__in=ids).exclude(task_ref="").values_list("task_ref", flat=True)
        texts = quoted_texts([*texts, *task_refs])
    # Another request's reason quoting the lesson is also in that request's own filing Event, and a ticked
    # piece of evidence in the Event that recorded it.
    recorded = Q(forget_request_id__in=ticked.get("request", []), action=EventAction.FORGET_FILED)
    if quoting_evidence:
        recorded |= Q(action=EventAction.ADD_EVIDENCE, after__evidence_id__in=quoting_evidence)
    quoting_events += list(Event.objects.filter(recorded).values_list("pk", flat=True))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT curation_forget_purge(%s, %s, %s, %s)", [request.pk, texts, quoting_events, quoting_evidence]
            )
            return cursor.fetchone()[0]
    marker = request.marker
    changed = 0
    for piece in Evidence.objects.filter(entry_id__in=ids):
        changed += _update_if_changed(piece, {f: marker if getattr(piece, f) else "" for f in ("excerpt", "task_ref")})
    changed += _purge_rows(Evidence.objects.filter(pk__in=quoting_evidence), ("excerpt", "task_ref"), texts, marker)
    own = Q(entry_id__in=ids)
    every_key, every_list = (*ENTRY_TEXT_KEYS, *DERIVED_TEXT_KEYS), (*ENTRY_TEXT_LISTS, *DERIVED_TEXT_LISTS)
    for event in Event.objects.filter(
        own | Q(forget_request=request) | _related_events_q(request, ids) | Q(pk__in=quoting_events)
    ).distinct():
        if event.entry_id in ids:
            values = dict(
                before=purge_keys(event.before, ENTRY_TEXT_KEYS, ENTRY_TEXT_LISTS, marker),
                after=purge_keys(event.after, ENTRY_TEXT_KEYS, ENTRY_TEXT_LISTS, marker),
                reason=marker if event.reason else "",
                entry_label=f"#{event.entry_id} {marker}",
            )
        elif event.pk in quoting_events:  # the quoted text only, wherever it is in the Event
            values = dict(
                before=purge_value(event.before, texts, marker),
                after=purge_value(event.after, texts, marker),
                reason=purge_text(event.reason, texts, marker),
                entry_label=event.entry_label,
            )
        else:  # the request's own, or about a conflict or proposal of the forgotten entries: what was made
            # of them goes; another entry's own snapshot beside it stays
            keys, lists = (every_key, every_list) if event.entry_id is None else (DERIVED_TEXT_KEYS, DERIVED_TEXT_LISTS)
            values = dict(
                before=purge_keys(event.before, keys, lists, marker),
                after=purge_keys(event.after, keys, lists, marker),
                reason=marker if event.reason else "",
                entry_label=event.entry_label,
            )
        if any(values[f] != getattr(event, f) for f in values):
            rewrite_purged_text(event, **values)
            changed += 1
    return changed


__all__ = [
    "Forgotten",
    "ForgetOutcome",
    "approve_forget_request",
    "decline_forget_request",
    "file_forget_request",
    "forgotten_marker",
]
