"""A skill made of a forgotten entry follows it: withdrawn back to the skill queue with its own Event, its text
made of the lesson replaced, its rows gone from every published version. Agents (every version=N of the
skills list and the export, one skill, its SKILL.md), the console (the skills list and page, both zips) and
the export commands serve nothing of it afterwards; the lead sees on the proposal's card why it came back."""

import io
import zipfile

import pytest
from django.core.management import call_command
from django.db.models import F
from django.urls import reverse

from curation.rules import clock
from curation.models import Event, EventAction, MemoryVersion, ReleasedSkill, SkillProposal, SkillSource, Status
from curation.services import skills
from curation.services.entry_writes import write_entry
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.releases import rollback_version
from curation.services.tokens import create_agent_token
from tests.factories import Agent, client_for, database_dump, nominated, publish_pending, report

pytestmark = pytest.mark.django_db

# Words only the lesson (and so the skill made of it) holds: its trigger (the skill's name), steps, rollback.
FORGOTTEN = ("quetzalcoatl", "Quetzalcoatl", "srv-axolotl-4242", "zorblax")
LESSON = dict(
    scope="acme/billing-api/container",
    trigger="Running migrations in the quetzalcoatl container",
    content="Run `python manage.py migrate` from /srv-axolotl-4242/app, not from /workspace.\n"
    "Check `python manage.py showmigrations` lists every migration as applied.\n"
    "Rollback: `python manage.py migrate billing <previous>` from /srv-axolotl-4242/app, then restart "
    "the zorblax worker.",
)


def version_of(proposal) -> int:
    return SkillProposal.objects.get(pk=proposal.pk).version


def leaks(text: str) -> list[str]:
    return [word for word in FORGOTTEN if word in text]


