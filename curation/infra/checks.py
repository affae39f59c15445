"""System checks of the deployment (`manage.py check --deploy`), beside Django's own."""

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def secret_key_is_shared(app_configs, **kwargs):
    if getattr(settings, "SECRET_KEY_FROM_FILE", False):
        return [
            Warning(
                "SECRET_KEY is not set: a key was made in the data folder on first start.",
                hint="Set SECRET_KEY in the environment, the same for the web server and the workers, so that "
                "replacing a container keeps every session valid.",
                id="memoryadmin.W001",
            )
        ]
    return []
