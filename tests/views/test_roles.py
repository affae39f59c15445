"""Roles are written once: the permission constants of curation.rules.permissions, asked by views through
`require` and by templates through `can`; who sees Maintenance is one decision for the link and the page."""

import re
from pathlib import Path

import pytest

from curation.rules.permissions import can_view_maintenance
from curation.roles import ROLES
from tests.factories import client_for, make_user

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
@pytest.mark.parametrize("role", [*ROLES, None])
def test_the_maintenance_link_and_page_agree_for_every_role(role):
    user = make_user(f"user-{role}", role)
    client = client_for(user)
    shown = 'href="/maintenance/"' in client.get("/skills/").content.decode()
    if role is None:
        shown = False  # a user without a role reads no page at all
    assert shown == can_view_maintenance(user) == (client.get("/maintenance/").status_code == 200)
    assert can_view_maintenance(user) == (role in ("lead", "auditor"))


def test_no_permission_string_outside_the_permissions_module():
    codenames = {codename for codenames in ROLES.values() for codename in codenames}
    pattern = re.compile(r"curation\.(%s)\b" % "|".join(sorted(codenames)))
    places = [
        *ROOT.glob("curation/views/*.py"),
        *ROOT.glob("curation/api/*.py"),
        *ROOT.glob("curation/services/*.py"),
        *ROOT.glob("curation/sweeps/*.py"),
        *ROOT.glob("curation/selectors/*.py"),
        *ROOT.glob("templates/**/*.html"),
    ]
    assert places
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in places for m in pattern.finditer(p.read_text())]
    assert found == []
