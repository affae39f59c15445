"""The skills endpoints of the agent API: trial reports, the approved skills of a scope, one skill."""

import pytest
import yaml

from curation.models import Entry, SkillSource, SkillTrial
from curation.rules.trust import Trust
from curation.services import skills
from tests.factories import publish_pending, nominated, report

pytestmark = pytest.mark.django_db


def trial(agent, slug, **body):
    return agent.post(f"skills/{slug}/trials", {"outcome": "success", "task_ref": "task-1", **body})


def approved_skill(lead, **fields):
    p = nominated(**fields)
    report(p, ["success"] * 5)
    skills.approve_skill(p.pk, actor=lead, expected_version=1)
    return p


# --- trials --------------------------------------------------------------------------------------------


def test_a_trial_is_recorded_with_the_count_so_far(agent):
    p = nominated()
    response = trial(agent, p.slug, notes="3 tables migrated")
    assert response.status_code == 201
    body = response.json()
    assert body["recorded"] is True and body["skill"] == p.slug and body["revision"] == 1
    assert body["trials"] == {
        "reported": 1,
        "succeeded": 1,
        "failed": 0,
        "required": 5,
        "summary": "1 of 5 trials succeeded",
        "passes": False,
    }
    assert body["trial"]["task_ref"] == "task-1" and body["trial"]["notes"] == "3 tables migrated"
    stored = SkillTrial.objects.get()
    assert (stored.token, stored.reported_by_label, stored.outcome) == (agent.token, "agent:billing-agent", "success")
    for i in range(2, 5):
        trial(agent, p.slug, task_ref=f"task-{i}")
    body = trial(agent, p.slug, task_ref="task-5", outcome="failure").json()
    assert body["trials"]["summary"] == "4 of 5 trials succeeded" and body["trials"]["failed"] == 1


def test_a_repeated_report_changes_nothing(agent):
    p = nominated()
    assert trial(agent, p.slug).status_code == 201
    again = trial(agent, p.slug, outcome="failure")
    assert again.status_code == 200 and again.json()["recorded"] is False
    assert "already reported" in again.json()["message"]
    assert again.json()["trials"]["summary"] == "1 of 5 trials succeeded"
    assert SkillTrial.objects.count() == 1


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"outcome": "maybe"}, "outcome", "success or failure."),
        ({"outcome": None}, "outcome", "success or failure."),
        ({"task_ref": ""}, "task_ref", "a trial is counted once per task"),
        ({"task_ref": 7}, "task_ref", "Must be text."),
        ({"task_ref": "t" * 256}, "task_ref", "At most 255 characters"),
        ({"notes": "n" * 4001}, "notes", "At most 4,000 characters"),
        ({"notes": "a\u0000b"}, "notes", "NUL"),
        ({"notes": "\ud800"}, "notes", "valid Unicode"),
        ({"extra": 1}, "extra", "Unknown field."),
    ],
)
def test_bad_trials_are_422_per_field(agent, body, field, message):
    p = nominated()
    response = trial(agent, p.slug, **body)
    assert response.status_code == 422, response.content
    assert message in " ".join(response.json()["errors"][field])
    assert not SkillTrial.objects.exists()


def test_outside_the_tokens_scopes_or_unknown_is_404(make_agent):
    p = nominated()
    web = make_agent("web-agent", scopes=["acme/web"])
    for slug in (p.slug, "no-such-skill", "Not_A_Slug", "x" * 65):
        response = trial(web if slug == p.slug else make_agent(f"a{len(slug)}-{slug[:3].lower()}"), slug)
        assert response.status_code == 404 and response.json()["error"] == "No such skill in this token's scopes."
    assert not SkillTrial.objects.exists()


def test_trials_of_a_decided_skill_are_409(agent, lead):
    p = approved_skill(lead)
    response = trial(agent, p.slug, task_ref="task-late")
    assert response.status_code == 409 and "is approved" in response.json()["error"]


def test_body_and_method_refusals(agent):
    p = nominated()
    assert agent.post(f"skills/{p.slug}/trials", "[]").status_code == 400
    assert agent.post(f"skills/{p.slug}/trials", {"outcome": "success"}, content_type="text/plain").status_code == 415
    assert agent.get(f"skills/{p.slug}/trials").status_code == 405


# --- reading skills ----------------------------------------------------------------------------------------


def test_only_approved_skills_of_the_scope_and_its_ancestors_are_listed(make_agent, lead):
    container = approved_skill(lead)
    billing = approved_skill(lead, scope="acme/billing-api", trigger="Deploying the billing-api")
    web = approved_skill(lead, scope="acme/web", trigger="Deploying the web app")
    draft = nominated(scope="acme/billing-api", trigger="Rotating the billing-api keys")
    agent = make_agent("wide", scopes=["acme/billing-api"])

    def slugs(**params):
        response = agent.get("skills", **params)
        assert response.status_code == 200, response.content
        return [s["slug"] for s in response.json()["skills"]]

    assert slugs(scope="acme/billing-api/container") == sorted([container.slug, billing.slug])
    assert slugs(scope="acme/billing-api") == [billing.slug]
    assert slugs() == sorted([container.slug, billing.slug])  # every scope of the token
    assert draft.slug not in slugs() and web.slug not in slugs()
    narrow = make_agent("narrow", scopes=["acme/billing-api/container"])
    # the token does not cover acme/billing-api, so that ancestor's skill is not read, as with /memory
    assert [s["slug"] for s in narrow.get("skills", scope="acme/billing-api/container").json()["skills"]] == [
        container.slug
    ]
    assert agent.get("skills", scope="acme/web").status_code == 403
    bad = agent.get("skills", scope="Acme//x")
    assert bad.status_code == 422 and "scope" in bad.json()["errors"]


