"""The nomination sweep through run_sweep: what a nomination holds, one Event per nominee, idempotent, never
an entry already proposed, a bounded number of queries whatever the number of nominees, dry runs."""

import pytest
from django.db import connection

from curation import sweeps
from curation.models import Entry, Event, SkillProposal, SkillSource, TaskRun
from curation.services import conflicts, skills
from curation.sweeps import run_sweep
from tests.factories import AS_OF, MIGRATE, days_before, make_entry, nominate, ready_entry, record_uses

pytestmark = pytest.mark.django_db


def test_a_nomination_is_a_prefilled_draft_with_its_source_and_event():
    entry = ready_entry()
    bystander = make_entry()  # a procedure without any use
    bystander_history = Event.objects.filter(entry=bystander).count()
    sweep = nominate()
    [proposal] = SkillProposal.objects.all()
    assert (sweep.examined, sweep.changed) == (2, 1)
    assert proposal.status == "nominated" and proposal.scope == MIGRATE["scope"]
    assert proposal.slug == "running-migrations-in-the-billing-api-container"
    assert proposal.steps == (
        "1. Run `python manage.py migrate` from /srv/app, not from /workspace.\n"
        "2. Check `python manage.py showmigrations` lists every migration as applied."
    )
    assert proposal.rollback == "`python manage.py migrate billing <previous>` from /srv/app, then restart the worker."
    assert proposal.description == (
        "How to go about running migrations in the billing-api container: 2 steps, with a rollback. "
        f"Use it when running migrations in the billing-api container ({MIGRATE['scope']})."
    )
    assert "Keywords: container, migrations." in proposal.when_to_use
    assert proposal.pitfalls == MIGRATE["boundary"]  # it says it is a boundary: not labelled twice
    assert proposal.reason == "12 hits, average utility 0.90, no failure in the last 10 uses, a rollback note"
    assert (proposal.revision, proposal.version, proposal.created_at) == (1, 1, AS_OF)
    assert list(proposal.entries.all()) == [entry]
    [event] = Event.objects.filter(action="skill_nominated")
    assert event.entry_id == entry.pk and event.actor_label == "lifecycle:skill_nomination"
    assert event.after["proposal"] == proposal.pk and event.after["skill"] == proposal.slug
    assert event.after["draft"]["rollback"] == proposal.rollback
    assert event.request_id.startswith("taskrun-") and event.created_at == AS_OF
    assert Entry.objects.get(pk=entry.pk).version == entry.version  # the entry itself does not change
    assert Event.objects.filter(entry=bystander).count() == bystander_history
    run = TaskRun.objects.get(task="skill_nomination")
    assert (run.state, run.rows_examined, run.rows_changed) == ("succeeded", 2, 1)


def test_idempotent_and_never_an_entry_already_proposed(lead):
    ready_entry()
    nominate()
    nominate()
    assert SkillProposal.objects.count() == 1 and Event.objects.filter(action="skill_nominated").count() == 1
    # A decided proposal is not made again either: a rejected nomination stays rejected.
    proposal = SkillProposal.objects.get()
    skills.reject_skill(proposal.pk, actor=lead, expected_version=1, reason="too specific to one container")
    assert nominate().changed == 0 and SkillProposal.objects.count() == 1


def test_an_entry_in_an_open_conflict_is_not_nominated(reviewer):
    entry = ready_entry(
        trigger="Merging a feature branch into main",
        content="Always rebase before merging. Rollback: git reset --hard ORIG_HEAD.",
        conditions=[],
        scope="acme/billing-api",
    )
    other = make_entry(
        scope="acme/billing-api",
        trigger="Merging feature branches into main",
        content="Never rebase shared branches.",
        conditions=[],
    )
    assert conflicts.detect_conflicts_for(other)
    assert nominate().changed == 0
    assert not SkillProposal.objects.filter(nominated_entry=entry).exists()


def test_an_entry_waiting_for_a_recheck_is_not_nominated():
    entry = ready_entry(last_verified_at=days_before(5), review_by=days_before(2).date())
    run_sweep("review_due", as_of=AS_OF)
    assert Entry.objects.get(pk=entry.pk).queue_reason == "recheck_review_due"
    assert nominate().changed == 0


def test_slugs_are_unique():
    first = ready_entry(scope="acme/billing-api/container")
    second = ready_entry(scope="acme/billing-api/host")
    nominate()
    assert {
        SkillProposal.objects.get(nominated_entry=first).slug,
        SkillProposal.objects.get(nominated_entry=second).slug,
    } == {"running-migrations-in-the-billing-api-container", "running-migrations-in-the-billing-api-container-2"}


def test_dry_run_describes_and_changes_nothing():
    entry = ready_entry()
    run, sweep = run_sweep("skill_nomination", as_of=AS_OF, dry_run=True)
    assert sweep.changed == 1 and not SkillProposal.objects.exists()
    assert sweep.samples == [
        f"#{entry.pk} nominate as skill running-migrations-in-the-billing-api-container: "
        "12 hits, average utility 0.90, no failure in the last 10 uses, a rollback note"
    ]


def test_outcomes_after_the_run_moment_do_not_count():
    entry = ready_entry()
    record_uses(entry, ["failure"], end=AS_OF.replace(year=2027))  # reported after the moment replayed
    assert nominate().changed == 1


def test_query_count_does_not_grow_with_the_nominees(django_assert_max_num_queries, settings):
    for i in range(3):
        ready_entry(trigger=f"Procedure {i} in the container")
    for _ in range(5):
        make_entry()
    # The run record and its lock (3, and the unlock on PostgreSQL) and its end (1); the tombstones (1); the keyset
    # walk (2 + 2); per batch: candidates, their outcomes, the lock, the slugs taken, 3 inserts, a savepoint and
    # its release, progress (10).
    with django_assert_max_num_queries(19 + (connection.vendor == "postgresql")) as few:
        assert nominate().changed == 3
    for i in range(30):
        ready_entry(trigger=f"Another procedure {i} in the container")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert nominate().changed == 30
    assert SkillSource.objects.filter(live=True).count() == 33


def test_batches_keep_the_query_count_per_batch(django_assert_max_num_queries):
    for i in range(6):
        ready_entry(trigger=f"Procedure {i} in the container")
    run, sweep = run_sweep("skill_nomination", as_of=AS_OF, batch_size=2)
    assert (sweep.examined, sweep.changed) == (6, 6)


def test_the_sweep_is_scheduled_like_the_others(settings):
    assert "skill_nomination" in sweeps.TASK_NAMES
    assert (
        settings.CELERY_BEAT_SCHEDULE["lifecycle-skill_nomination"]["task"]
        == "curation.rules.lifecycle.skill_nomination"
    )


def test_long_names_that_collide_get_their_own_suffix():
    trigger = "Running the very long billing-api database migration procedure inside the container " * 2
    made = []
    for i in range(3):  # one per run: the names taken are read from the database, not remembered
        made.append(ready_entry(trigger=trigger, scope=f"acme/billing-api/s{i}"))
        nominate()
    slugs = sorted(SkillProposal.objects.values_list("slug", flat=True))
    assert len(slugs) == 3 == len(set(slugs)) and all(len(s) <= 64 for s in slugs)
    assert SkillProposal.objects.filter(nominated_entry__in=made).count() == 3
    assert sum(s.endswith(("-2", "-3")) for s in slugs) == 2
