from django.apps import AppConfig
from django.db.models.signals import post_migrate

from curation import checks  # noqa: F401 (registers the deployment checks)
from curation.db_roles import grant_after_migrate
from curation.log_redaction import redact_every_log_record


class CurationConfig(AppConfig):
    name = "curation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        redact_every_log_record()
        from curation.roles import ensure_roles_after_migrate

        # After auth's own post_migrate handler has made the permissions.
        post_migrate.connect(ensure_roles_after_migrate, sender=self, dispatch_uid="curation-roles")
        post_migrate.connect(grant_after_migrate, sender=self, dispatch_uid="curation-app-db-role")
