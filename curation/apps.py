from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate

from curation.infra import checks  # noqa: F401 (registers the deployment checks
from curation.rules import config
from curation.infra.db_roles import grant_after_migrate
from curation.infra.log_redaction import redact_every_log_record


class CurationConfig(AppConfig):
    name = "curation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        redact_every_log_record()
        from curation.models import EventAction
        from curation.roles import ensure_roles_after_migrate
        from curation.sweeps.registry import beat_schedule

        # Every process (web, worker, beat, a command) stops here on a setting it could not use, naming it,
        # rather than failing on the first request or sweep that reads it.
        config.validate(event_actions=EventAction.values)
        # Each sweep's schedule is declared in its registry entry; the settings cannot import the registry.
        settings.CELERY_BEAT_SCHEDULE.update(beat_schedule())
        # After auth's own post_migrate handler has made the permissions.
        post_migrate.connect(ensure_roles_after_migrate, sender=self, dispatch_uid="curation-roles")
        post_migrate.connect(grant_after_migrate, sender=self, dispatch_uid="curation-app-db-role")
