"""An upload too large to import within a request runs as a worker's job: first its dry run, then, when the
lead confirms, the import, each an ImportJob row the page polls (state, lessons done of the total, the report
so far). A job delivered twice (a worker lost mid-run) runs the import again, which skips what landed."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

from curation.models import ImportJob
from curation.rules import access, clock
from curation.rules.memory_import import read
from curation.rules.permissions import IMPORT_MEMORY

from .import_uploads import UploadGone, discard_upload, staged_upload
from .imports import BATCH_SIZE, SourceError, import_memory, upload_files

JOB_BATCH_SIZE = BATCH_SIZE  # lessons a batch: the page's progress moves one batch at a time


def may_import(actor, scope: str) -> bool:
    """The one check of who imports where: a lead (an active account with the role), into a scope of theirs."""
    return actor.is_active and actor.has_perm(IMPORT_MEMORY) and access.user_can_see_scope(actor, scope)


def start_job(*, actor, upload_id: str, name: str, format: str, scope: str, dry_run: bool) -> ImportJob:
    """A queued job (the caller hands it to a worker once this transaction commits)."""
    if not may_import(actor, scope):
        raise PermissionDenied("Only leads import memory, into their own scopes.")
    return ImportJob.objects.create(
        upload_id=upload_id, name=name[:255], format=format, scope=scope, dry_run=dry_run, created_by=actor
    )


def job_for(actor, job_id: int) -> ImportJob:
    """The job, for the lead who started it; ImportJob.DoesNotExist for anyone else."""
    return ImportJob.objects.get(pk=job_id, created_by=actor)


def run_job(job_id: int) -> ImportJob:
    job = ImportJob.objects.select_related("created_by").get(pk=job_id)
    if job.state in (ImportJob.State.DONE, ImportJob.State.FAILED):
        return job
    # Asked again when the worker runs it: the role or the scope may have been taken away since the lead
    # confirmed it, and an import runs with the authority of the lead who is still one.
    if not may_import(job.created_by, job.scope):
        discard_upload(job.upload_id)
        who = job.created_by.get_username()
        return _finish(
            job,
            state=ImportJob.State.FAILED,
            error=f"Refused when the worker ran it: {who} no longer imports memory into {job.scope} (the lead "
            "role or that scope was taken away after the job was confirmed). Nothing was imported.",
        )
    ImportJob.objects.filter(pk=job.pk).update(state=ImportJob.State.RUNNING)
    try:
        reading = read(job.format, upload_files(job.name, staged_upload(job.upload_id)))
    except (SourceError, UploadGone) as exc:
        message = str(exc) if isinstance(exc, SourceError) else "The upload is gone: upload it again."
        return _finish(job, state=ImportJob.State.FAILED, error=message)
    ImportJob.objects.filter(pk=job.pk).update(total=len(reading.lessons) + len(reading.unreadable))

    def progress(report) -> None:
        # Outside the batches' transactions: the page sees each batch as it lands.
        ImportJob.objects.filter(pk=job.pk).update(done=report.done, total=report.total, rows=report.rows())

    report = import_memory(
        reading,
        prefix=job.scope,
        label=f"import:{job.format} by {job.created_by.get_username()}"[:150],
        dry_run=job.dry_run,
        batch_size=JOB_BATCH_SIZE,
        # A dry run is one transaction rolled back: its progress would be rolled back with it.
        progress=None if job.dry_run else progress,
    )
    if not job.dry_run:
        discard_upload(job.upload_id)
    job.done, job.total = report.done, report.total
    return _finish(job, state=ImportJob.State.DONE, rows=report.rows())


def _finish(job: ImportJob, *, state: str, rows=None, error: str = "") -> ImportJob:
    job.state, job.error, job.finished_at = state, error, clock.now()
    if rows is not None:
        job.rows = rows
    job.save(update_fields=["state", "error", "finished_at", "rows", "done", "total"])
    return job
