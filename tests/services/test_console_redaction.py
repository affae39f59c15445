"""What people type in the console is redacted as agents' text is: edit-and-approve fields, notes, reasons,
conflict and consolidation notes, split conditions, skill drafts, evidence, token names. Nothing of it
reaches a table or a log line, an edited entry is flagged, and agents are never served it."""

import logging

import pytest
from django.core.exceptions import ValidationError

from curation import services
from curation.models import Entry
from curation.services import conflicts, consolidation, skills
from curation.sweeps import consolidation as consolidation_sweep
from curation.services.tokens import create_agent_token
from tests.factories import (
    CONFIG,
    NEAR,
    NO_REBASE,
    REBASE,
    SECRET_CORPUS,
    Agent,
    active,
    candidate_data,
    database_dump,
    nominated,
    report,
)

pytestmark = pytest.mark.django_db

LEAK = (
    "key AKIAZ3MPLE7QWERTY123, mail jane.doe@example-corp.com. The admin password is Sup3rS3cret!x; "
    "card 4111 1111 1111 1111."
)
LEAKED = ("AKIAZ3MPLE7QWERTY123", "jane.doe@example-corp.com", "Sup3rS3cret!x", "4111 1111 1111 1111")


def pending(**fields):
    """A new pending candidate, its trigger its own (the database keeps one pending entry per text)."""
    pending.made = getattr(pending, "made", 0) + 1
    fields.setdefault("trigger", f"{candidate_data()['trigger']} (case {pending.made})")
    return services.create_candidate(data=candidate_data(**fields), actor_label="agent:ci")


def assert_nowhere(secrets, caplog):
    dump = database_dump()
    assert "[REDACTED" in dump
    for secret in secrets:
        assert secret not in dump, secret
        assert secret not in caplog.text, secret


@pytest.mark.parametrize("name, text, secret", SECRET_CORPUS, ids=[name for name, *_ in SECRET_CORPUS])
def test_edit_and_approve_redacts_every_format_in_every_field_and_flags_the_entry(reviewer, name, text, secret):
    entry = pending()
    services.edit_and_approve(
        entry.pk,
        actor=reviewer,
        expected_version=entry.version,
        reason=f"fixed: {text}!",
        changes={
            "trigger": f"When ({text}) shows up",
            "content": f"Use '{text}'.",
            "boundary": f"Not with <{text}>;",
            "conditions": [f"{text}", "config"],
        },
    )
    fresh = Entry.objects.get(pk=entry.pk)
    assert fresh.status == "active"
    for value in (fresh.trigger, fresh.content, fresh.boundary, *fresh.conditions):
        assert secret not in value
    flagged = {flag["detail"].rsplit(" removed from ", 1)[1] for flag in fresh.flags}
    assert {"trigger", "content", "boundary", "conditions"} <= flagged
    assert secret not in database_dump()


def test_an_edited_entry_never_serves_the_secret_to_agents(reviewer):
    entry = pending()
    services.edit_and_approve(
        entry.pk,
        actor=reviewer,
        expected_version=entry.version,
        changes={"content": f"Confirm the repository root first; {LEAK}"},
    )
    token, key = create_agent_token(name="reader", scopes=["acme/billing-api"])
    answer = Agent(key, token).retrieve().json()
    assert [e["id"] for e in answer["entries"]] == [entry.pk]
    served = str(answer) + str(Agent(key, token).get(f"entries/{entry.pk}").json())
    assert "[REDACTED: aws access key]" in served
    for secret in LEAKED:
        assert secret not in served


def test_every_note_reason_and_draft_typed_in_the_console_is_redacted(reviewer, lead, caplog):
    caplog.set_level(logging.DEBUG)
    # the candidates queue
    for decide in (services.reject_candidate, services.defer_candidate, services.approve_candidate):
        entry = pending()
        decide(entry.pk, actor=reviewer, expected_version=entry.version, reason=f"because {LEAK}")
    entry = pending()
    services.bulk_decide([(entry.pk, entry.version)], actor=reviewer, action="reject", reason=LEAK)
    services.add_evidence(
        active(reviewer).pk,
        actor=reviewer,
        data={"kind": "review", "signal": "external", "excerpt": LEAK, "task_ref": LEAK[:60]},
    )
    # conflicts: each resolution with its note, the split with its conditions, the merge with its text
    for resolve in ("keep", "split", "merge", "dismiss"):
        a = active(reviewer, scope=f"acme/{resolve}", **REBASE)
        b = active(reviewer, scope=f"acme/{resolve}/container", **NO_REBASE)
        [conflict] = conflicts.detect_conflicts_for(b)
        a, b = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)
        common = {"actor": reviewer, "version_a": a.version, "version_b": b.version, "reason": f"note: {LEAK}"}
        if resolve == "keep":
            conflicts.keep_entry(conflict.pk, keep=a.pk, **common)
        elif resolve == "split":
            conflicts.split_conflict(
                conflict.pk, changes_a={"conditions": ["host", LEAK]}, changes_b={"conditions": ["container"]}, **common
            )
            assert any("removed from conditions" in f["detail"] for f in Entry.objects.get(pk=a.pk).flags)
        elif resolve == "merge":
            conflicts.merge_conflict(
                conflict.pk, data={**candidate_data(scope=f"acme/{resolve}"), "content": LEAK}, **common
            )
        else:
            conflicts.dismiss_conflict(conflict.pk, **common)
    # consolidation: accepted with edited text and a note, and dismissed with a note
    for scope in ("acme/accept", "acme/dismiss"):
        for text in (CONFIG, NEAR):
            active(reviewer, scope=scope, **text)
    proposals = {p.scope: p for p in consolidation_sweep.sweep_consolidation().proposed}
    consolidation.accept_proposal(
        proposals["acme/accept"].pk, actor=reviewer, note=LEAK, edits={"content": LEAK, "conditions": [LEAK]}
    )
    consolidation.dismiss_proposal(proposals["acme/dismiss"].pk, actor=reviewer, note=LEAK)
    # skills: the draft, the approval note, the rejection and the retirement reasons
    skill = nominated()
    skill = skills.edit_skill_draft(
        skill.pk,
        actor=reviewer,
        expected_version=skill.version,
        note=LEAK,
        changes={
            "steps": f"Run it. {LEAK}",
            "pitfalls": LEAK,
            "parameters": LEAK,
            "description": f"Migrations. {LEAK}",
        },
    ).proposal
    report(skill)
    skill.refresh_from_db()
    skill = skills.approve_skill(skill.pk, actor=lead, expected_version=skill.version, note=LEAK).proposal
    skills.retire_skill(skill.pk, actor=lead, expected_version=skill.version, reason=LEAK)

    assert_nowhere(LEAKED, caplog)


def test_a_token_named_with_a_secret_is_refused_without_repeating_it(lead, caplog):
    with pytest.raises(ValidationError) as refused:
        create_agent_token(name="ghp_abcdefghijklmnopqrstuvwxyz0123456789", scopes=["acme"], actor=lead)
    assert refused.value.message_dict["name"] == [
        "This looks like a secret (github token), not a name: name the token after its agent; its secret is made "
        "for you."
    ]
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in database_dump() + caplog.text
