"""The three console roles as groups with their permissions (curation/roles.py)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from curation.roles import ensure_roles


def create_roles(apps, schema_editor):
    # Permissions are normally made after all migrations; make them now so the groups can hold them.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
