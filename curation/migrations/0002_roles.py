"""The three console roles as groups with their permissions (DESIGN.md §1)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = {
    "reviewer": ["view_entry", "review_entry", "export_history"],
    "lead": ["view_entry", "review_entry", "export_history", "promote_skill", "publish_memory", "handle_forget"],
    "auditor": ["view_entry", "export_history"],
}


def create_roles(apps, schema_editor):
    # Permissions are normally made after all migrations; make them now so the groups can hold them.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="curation", codename__in=codenames))


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
