from django.apps import AppConfig
from django.db.models.signals import post_migrate

from curation.log_redaction import redact_every_log_record


class CurationConfig(AppConfig):
    name = "curation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        redact_every_log_record()
        from curation.roles import ensure_roles_after_migrate

        # After auth's own post_migrate handler has made the permissions.
        post_migrate.connect(ensure_roles_after_migrate, sender=self, dispatch_uid="curation-roles")
