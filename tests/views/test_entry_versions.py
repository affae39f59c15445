"""An entry's Events store what each write changed, and the entry page and history.json rebuild every
version from them."""

import json

from django.urls import reverse

from curation import services
from curation.models import Event
from tests.factories import client_for

FIRST = "Run the billing migrations with --lock-timeout 5s"
SECOND = "Run the billing migrations with --lock-timeout 5s, one service at a time"


def _edited(make_candidate, reviewer):
    entry = make_candidate(trigger="When a billing migration hangs on a lock", content=FIRST)
    services.edit_and_approve(
        entry.pk, actor=reviewer, expected_version=1, changes={"content": SECOND}, reason="one at a time"
    )
    return entry


def test_a_write_stores_what_it_changed_not_two_snapshots(reviewer, make_candidate):
    entry = _edited(make_candidate, reviewer)
    submit, approve = Event.objects.filter(entry=entry).order_by("entry_version", "id")
    assert submit.before is None and submit.after["content"] == FIRST and "version" not in submit.after
    assert approve.entry_version == 2
    assert (approve.before["content"], approve.after["content"]) == (FIRST, SECOND)
    assert (approve.before["status"], approve.after["status"]) == ("pending", "active")
    # Only what changed: the trigger, the scope and the kind stayed, so the Event does not carry them.
    assert not {"trigger", "scope", "kind", "version"} & (set(approve.before) | set(approve.after))


def test_the_entry_page_shows_any_version_rebuilt_from_the_changes(reviewer, auditor, make_candidate):
    entry = _edited(make_candidate, reviewer)
    client = client_for(auditor)
    url = reverse("curation:entry", args=[entry.pk])
    page = client.get(url).content.decode()
    assert 'href="?version=1#version"' in page and 'href="?version=2#version"' in page
    first = _version_fields(client.get(url, {"version": "1"}).content.decode())
    assert FIRST in first and SECOND not in first and '<dd class="status">pending</dd>' in first
    second = _version_fields(client.get(url, {"version": "2"}).content.decode())
    assert SECOND in second and '<dd class="status">active</dd>' in second


def _version_fields(page: str) -> str:
    """The fields of the version the page shows (not its timeline, which names both texts)."""
    assert "As version" in page
    return page.split('id="version-fields"')[1].split("</dl>")[0]


def test_a_version_that_is_not_a_number_or_was_never_written_is_refused(reviewer, auditor, make_candidate):
    entry = _edited(make_candidate, reviewer)
    client = client_for(auditor)
    url = reverse("curation:entry", args=[entry.pk])
    assert client.get(url, {"version": "two"}).status_code == 400
    assert client.get(url, {"version": "9"}).status_code == 404


def test_history_json_lists_every_version_and_each_events_version(reviewer, auditor, make_candidate):
    entry = _edited(make_candidate, reviewer)
    data = json.loads(client_for(auditor).get(reverse("curation:entry-history", args=[entry.pk])).content)
    assert [(v["version"], v["status"], v["content"]) for v in data["versions"]] == [
        (1, "pending", FIRST),
        (2, "active", SECOND),
    ]
    assert data["versions"][-1]["trigger"] == "When a billing migration hangs on a lock"
    events = [t for t in data["timeline"] if t["type"] == "event"]
    assert [(t["action"], t["version"]) for t in events] == [("submit", 1), ("edit_approve", 2)]
    assert events[-1]["before"]["content"] == FIRST and events[-1]["after"]["content"] == SECOND
