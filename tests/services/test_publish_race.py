"""Two leads publishing at once (or one publishing while another rolls back): the winner's version
stands, and the other gets the clear refusal a lone publish gets, never a database error."""

import pytest
from django.core.exceptions import ValidationError

from curation.models import MemoryVersion, PublishedVersion
from curation.services.releases import publish_version, rollback_version
from tests.factories import active, make_user, publish_pending, run_together

pytestmark = pytest.mark.django_db(transaction=True)


def _publish(lead, summary):
    return lambda: publish_version(actor=lead, summary=summary, acknowledge=True)


@pytest.mark.parametrize("rounds", [5])
def test_two_leads_publishing_at_once(rounds):
    lead, other = make_user("lena", "lead"), make_user("omar", "lead")
    for i in range(rounds):
        active(lead, scope="acme/billing-api", trigger=f"Deploying billing, round {i}", content="Run the smoke tests.")
        first, second = run_together([_publish(lead, f"round {i} by lena"), _publish(other, f"round {i} by omar")])
        published = [r for r in (first, second) if isinstance(r, MemoryVersion)]
        refused = [r for r in (first, second) if not isinstance(r, MemoryVersion)]
        assert len(published) == 1, (first, second)
        assert len(refused) == 1 and isinstance(refused[0], ValidationError), refused
        assert "Nothing to publish" in str(refused[0])
        assert PublishedVersion.objects.get().version_id == published[0].pk


def test_a_publish_during_a_rollback():
    lead, other = make_user("lena", "lead"), make_user("omar", "lead")
    for i in range(3):
        active(lead, scope="acme/billing-api", trigger=f"Deploying billing {i}", content="Run the smoke tests.")
        publish_pending()
    active(lead, scope="acme/billing-api", trigger="Deploying billing, last", content="Drain the queue first.")
    newest = MemoryVersion.objects.order_by("-number").first().number
    results = run_together(
        [
            _publish(lead, "the last change"),
            lambda: rollback_version(newest - 1, actor=other, reason="the smoke tests failed"),
        ]
    )
    assert not [r for r in results if isinstance(r, Exception) and not isinstance(r, ValidationError)], results
    pointer = PublishedVersion.objects.get()
    assert pointer.version_id in {r.pk for r in results if isinstance(r, MemoryVersion)}
