"""Every scope becomes a grant of its own. Until now a person without scope grants read every scope, so
taking away their last grant widened their reach to everything; from here on no grants means no scopes.
Everyone who has a role and no grant is given the every-scope grant, so an install keeps its behaviour."""

from django.db import migrations, models

import curation.rules.access

EVERY_SCOPE = "*"  # access.EVERY_SCOPE, as it is when this migration is written
ROLES = ("reviewer", "lead", "auditor")


def grant_every_scope_to_the_unrestricted(apps, schema_editor):
    User = apps.get_model("auth", "User")
    ScopeGrant = apps.get_model("curation", "ScopeGrant")
    unrestricted = User.objects.filter(groups__name__in=ROLES, scope_grants__isnull=True).distinct()
    ScopeGrant.objects.bulk_create(
        ScopeGrant(user_id=pk, prefix=EVERY_SCOPE) for pk in unrestricted.values_list("pk", flat=True)
    )


def take_back_every_scope_grants(apps, schema_editor):
    # Before this migration no grants meant every scope: removing these grants restores exactly that.
    apps.get_model("curation", "ScopeGrant").objects.filter(prefix=EVERY_SCOPE).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0048_partitioned_history"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AlterField(
            model_name="scopegrant",
            name="prefix",
            field=models.CharField(
                help_text="A scope prefix such as acme/billing-api (it and everything below it), or * for every scope.",
                max_length=255,
                validators=[curation.rules.access.clean_grant_prefix],
            ),
        ),
        migrations.RunPython(grant_every_scope_to_the_unrestricted, take_back_every_scope_grants),
    ]
