"""Migration 0050 on a database where a person without scope grants read every scope: everyone with a role
and no grant is given the every-scope grant, so they read what they read before; people with grants keep
exactly theirs; someone with no role gets nothing. Back, and the grants are as they were."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0046_screened_evidence_and_skill_drafts")], [("curation", "0050_every_scope_is_a_grant")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def grants(apps):
    return sorted(apps.get_model("curation", "ScopeGrant").objects.values_list("user__username", "prefix"))


def test_people_with_a_role_and_no_grant_keep_every_scope_and_the_rest_keep_theirs():
    apps = migrate(BEFORE)
    User, Group = apps.get_model("auth", "User"), apps.get_model("auth", "Group")
    ScopeGrant = apps.get_model("curation", "ScopeGrant")
    for name, role, prefixes in [
        ("lena", "lead", []),
        ("aude", "auditor", []),
        ("bill", "lead", ["acme/billing-api"]),
        ("sam", "reviewer", ["acme/billing-api", "globex"]),
        ("nora", None, []),
    ]:
        user = User.objects.create(username=name)
        if role:
            user.groups.add(Group.objects.get(name=role))
        for prefix in prefixes:
            ScopeGrant.objects.create(user=user, prefix=prefix)
    before = grants(apps)

    apps = migrate(AFTER)
    assert grants(apps) == sorted([*before, ("lena", "*"), ("aude", "*")])

    apps = migrate(BEFORE)
    assert grants(apps) == before
