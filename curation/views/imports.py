"""A lead's upload page: a file or a zip of another tool's memory, its format chosen from the list and a scope
within the lead's, a dry-run preview of what would be added, merged, held, refused or skipped, then the import
itself on confirmation. Both run the import service (the agents' ingest, every check); role and scope are
checked on the server at each step."""

from django.core.exceptions import ValidationError
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from curation.rules import access
from curation.rules.memory_import import FORMATS, read
from curation.rules.permissions import IMPORT_MEMORY, require
from curation.services.import_uploads import (
    UPLOAD_MAX_BYTES,
    UploadGone,
    discard_upload,
    stage_upload,
    staged_upload,
)
from curation.services.imports import SourceError, import_memory, upload_files

SESSION_KEY = "import_upload"
PAGE_LESSONS_MAX = 2_000  # what one request imports; a larger source goes through the command, in batches

FORMAT_LABELS = {
    "claude-code": "Claude Code (CLAUDE.md, .claude/rules, auto memory, .claude/skills)",
    "codex": "Codex (AGENTS.md, memories/)",
    "letta": "Letta MemFS (system/, skills/)",
    "skills": "Agent Skills (*/SKILL.md)",
    "markdown": "Markdown notes",
    "jsonl": "JSON Lines (one lesson a line)",
    "mem0": "Mem0 export (get_all JSON)",
}


def _form_context(request, **extra) -> dict:
    prefixes = access.user_scope_prefixes(request.user)
    return {
        "formats": [(name, FORMAT_LABELS.get(name, name)) for name in FORMATS],
        "prefixes": prefixes or [],
        "limit_mb": UPLOAD_MAX_BYTES // (1024 * 1024),
        "lessons_max": PAGE_LESSONS_MAX,
        **extra,
    }


def _checked_scope(request, value: str) -> str:
    """The scope typed, cleaned; ValidationError unless it lies within the lead's scopes."""
    scope = access.clean_scope((value or "").strip().rstrip("/"))
    if not access.user_can_see_scope(request.user, scope):
        raise ValidationError(
            f"{scope} is outside your scopes ({', '.join(access.user_scope_prefixes(request.user))})."
        )
    return scope


def _label(request, format: str) -> str:
    return f"import:{format} by {request.user.get_username()}"[:150]


@require_http_methods(["GET", "POST"])
@require(IMPORT_MEMORY, "Only leads import memory.")
def upload(request):
    if request.method == "GET":
        return render(request, "curation/imports.html", _form_context(request))
    action = request.POST.get("action")
    if action == "preview":
        return _preview(request)
    if action in ("import", "cancel"):
        return _confirm(request, action)
    return render(
        request, "curation/imports.html", _form_context(request, problem="Choose Preview or Import."), status=400
    )


def _preview(request):
    form = {"format": request.POST.get("format", ""), "scope": request.POST.get("scope", "")}
    errors = {}
    if form["format"] not in FORMATS:
        errors["format"] = f"Choose a format: {', '.join(FORMATS)}."
    try:
        scope = _checked_scope(request, form["scope"])
    except ValidationError as exc:
        errors["scope"] = " ".join(exc.messages)
    uploaded = request.FILES.get("file")
    if uploaded is None:
        errors["file"] = "Choose a file or a .zip to import."
    elif uploaded.size > UPLOAD_MAX_BYTES:
        errors["file"] = f"{uploaded.name} is larger than {UPLOAD_MAX_BYTES // (1024 * 1024)} MB."
    if errors:
        return render(request, "curation/imports.html", _form_context(request, form=form, errors=errors), status=400)
    data = uploaded.read()
    try:
        reading = read(form["format"], upload_files(uploaded.name, data))
    except SourceError as exc:
        return render(
            request, "curation/imports.html", _form_context(request, form=form, errors={"file": str(exc)}), status=400
        )
    if len(reading.lessons) > PAGE_LESSONS_MAX:
        problem = (
            f"{uploaded.name} holds {len(reading.lessons):,} lessons; this page imports up to {PAGE_LESSONS_MAX:,}. "
            f"Run: python manage.py import_memory {uploaded.name} --from {form['format']} --scope {scope}"
        )
        return render(
            request, "curation/imports.html", _form_context(request, form=form, errors={"file": problem}), status=400
        )
    report = import_memory(reading, prefix=scope, label=_label(request, form["format"]), dry_run=True)
    previous = request.session.get(SESSION_KEY)
    if previous:
        discard_upload(previous.get("id", ""))
    request.session[SESSION_KEY] = {
        "id": stage_upload(data),
        "name": uploaded.name,
        "format": form["format"],
        "scope": scope,
    }
    return render(
        request,
        "curation/imports.html",
        _form_context(request, form=form, preview=report, reading=reading, upload=request.session[SESSION_KEY]),
    )


def _confirm(request, action: str):
    staged = request.session.get(SESSION_KEY)
    if not staged or request.POST.get("upload") != staged.get("id"):
        problem = "There is no previewed upload to import (it was imported or cancelled): upload it again."
        return render(request, "curation/imports.html", _form_context(request, problem=problem), status=400)
    del request.session[SESSION_KEY]
    if action == "cancel":
        discard_upload(staged["id"])
        return render(
            request, "curation/imports.html", _form_context(request, notice="Cancelled: nothing was imported.")
        )
    try:
        scope = _checked_scope(request, staged["scope"])  # the lead's scopes may have changed since the preview
        data = staged_upload(staged["id"])
        reading = read(staged["format"], upload_files(staged["name"], data))
    except (ValidationError, UploadGone, SourceError) as exc:
        discard_upload(staged["id"])
        problem = " ".join(exc.messages) if isinstance(exc, ValidationError) else "The upload is gone: upload it again."
        return render(request, "curation/imports.html", _form_context(request, problem=problem), status=400)
    report = import_memory(reading, prefix=scope, label=_label(request, staged["format"]))
    discard_upload(staged["id"])
    return render(request, "curation/imports.html", _form_context(request, result=report, upload=staged))
