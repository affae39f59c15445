"""The conflicts and consolidation queues filter by provenance trust ("Trust from – to"), as the candidates
queue does: a pair or a proposal is listed when one of its entries lies in the range."""

import pytest
from django.urls import reverse

from curation.models import Entry
from curation.rules.trust import Trust
from curation.services import conflicts
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import active, client_for

pytestmark = pytest.mark.django_db

RELAYED = {"kind": "tool_output", "signal": "external", "source": "relayed", "excerpt": "Copied from a forum post."}
REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])
PORT = dict(
    trigger="Connecting to the billing database from the container",
    content="Probe port 5432 with nc before connecting.",
    conditions=["db"],
)


def conflict_of(reviewer, evidence=()):
    a = active(reviewer, scope="acme/billing-api", evidence=evidence, **REBASE)
    b = active(reviewer, scope="acme/billing-api/container", evidence=evidence, **NO_REBASE)
    [conflict] = [c for c in conflicts.detect_conflicts_for(b) if c.entry_a_id == a.pk]
    return conflict, a


def test_the_conflicts_queue_filters_by_trust(reviewer):
    conflict, a = conflict_of(reviewer, evidence=[RELAYED])
    assert Entry.objects.get(pk=a.pk).trust == Trust.UNTRUSTED
    client = client_for(reviewer)
    queue = reverse("curation:conflicts")
    page = client.get(queue).content.decode()
    assert 'name="f-min_trust"' in page and 'name="f-max_trust"' in page
    assert f'id="conflict-{conflict.pk}"' in client.get(queue, {"f-max_trust": "untrusted"}).content.decode()
    assert f'id="conflict-{conflict.pk}"' not in client.get(queue, {"f-min_trust": "agent"}).content.decode()
    assert (
        f'id="conflict-{conflict.pk}"'
        in client.get(queue, {"f-min_trust": "untrusted", "f-max_trust": "agent"}).content.decode()
    )
    bad = client.get(queue, {"f-min_trust": "trusted"})
    assert bad.status_code == 400 and "one of untrusted, agent, independent, verified, person" in bad.content.decode()


def test_the_consolidation_queue_filters_by_trust(reviewer):
    a = active(reviewer, scope="acme/billing-api", confidence=0.6, **PORT)
    active(reviewer, scope="acme/billing-api", confidence=0.8, **{**PORT, "content": PORT["content"] + "!"})
    [p] = consolidation_sweep.sweep_consolidation().proposed
    level = Trust(Entry.objects.get(pk=a.pk).trust).label
    assert level == "agent"
    client = client_for(reviewer)
    queue = reverse("curation:consolidation")
    page = client.get(queue).content.decode()
    assert 'name="f-min_trust"' in page and 'name="f-max_trust"' in page
    assert f'id="proposal-{p.pk}"' in client.get(queue, {"f-min_trust": "agent"}).content.decode()
    assert f'id="proposal-{p.pk}"' not in client.get(queue, {"f-max_trust": "untrusted"}).content.decode()
    assert f'id="proposal-{p.pk}"' not in client.get(queue, {"f-min_trust": "independent"}).content.decode()
    assert client.get(queue, {"f-max_trust": "nope"}).status_code == 400
