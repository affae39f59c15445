"""Releases: what publishing would change (grouped by scope, field by field, with the Event that caused
each change), the pre-publish checks, publishing with their acknowledgement, the history with rollback,
the diff of two versions (page and JSON), and the preview of what an agent would receive. Everyone who
reads the console reads these; only leads publish and roll back."""

from __future__ import annotations

import io
import zipfile

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from curation import selectors
from curation.rules import access, config
from curation.rules.context_block import build_context
from curation.models import MemoryVersion
from curation.rules.permissions import PUBLISH, READ, require
from curation.selectors import memory_tests as test_reads
from curation.selectors import releases as reads
from curation.selectors.forgets import ForgetInProgress
from curation.services.releases import (
    OutsideScopes,
    UnacknowledgedWarnings,
    memory_tests_on_draft,
    publish_version,
    rollback_version,
)
from curation.rules.versions import change_counts, summary_for


def _prefix(request, source) -> str:
    raw = source.get("scope", "").rstrip("/")
    if not raw.strip():
        return ""
    try:
        return access.clean_scope(raw)
    except ValidationError as exc:
        raise _BadInput({"scope": exc.messages}) from None


class _BadInput(Exception):
    def __init__(self, errors):
        self.errors = errors


def _page(request, *, prefix="", form=None, errors=None, warnings_refused=(), status=200):
    changes = reads.pending_changes(prefix, user=request.user)
    tests = [
        r for r in memory_tests_on_draft(scope_prefix=prefix) if access.user_can_see_scope(request.user, r.test.scope)
    ]
    warnings = reads.pre_publish_checks(changes, kept_under=prefix, user=request.user) + [
        test_reads.as_warning(r) for r in tests if not r.passed
    ]
    history = reads.version_history(request.user)
    tested = test_reads.results_per_version(history, request.user)
    for version in history:
        version.memory_tests = tested.get(version.pk)
    return render(
        request,
        "curation/releases.html",
        {
            "published": reads.published_version(),
            "prefix": prefix,
            "groups": reads.group_by_scope(changes[: reads.PENDING_SHOWN]),
            "shown": min(len(changes), reads.PENDING_SHOWN),
            "counts": change_counts(changes),
            "total": len(changes),
            "warnings": warnings,
            "blocking": [w for w in warnings if w.blocking],
            "acknowledgeable": [w for w in warnings if not w.blocking],
            "refused": bool(warnings_refused),
            "history": history,
            "memory_tests": tests,
            "form": form or {},
            "errors": errors or {},
            "filter_errors": {k: v for k, v in (errors or {}).items() if k == "scope"},
        },
        status=status,
    )


@require_GET
@require(READ)
def releases(request):
    try:
        prefix = _prefix(request, request.GET)
    except _BadInput as bad:
        return _page(request, errors=bad.errors, status=422)
    return _page(request, prefix=prefix)


@require_POST
@require(PUBLISH, "Only a lead may publish a memory version.")
def publish(request):
    form = {k: request.POST.get(k, "") for k in ("scope", "summary")}
    try:
        prefix = _prefix(request, request.POST)
        version = publish_version(
            actor=request.user,
            summary=form["summary"],
            scope_prefix=prefix,
            acknowledge=request.POST.get("acknowledge") == "yes",
        )
    except _BadInput as bad:
        return _page(request, form=form, errors=bad.errors, status=422)
    except ForgetInProgress as busy:  # nothing published: the same click goes through once the approval is written
        return _page(request, prefix=form["scope"].strip(), form=form, errors={"forgotten": [str(busy)]}, status=409)
    except UnacknowledgedWarnings as refused:
        return _page(
            request,
            prefix=form["scope"].strip(),
            form=form,
            warnings_refused=refused.warnings,
            errors={"acknowledge": [str(refused)]},
            status=422,
        )
    except ValidationError as exc:
        return _page(request, prefix=form["scope"].strip(), form=form, errors=exc.message_dict, status=422)
    except OutsideScopes as exc:
        raise PermissionDenied(str(exc)) from None
    messages.success(
        request,
        f"Published version {version.number}: {version.added} added, {version.changed} "
        f"changed, {version.removed} removed. Agents read it now.",
    )
    return redirect("curation:releases")


@require_POST
@require(PUBLISH, "Only a lead may roll back a memory version.")
def rollback(request, number):
    try:
        version = rollback_version(number, actor=request.user, reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(m for ms in exc.message_dict.values() for m in ms))
        return redirect("curation:releases")
    except OutsideScopes as exc:
        raise PermissionDenied(str(exc)) from None
    messages.success(
        request,
        f"Version {version.number} is the published one again; the live rows are unchanged "
        "and what it took away is pending below.",
    )
    return redirect("curation:releases")


