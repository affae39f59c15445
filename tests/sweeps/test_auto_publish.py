"""Auto-publish releases low-impact changes alone; everything else waits for a lead."""

import pytest
from django.utils import timezone

from curation.models import Event, EventAction
from curation.selectors import releases as reads
from curation.services.releases import publish_version
from curation.sweeps import run_sweep
from tests.factories import active, record_uses


def test_a_success_outcome_is_published_and_an_approval_waits(lead, reviewer):
    used = active(reviewer, scope="acme/billing-api", boundary="b", confidence=0.7)
    publish_version(actor=lead, summary="v2")
    record_uses(used, ["success"], end=timezone.now())
    waiting = active(reviewer, scope="acme/billing-api", boundary="b", trigger="A new lesson to approve")

    _, dry = run_sweep("auto_publish", as_of=timezone.now(), dry_run=True, triggered_by="test")
    assert dry.changed == 1 and reads.published_version().number == 2  # a dry run publishes nothing

    run_sweep("auto_publish", as_of=timezone.now(), triggered_by="test")

    version = reads.published_version()
    assert version.number == 3 and version.published_by_label == "auto-publish" and version.changed == 1
    released = reads.released_entries(3).get(entry_id=used.pk)
    used.refresh_from_db()
    assert (released.base_confidence, released.last_verified_at) == (used.base_confidence, used.last_verified_at)
    assert released.confidence == pytest.approx(used.confidence)  # derived from the same, as agents read it
    assert Event.objects.get(memory_version=version).action == EventAction.VERSION_PUBLISHED
    assert [c.subject_id for c in reads.pending_changes()] == [waiting.pk]  # the approval waits for a lead


def test_nothing_low_impact_publishes_nothing(reviewer):
    active(reviewer, scope="acme/billing-api", boundary="b")
    _, sweep = run_sweep("auto_publish", as_of=timezone.now(), triggered_by="test")
    assert sweep.changed == 0 and reads.published_version().number == 1


def test_a_failing_memory_test_holds_auto_publish_for_a_lead(lead, reviewer):
    from curation.models import MemoryTest
    from curation.services.memory_tests import create_memory_test
    from curation.services.releases import UnacknowledgedWarnings

    used = active(reviewer, scope="acme/billing-api", boundary="b", confidence=0.7)
    publish_version(actor=lead, summary="v2")
    test = create_memory_test(
        data={
            "scope": "acme/billing-api",
            "name": "not this lesson",
            "query": used.trigger,
            "k": "5",
            "budget_tokens": "500",
            "expectations": f"absent #{used.pk}",
        },
        actor=lead,
    )
    record_uses(used, ["success"], end=timezone.now())

    _, sweep = run_sweep("auto_publish", as_of=timezone.now(), triggered_by="test")

    assert sweep.changed == 0 and reads.published_version().number == 2  # held: nothing published
    assert f"held for a lead: memory test #{test.pk} (not this lesson)" in "\n".join(sweep.samples)
    failed = Event.objects.get(memory_test=test, action=EventAction.MEMORY_TEST_FAILED)
    assert (failed.actor_label, failed.memory_version) == ("auto-publish", None)
    assert [c.subject_id for c in reads.pending_changes()] == [used.pk]  # it waits for a lead

    with pytest.raises(UnacknowledgedWarnings):
        publish_version(actor=lead, summary="by hand")
    version = publish_version(actor=lead, summary="by hand", acknowledge=True)
    assert version.number == 3
    assert Event.objects.get(memory_test=test, action=EventAction.MEMORY_TEST_ACKNOWLEDGED).actor == lead
    MemoryTest.objects.get(pk=test.pk)  # kept
