"""The console's roles (reviewer, lead, auditor) as groups with permissions.

Made by the data migration 0002_roles, and made again after every migrate or flush (post_migrate),
so a database emptied by a test flush or a restore still has its roles."""

ROLES = {
    "reviewer": ["view_entry", "review_entry", "export_history"],
    "lead": [
        "view_entry",
        "review_entry",
        "export_history",
        "promote_skill",
        "publish_memory",
        "handle_forget",
        "view_agenttoken",
        "add_agenttoken",
        "change_agenttoken",
    ],
    "auditor": ["view_entry", "export_history"],
}


def ensure_roles(apps) -> None:
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="curation", codename__in=codenames))


def ensure_roles_after_migrate(sender, apps=None, **kwargs) -> None:
    from django.apps import apps as global_apps

    ensure_roles(apps or global_apps)  # flush sends post_migrate without the migration state