def test_a_listed_skill_carries_its_skill_md(agent, lead):
    p = approved_skill(lead)
    [skill] = agent.get("skills", scope="acme/billing-api/container").json()["skills"]
    assert skill["status"] == "approved" and skill["path"] == f"skills/{p.slug}/SKILL.md"
    assert skill["trials"]["summary"] == "5 of 5 trials succeeded" and skill["sources"] == [p.nominated_entry_id]
    front = yaml.safe_load(skill["skill_md"].split("---\n")[1])
    assert front == {"name": p.slug, "description": p.description}
    assert f"http://testserver/api/v1/entries/{p.nominated_entry_id}" in skill["skill_md"]


def test_a_skill_says_the_lowest_trust_of_its_live_sources(agent, lead, approved):
    p = approved_skill(lead)
    [skill] = agent.get("skills").json()["skills"]
    assert skill["trust"] == "agent" and "Provenance trust: agent (the lowest of its sources)." in skill["skill_md"]
    # A second source, confirmed by a person, does not raise it; the first one, relayed content, lowers it.
    person = approved(scope=p.scope, trigger="A person checked the container migration steps")
    Entry.objects.filter(pk=person.pk).update(trust=Trust.PERSON)
    SkillSource.objects.create(proposal=p, entry=person, entry_version=person.version)
    assert agent.get(f"skills/{p.slug}").json()["trust"] == "agent"
    Entry.objects.filter(pk=p.nominated_entry_id).update(trust=Trust.UNTRUSTED)
    one = agent.get(f"skills/{p.slug}").json()
    assert one["trust"] == "untrusted" and "Provenance trust: untrusted" in one["skill_md"]
    # A source taken out of the skill no longer counts.
    SkillSource.objects.filter(proposal=p, entry_id=p.nominated_entry_id).update(live=False, removed_at=p.created_at)
    assert agent.get(f"skills/{p.slug}").json()["trust"] == "person"


def test_pages_of_skills(agent, lead):
    made = sorted(approved_skill(lead, trigger=f"Procedure number {i} in the container").slug for i in range(3))
    first = agent.get("skills", limit=2).json()
    assert [s["slug"] for s in first["skills"]] == made[:2] and first["next_after"] == made[1]
    second = agent.get("skills", limit=2, after=first["next_after"]).json()
    assert [s["slug"] for s in second["skills"]] == made[2:] and second["next_after"] is None
    assert agent.get("skills", limit=0).status_code == 422
    assert agent.get("skills", after="Bad Slug").status_code == 422
    # An empty cursor is not "the first page": the description allows only a skill's name.
    empty = agent.get("skills", after="")
    assert empty.status_code == 422 and "after" in empty.json()["errors"]


def test_list_query_count_is_fixed(agent, lead, django_assert_max_num_queries):
    approved_skill(lead)
    agent.get("skills")
    agent.publish_first = False  # only the read is counted; the tests publish between
    # token, the published version and its skills, 3 of the selector, and the rate limit's cache
    with django_assert_max_num_queries(8) as one:
        agent.get("skills")
    one_skill = len(one.captured_queries)  # read now: the next request empties the connection's query log
    for i in range(4):
        approved_skill(lead, trigger=f"Procedure number {i} in the container")
    publish_pending()
    agent.get("skills")  # the publish renewed the per-process token and version cache: read them once, as above
    with django_assert_max_num_queries(one_skill):
        assert len(agent.get("skills").json()["skills"]) == 5


def test_one_skill_in_any_state_within_the_tokens_scopes(agent, make_agent):
    p = nominated()
    body = agent.get(f"skills/{p.slug}").json()
    assert body["status"] == "nominated" and body["rollback"] == p.rollback
    assert "Draft (revision 1), nominated in memoryadmin: 0 of 5 trials succeeded so far" in body["skill_md"]
    assert make_agent("web", scopes=["acme/web"]).get(f"skills/{p.slug}").status_code == 404
    assert agent.get("skills/nope").status_code == 404


def test_memory_no_longer_returns_an_approved_skills_sources(agent, lead):
    p = approved_skill(lead)
    entry = Entry.objects.get(pk=p.nominated_entry_id)
    ids = [e["id"] for e in agent.retrieve(q="running migrations container").json()["entries"]]
    assert entry.pk not in ids
    skills.retire_skill(p.pk, actor=lead, expected_version=2, reason="replaced by a script")
    ids = [e["id"] for e in agent.retrieve(q="running migrations container").json()["entries"]]
    assert entry.pk in ids


def test_an_entrys_history_names_its_skills_decisions(agent, lead):
    """An agent asking why an entry is no longer retrieved finds the skill that replaced it."""
    p = approved_skill(lead)
    events = agent.get(f"entries/{p.nominated_entry_id}").json()["events"]
    actions = [e["action"] for e in events]
    assert actions[-7:] == ["skill_nominated", *["skill_trial"] * 5, "skill_approved"]
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
