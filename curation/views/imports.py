"""A lead's upload page: a file or a zip of another tool's memory, its format chosen from the list and a scope
within the lead's, a dry-run preview of what would be added, merged, held, refused or skipped, then the import
itself on confirmation. Both run the import service (the agents' ingest, every check); role and scope are
checked on the server at each step."""

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from kombu.exceptions import OperationalError as BrokerOperationalError

from curation.models import ImportJob

from curation.rules import access
from curation.rules.memory_import import FORMATS, read
from curation.rules.permissions import IMPORT_MEMORY, require
from curation.selectors.forgets import ForgetInProgress
from curation.services.import_uploads import (
    UPLOAD_MAX_BYTES,
    UploadGone,
    discard_upload,
    stage_upload,
    staged_upload,
)
from curation.services.import_jobs import job_for, start_job
from curation.services.imports import SourceError, import_memory, upload_files
from curation.tasks import run_import_job

SESSION_KEY = "import_upload"
INLINE_LESSONS_MAX = 500  # one batch: imported within the request; a larger source is a worker's job

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
        "inline_max": INLINE_LESSONS_MAX,
        **extra,
    }


def _checked_scope(request, value: str) -> str:
    """The scope typed, cleaned; ValidationError unless it lies within the lead's scopes."""
    scope = access.clean_scope((value or "").rstrip("/"))
    if not access.user_can_see_scope(request.user, scope):
        raise ValidationError(f"{scope} is outside your scopes ({access.reach_of(request.user)}).")
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
    if len(reading.lessons) > INLINE_LESSONS_MAX:
        job = start_job(
            actor=request.user,
            upload_id=stage_upload(data),
            name=uploaded.name,
            format=form["format"],
            scope=scope,
            dry_run=True,
        )
        return _enqueue(request, job)
    try:
        report = import_memory(reading, prefix=scope, label=_label(request, form["format"]), dry_run=True)
    except ForgetInProgress as busy:  # the dry run looked at the tombstones while a forget's approval was written
        return render(
            request, "curation/imports.html", _form_context(request, form=form, problem=str(busy)), status=409
        )
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
    try:
        report = import_memory(reading, prefix=scope, label=_label(request, staged["format"]))
    except ForgetInProgress:
        # A batch refused while a forget's approval was written (the ingest waits for one and tries once more,
        # and a second approval began): the batches before it are imported; the same file again skips them.
        discard_upload(staged["id"])
        problem = (
            "A forget request is being approved at this moment: the import stopped. What it imported before is "
            "kept; upload the same file again in a few seconds for the rest (what was imported is skipped)."
        )
        return render(request, "curation/imports.html", _form_context(request, problem=problem), status=409)
    discard_upload(staged["id"])
    return render(request, "curation/imports.html", _form_context(request, result=report, upload=staged))


def _enqueue(request, job: ImportJob):
    """Hand the (committed) job to a worker, and show its page, which polls its progress."""
    try:
        run_import_job.apply_async(args=[job.pk])
    except BrokerOperationalError:
        ImportJob.objects.filter(pk=job.pk).update(
            state=ImportJob.State.FAILED, error="The task queue could not be reached: try again in a minute."
        )
    return redirect("curation:import-job", job_id=job.pk)


def _job(request, job_id: int) -> ImportJob:
    try:
        return job_for(request.user, job_id)
    except ImportJob.DoesNotExist:
        raise Http404("No such import of yours.") from None


@require_http_methods(["GET", "POST"])
@require(IMPORT_MEMORY, "Only leads import memory.")
def job_page(request, job_id: int):
    """A job's page: its progress while it runs; a finished dry run's report with Import now and Cancel."""
    job = _job(request, job_id)
    if request.method == "POST":
        action = request.POST.get("action")
        if not job.dry_run or job.state != ImportJob.State.DONE or action not in ("import", "cancel"):
            return render(
                request,
                "curation/imports.html",
                _form_context(request, job=job, problem="Only a finished dry run is imported or cancelled."),
                status=400,
            )
        if ImportJob.objects.filter(upload_id=job.upload_id, dry_run=False).exists():
            real = ImportJob.objects.filter(upload_id=job.upload_id, dry_run=False).first()
            return redirect("curation:import-job", job_id=real.pk)  # confirmed already: show that import
        if action == "cancel":
            discard_upload(job.upload_id)
            return render(
                request, "curation/imports.html", _form_context(request, notice="Cancelled: nothing was imported.")
            )
        try:
            real = start_job(
                actor=request.user,
                upload_id=job.upload_id,
                name=job.name,
                format=job.format,
                scope=_checked_scope(request, job.scope),
                dry_run=False,
            )
        except ValidationError as exc:
            return render(
                request, "curation/imports.html", _form_context(request, problem=" ".join(exc.messages)), status=400
            )
        return _enqueue(request, real)
    return render(request, "curation/imports.html", _form_context(request, job=job))


@require_GET
@require(IMPORT_MEMORY, "Only leads import memory.")
def job_progress(request, job_id: int):
    """The job's progress block, polled by its page until the job has finished."""
    return render(request, "curation/partials/import_job.html", {"job": _job(request, job_id)})
