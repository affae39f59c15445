"""Migration 0040 on a database from before provenance trust: each piece of evidence gets the level of what
was recorded (a person's, the server's own outcome verdict, another token's, the author's own, a merge's copy),
each entry its origin (a person's console entry, a person-written import, a merge, an agent's) raised by
another source's piece, and the released rows their entry's level."""

import datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0039_injection_quarantine")], [("curation", "0040_trust_levels")]
AT = datetime.datetime(2026, 11, 20, 12, tzinfo=datetime.timezone.utc)
UNTRUSTED, AGENT, INDEPENDENT, VERIFIED, PERSON = 1, 2, 3, 4, 5


def _old_world(apps) -> dict:
    User = apps.get_model("auth", "User")
    Entry, Evidence, Event = (apps.get_model("curation", name) for name in ("Entry", "Evidence", "Event"))
    rita = User.objects.create(username="rita")

    def entry(label, *, by=None, **fields):
        return Entry.objects.create(
            kind="fact", scope="acme/billing-api", trigger=f"trigger {label}", content=f"content {label}",
            signal="self", base_confidence=0.8, status="active", created_by=by,
            created_by_label=by.username if by else label, created_at=AT, updated_at=AT, **fields,
        )  # fmt: skip

    def evidence(on, recorder, *, by=None, kind="reflection", signal="self", excerpt="seen", task_ref=""):
        return Evidence.objects.create(
            entry=on, kind=kind, signal=signal, excerpt=excerpt, task_ref=task_ref, observed_at=AT,
            recorded_by=by, recorded_by_label=recorder, created_at=AT,
        )  # fmt: skip

    alone = entry("agent:writer")
    evidence(alone, "agent:writer")
    confirmed = entry("agent:writer")
    evidence(confirmed, "agent:writer")
    evidence(confirmed, "agent:checker")
    checked = entry("agent:writer")
    evidence(checked, "rita", by=rita, kind="review", signal="external")
    verified = entry("agent:writer")
    evidence(verified, "agent:other", kind="task_outcome", signal="external", excerpt="verified by outcomes: +0.3")
    console = entry("console", by=rita)
    imported = entry("import:claude-code")
    evidence(
        imported,
        "import:claude-code",
        kind="user_statement",
        signal="external",
        task_ref="import:claude-code:CLAUDE.md:3",
    )
    merged = entry("console-merge", by=rita)
    evidence(merged, "rita", kind="review", excerpt="I checked\n[copied from evidence #3 of entry #3]")
    Event.objects.create(
        entry=merged, entry_label="merged", actor=rita, actor_label="rita", action="consolidation_merge", created_at=AT
    )
    apps.get_model("curation", "ReleasedEntry").objects.create(
        entry=checked, valid_from=1, entry_version=1, kind="fact", scope=checked.scope, trigger=checked.trigger,
        content=checked.content, signal="self", base_confidence=0.8, last_verified_at=AT,
    )  # fmt: skip
    return {
        name: e.pk
        for name, e in dict(
            alone=alone, confirmed=confirmed, checked=checked, verified=verified, console=console,
            imported=imported, merged=merged,
        ).items()
    }  # fmt: skip


def test_existing_evidence_and_entries_get_the_level_of_what_was_recorded():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    ids = _old_world(executor.loader.project_state(BEFORE).apps)
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Entry, Evidence = apps.get_model("curation", "Entry"), apps.get_model("curation", "Evidence")
    levels = {
        name: tuple(Entry.objects.filter(pk=pk).values_list("trust_origin", "trust").get()) for name, pk in ids.items()
    }
    assert levels == {
        "alone": (AGENT, AGENT),
        "confirmed": (AGENT, INDEPENDENT),
        "checked": (AGENT, PERSON),
        "verified": (AGENT, VERIFIED),
        "console": (PERSON, PERSON),
        "imported": (PERSON, PERSON),
        "merged": (AGENT, AGENT),  # a merge's copy of a person's piece confirms nothing
    }
    pieces = dict(Evidence.objects.values_list("recorded_by_label", "source").filter(entry_id=ids["checked"]))
    assert pieces == {"rita": "person"}
    assert set(Evidence.objects.filter(entry_id=ids["verified"]).values_list("source", "trust")) == {
        ("verification", VERIFIED)
    }
    released = apps.get_model("curation", "ReleasedEntry").objects.get(entry_id=ids["checked"])
    assert released.trust == PERSON
