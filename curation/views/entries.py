"""The entry page: everything about one entry and its timeline, readable by every role."""

from django.contrib import messages
from django.core.exceptions import BadRequest, ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from curation import selectors, services
from curation.models import Entry, Evidence, Signal
from curation.rules.permissions import EXPORT, READ, REVIEW, require
from curation.rules.trust import Source
from curation.selectors import skills as skill_reads
from curation.selectors.trust import trust_why


def _entry_or_404(request, entry_id) -> Entry:
    try:
        return selectors.visible_entry(request.user, entry_id)
    except Entry.DoesNotExist:
        raise Http404("No such entry in your scopes.") from None


def _shown_version(request, entry) -> tuple[int, dict] | None:
    """The version `?version=N` asks the page to show, rebuilt from the Events; a 400 for a number that is
    not one, a 404 for a version no write made."""
    asked = request.GET.get("version")
    if asked is None:
        return None
    if not asked.isdigit():
        raise BadRequest("The version is a whole number.")
    state = selectors.entry_version(request.user, entry, int(asked))
    if state is None:
        raise Http404(f"Entry #{entry.pk} has no version {asked}.")
    return int(asked), state


def _render_detail(request, entry, *, status=200, evidence_errors=None, evidence_form=None):
    older, newer = selectors.supersedes_chain(request.user, entry)
    shown = _shown_version(request, entry) if status == 200 else None
    return render(
        request,
        "curation/entry.html",
        {
            "entry": entry,
            "timeline": selectors.entry_page_timeline(
                request.user, entry, show_all=request.GET.get("timeline") == "all"
            ),
            "older": older,
            "newer": newer,
            "shown_version": shown,
            "skill_sources": skill_reads.skills_of_entry(request.user, entry),
            "evidence_kinds": Evidence.EvidenceKind.choices,
            "signals": Signal.choices,
            # A person's own piece is a person's: supporting, it confirms a lesson another source wrote.
            "sources": [
                (Source.PERSON, "my own check or decision"),
                *((v, label) for v, label in Source.choices if v not in (Source.PERSON, Source.OWN)),
            ],
            "trust_why": trust_why(entry),
            "evidence_errors": evidence_errors or {},
            "evidence_form": evidence_form or {},
        },
        status=status,
    )


@require_GET
@require(READ)
def detail(request, entry_id):
    return _render_detail(request, _entry_or_404(request, entry_id))


@require_GET
@never_cache  # a full history, for its reader only
@require(EXPORT)
def history_json(request, entry_id):
    entry = _entry_or_404(request, entry_id)
    response = JsonResponse(selectors.entry_history(request.user, entry), json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'attachment; filename="entry-{entry.pk}-history.json"'
    return response


@require_POST
@require(REVIEW)
def add_evidence_view(request, entry_id):
    entry = _entry_or_404(request, entry_id)
    data = {f: request.POST.get(f, "") for f in ("kind", "signal", "source", "polarity", "excerpt", "task_ref")}
    try:
        services.add_evidence(entry.pk, data=data, actor=request.user)
    except ValidationError as exc:
        return _render_detail(request, entry, status=422, evidence_errors=exc.message_dict, evidence_form=data)
    except Entry.DoesNotExist:
        raise Http404("No such entry in your scopes.") from None
    messages.success(request, "Evidence added.")
    return redirect("curation:entry", entry_id=entry.pk)