def _versions(request) -> tuple[MemoryVersion, MemoryVersion]:
    try:
        a, b = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
        return reads.version_by_number(a), reads.version_by_number(b)
    except (ValueError, MemoryVersion.DoesNotExist):
        raise Http404("Give two published version numbers: ?a=N&b=M.") from None


@require_GET
@require(READ)
def diff(request):
    a, b = _versions(request)
    prefixes = access.user_scope_prefixes(request.user)
    changes = reads.version_diff(a.number, b.number, prefixes=prefixes)
    for v in (a, b):
        v.shown_summary = summary_for(v.scope_prefix, v.summary, prefixes)
    return render(
        request,
        "curation/release_diff.html",
        {
            "a": a,
            "b": b,
            "groups": reads.group_by_scope(changes),
            "counts": change_counts(changes),
            "history": reads.version_history(request.user),
        },
    )


@require_GET
@require(READ)
def diff_json(request):
    a, b = _versions(request)
    changes = reads.version_diff(a.number, b.number, prefixes=access.user_scope_prefixes(request.user))
    return JsonResponse(
        {"from": a.number, "to": b.number, **change_counts(changes), "changes": [reads.change_json(c) for c in changes]}
    )


@require_GET
@require(READ)
def preview(request):
    """What an agent would receive: a scope, a query, k, a context budget and a version (published, an
    earlier one, or the pending draft)."""
    max_k = config.API_RETRIEVE_MAX_K.value
    form = {
        "scope": request.GET.get("scope", ""),
        "q": request.GET.get("q", "")[:2000],
        "k": request.GET.get("k", str(config.RETRIEVE_LIMIT.value)),
        "budget": request.GET.get("budget", "2000"),
        "version": request.GET.get("version", "published"),
    }
    context = {"form": form, "history": reads.version_history(request.user), "errors": {}, "result": None}
    if not form["scope"].strip():
        return render(request, "curation/preview.html", context)
    errors = {}
    try:
        scope = access.clean_scope(form["scope"])
    except ValidationError as exc:
        errors["scope"] = exc.messages
    if "scope" not in errors and not access.user_can_see_scope(request.user, scope):
        errors["scope"] = ["Not in your scopes."]
    try:
        k = int(form["k"])
        budget = int(form["budget"])
        if not (1 <= k <= max_k and 200 <= budget <= 50000):
            raise ValueError
    except ValueError:
        errors["k"] = [f"k from 1 to {max_k}, a budget from 200 to 50,000 characters."]
    number = None
    if form["version"] == "published":
        number = reads.published_number()
    elif form["version"] != "draft":
        try:
            number = reads.version_by_number(int(form["version"])).number
        except (ValueError, MemoryVersion.DoesNotExist):
            errors["version"] = ["published, draft, or the number of a version."]
    if errors:
        context["errors"] = context["filter_errors"] = errors
        return render(request, "curation/preview.html", context, status=422)
    scopes = access.scope_ancestors(scope)
    prefixes = access.user_scope_prefixes(request.user)
    if prefixes is not None:
        scopes = [s for s in scopes if access.covered_by_any(prefixes, s)]
    floor = config.RETRIEVE_AT_LEAST.value
    if number is None:
        ranked = selectors.retrieve_memory(scopes=scopes, q=form["q"], k=k, min_confidence=floor)
    else:
        ranked = reads.retrieve_released(number, scopes=scopes, q=form["q"], k=k, min_confidence=floor)
    included, block = build_context([r.entry for r in ranked], budget)
    scores = {r.entry.pk: r.score for r in ranked}
    context["result"] = {
        "version": number,
        "entries": [(e, scores[e.pk]) for e in included],
        "context": block,
        "draft": number is None,
    }
    return render(request, "curation/preview.html", context)


@require_GET
@require(READ)
def export_zip(request):
    """The export of the published version (or `?version=N`), in the user's scopes, as one zip."""
    try:
        version = (
            reads.version_by_number(int(request.GET["version"]))
            if request.GET.get("version")
            else reads.published_version()
        )
    except (ValueError, MemoryVersion.DoesNotExist):
        raise Http404("No such memory version.") from None
    if version is None:
        raise Http404("No memory version is published yet.")
    files = reads.export_of(version, prefixes=access.user_scope_prefixes(request.user))
    response = HttpResponse(zip_of(files), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="memory-v{version.number}.zip"'
    return response


def zip_of(files: dict[str, str]) -> bytes:
    """The files in a zip with fixed timestamps: the same version gives the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in sorted(files.items()):
            archive.writestr(zipfile.ZipInfo(path, date_time=(2000, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()