def zip_text(content: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return "\n".join(f"{name}\n{archive.read(name).decode()}" for name in archive.namelist())


@pytest.fixture
def published_skill(lead):
    """An approved skill made of LESSON, in two published versions (its own, and a later one)."""
    proposal = nominated(**LESSON)
    report(proposal)
    skills.approve_skill(proposal.pk, actor=lead, expected_version=version_of(proposal))
    first = publish_pending()
    other = nominated(
        scope="acme/billing-api",
        trigger="Rotating the billing-api webhook signing key",
        content="Deploy the new key to every worker first.\nRollback: restore the old key.",
    )
    report(other)
    skills.approve_skill(other.pk, actor=lead, expected_version=version_of(other))
    second = publish_pending()
    assert first and second and second.number > first.number
    return SkillProposal.objects.get(pk=proposal.pk)


@pytest.fixture
def agent(db):
    token, key = create_agent_token(name="billing-agent", scopes=["acme/billing-api"])
    return Agent(key, token)


def agent_answers(agent, slugs) -> dict[str, str]:
    """Every agent surface that may serve a skill, at every version."""
    agent.publish_first = False
    answers = {"skills": agent.get("skills").content.decode(), "export": agent.get("export").content.decode()}
    for number in MemoryVersion.objects.values_list("number", flat=True):
        answers[f"skills v{number}"] = agent.get("skills", version=number).content.decode()
        answers[f"export v{number}"] = agent.get("export", version=number).content.decode()
    for slug in slugs:
        answers[f"skill {slug}"] = agent.get(f"skills/{slug}").content.decode()
    return answers


def console_answers(user, slugs) -> dict[str, str]:
    console = client_for(user)
    answers = {
        "skills page": console.get(reverse("curation:skills")).content.decode(),
        "retired skills page": console.get(reverse("curation:skills"), {"status": "retired"}).content.decode(),
        "skills zip": zip_text(console.get(reverse("curation:skills-export")).content),
    }
    for number in MemoryVersion.objects.values_list("number", flat=True):
        answers[f"memory zip v{number}"] = zip_text(
            console.get(reverse("curation:release-export"), {"version": number}).content
        )
    for slug in slugs:
        answers[f"page {slug}"] = console.get(reverse("curation:skill", args=[slug])).content.decode()
        answers[f"SKILL.md {slug}"] = console.get(reverse("curation:skill-md", args=[slug])).content.decode()
    return answers


def forget(entry, lead):
    request = file_forget_request(reason="The user withdrew consent", entry_id=entry.pk, actor=lead)
    approve_forget_request(request.pk, actor=lead)
    return request


def test_forgetting_a_skills_source_withdraws_it_from_every_version_and_surface(published_skill, lead, agent, tmp_path):
    skill, entry = published_skill, published_skill.nominated_entry
    before = {**agent_answers(agent, [skill.slug]), **console_answers(lead, [skill.slug])}
    unseen = [
        name
        for name, text in before.items()
        if not leaks(text) and name not in ("skills v1", "export v1", "memory zip v1", "retired skills page")
    ]
    assert not unseen, f"the test must see the skill first in {unseen}"

    request = forget(entry, lead)

    withdrawn = SkillProposal.objects.get(pk=skill.pk)
    assert withdrawn.status == SkillProposal.Status.NOMINATED and withdrawn.slug == f"withdrawn-skill-{skill.pk}"
    assert withdrawn.steps == withdrawn.rollback == withdrawn.description == request.marker
    assert withdrawn.revision == skill.revision + 1  # other steps: trials start again
    assert not SkillSource.objects.filter(proposal=skill, entry=entry, live=True).exists()
    assert not ReleasedSkill.objects.filter(skill=skill).exclude(valid_to=F("valid_from")).exists()
    event = Event.objects.get(skill=skill, action=EventAction.SKILL_WITHDRAWN)
    assert event.actor == lead and f"forget request #{request.pk}" in event.reason
    assert event.before == {"status": "approved"} and event.after["status"] == "nominated"

    after = {
        **agent_answers(agent, [skill.slug, withdrawn.slug]),
        **console_answers(lead, [skill.slug, withdrawn.slug]),
    }
    call_command("export_memory", str(tmp_path / "memory"), stdout=io.StringIO())
    call_command("export_skills", str(tmp_path / "skills"), stdout=io.StringIO(), stderr=io.StringIO())
    after["on disk"] = "\n".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    after["on disk names"] = "\n".join(str(p) for p in tmp_path.rglob("*"))
    # A rollback to a version published when the skill was approved serves nothing of it either.
    rollback_version(2, actor=lead, reason="checking a forget holds")
    after.update(
        {f"after a rollback: {name}": text for name, text in agent_answers(agent, [skill.slug, withdrawn.slug]).items()}
    )
    for place, text in after.items():
        assert not leaks(text), f"{leaks(text)} still served by {place}"
    # Nothing else was taken: the other skill is still served.
    assert "rotating-the-billing-api-webhook-signing-key" in after["skills"]

    # Back in the lead's skill queue, saying why, with no text of the lesson.
    card = client_for(lead).get(reverse("curation:skill-card", args=[skill.pk])).content.decode()
    assert f"forgotten by forget request #{request.pk}" in card and "Back in the queue" in card
    queue = client_for(lead).get(reverse("curation:skills-queue")).content.decode()
    assert withdrawn.slug in queue and not leaks(queue) and not leaks(card)
    # The skill's own history keeps its decisions and loses the text.
    history = Event.objects.filter(skill=skill)
    assert {e.action for e in history} >= {"skill_nominated", "skill_approved", "skill_withdrawn"}
    assert not leaks(repr(list(history.values_list("before", "after", "reason", "entry_label"))))


def test_the_whole_database_holds_nothing_of_the_skill_afterwards(published_skill, lead):
    forget(published_skill.nominated_entry, lead)
    dump = database_dump()
    assert not leaks(dump), leaks(dump)


def test_a_nominated_skill_made_of_it_stays_in_the_queue_purged_and_a_retired_one_stays_retired(lead):
    waiting = nominated(**LESSON)
    retired_source = nominated(
        scope="acme/billing-api",
        trigger="Restarting the zorblax scheduler",
        content="Stop the zorblax scheduler, then start it.\nRollback: start the old one.",
    )
    report(retired_source)
    skills.approve_skill(retired_source.pk, actor=lead, expected_version=version_of(retired_source))
    skills.retire_skill(
        retired_source.pk, actor=lead, expected_version=version_of(retired_source), reason="no longer used"
    )
    forget(waiting.nominated_entry, lead)
    forget(retired_source.nominated_entry, lead)
    waiting.refresh_from_db(), retired_source.refresh_from_db()
    assert waiting.status == "nominated" and retired_source.status == "retired"
    assert waiting.decision_note.startswith("Changed, withdrawn: its source entry #")
    for proposal in (waiting, retired_source):
        assert not leaks(" ".join(str(v) for v in skills.draft_of(proposal).values()) + proposal.retire_reason)
        assert Event.objects.filter(skill=proposal, action=EventAction.SKILL_WITHDRAWN).count() == 1


def test_a_skill_with_a_forgotten_added_source_loses_only_the_fields_holding_its_text(lead, reviewer):
    skill = nominated()  # the MIGRATE lesson
    extra = nominated(
        scope="acme/billing-api/container",
        trigger="Cleaning the zorblax cache before migrating",
        content="Delete /tmp/zorblax-cache before you migrate.\nRollback: nothing to undo.",
        boundary="",
        conditions=["zorblax"],
    )
    skills.reject_skill(extra.pk, actor=reviewer, expected_version=extra.version, reason="part of the migration")
    skill.refresh_from_db()
    skills.edit_skill_draft(
        skill.pk,
        actor=reviewer,
        expected_version=skill.version,
        changes={
            "pitfalls": "Delete /tmp/zorblax-cache before you migrate.",
            "sources": [skill.nominated_entry_id, extra.nominated_entry_id],
        },
    )
    skill.refresh_from_db()
    slug, steps = skill.slug, skill.steps
    forget(extra.nominated_entry, lead)
    skill.refresh_from_db()
    assert skill.pitfalls.startswith("[forgotten: request #") and skill.steps == steps and skill.slug == slug
    assert skill.status == "nominated" and Event.objects.filter(skill=skill, action="skill_withdrawn").exists()
    # The nominated entry is still a source; the forgotten one has left.
    assert list(SkillSource.objects.filter(proposal=skill, live=True).values_list("entry_id", flat=True)) == [
        skill.nominated_entry_id
    ]
    assert Status.RETIRED == type(extra.nominated_entry).objects.get(pk=extra.nominated_entry_id).status


# --- a skill's text is checked against the tombstones ----------------------------------------------------


def test_a_draft_that_repeats_a_forgotten_lesson_is_refused_naming_the_request(lead, reviewer):
    skill = nominated()
    forgotten = nominated(
        scope="acme/billing-api/container",
        trigger="Restarting the zorblax scheduler",
        content="Stop the zorblax scheduler on srv-axolotl-4242, then start it again.\n"
        "Rollback: start the old zorblax scheduler.",
    )
    request = forget(forgotten.nominated_entry, lead)
    skill.refresh_from_db()
    with pytest.raises(Exception) as refused:
        skills.edit_skill_draft(
            skill.pk,
            actor=reviewer,
            expected_version=skill.version,
            changes={
                "description": "Restarting the zorblax scheduler",
                "steps": "Stop the zorblax scheduler on srv-axolotl-4242, then start it again.",
            },
        )
    message = " ".join(refused.value.message_dict["forgotten"])
    assert f"forget request #{request.pk}" in message and not leaks(message)
    skill.refresh_from_db()
    assert "zorblax" not in skill.steps + skill.description  # nothing saved


def test_approving_a_draft_that_repeats_a_forgotten_lesson_is_refused_on_the_card(lead, reviewer):
    skill = nominated()
    report(skill)
    # Its source entry has since decayed out of the active set: a forget may leave an archived match
    # unticked (an active one it refuses), and the skill's draft still holds the lesson.
    source = skill.nominated_entry
    write_entry(
        source,
        {"status": Status.ARCHIVED, "archived_at": clock.now(), "archive_reason": "decayed"},
        action=EventAction.ARCHIVE,
        at=clock.now(),
    )
    request = file_forget_request(reason="consent withdrawn", scope=skill.scope, text=source.content, actor=lead)
    approve_forget_request(request.pk, actor=lead)  # a text request: the entry itself is not ticked
    skill.refresh_from_db()
    answer = client_for(lead).post(
        reverse("curation:skill-approve", args=[skill.pk]), {"version": skill.version}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 422
    assert f"forget request #{request.pk}" in answer.content.decode()
    skill.refresh_from_db()
    assert skill.status == "nominated"
