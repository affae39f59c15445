"""The skill promotions queue and the skills pages through the real URLs, middleware and templates."""

import io
import zipfile

import pytest
import yaml
from django.urls import reverse

from curation.selectors import dashboard as board_reads
from curation.models import Entry, Event, SkillProposal
from curation.services import skills
from tests.factories import client_for, make_entry, make_user, nominated, report

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
QUEUE = "/review/skills/"


def url(name, p):
    return reverse(f"curation:skill-{name}", args=[p.pk])


def fresh(p):
    return SkillProposal.objects.get(pk=p.pk)


def approved_skill(lead, **fields):
    p = nominated(**fields)
    report(p, ["success"] * 5)
    skills.approve_skill(p.pk, actor=lead, expected_version=1)
    return fresh(p)


def test_urls():
    assert reverse("curation:skills-queue") == QUEUE and reverse("curation:skills") == "/skills/"


def test_the_card_shows_the_draft_sources_and_trials(reviewer):
    p = nominated()
    report(p, ["success"] * 3)
    page = client_for(reviewer).get(QUEUE).content.decode()
    assert f'id="skill-{p.pk}"' in page and "1 nominated" in page
    assert "<strong>3 of 5 trials succeeded</strong>" in page
    assert p.slug in page and "python manage.py migrate billing &lt;previous&gt;" in page  # the rollback
    assert f'href="/entries/{p.nominated_entry_id}/"' in page
    assert "Preview SKILL.md" in page and f'name: &quot;{p.slug}&quot;' in page
    assert 'href="/review/skills/"' in page  # the nav link
    # a reviewer edits and rejects, but has no approve button
    assert 'data-action="approve"' not in page and "A lead can approve it when" in page
    assert 'name="steps"' in page and 'data-action="reject"' in page


def test_the_lead_sees_approve_disabled_until_the_gate_passes(lead):
    p = nominated()
    report(p, ["success"] * 4)
    page = client_for(lead).get(QUEUE).content.decode()
    button = page[page.index('data-action="approve"') :][:200]
    assert "disabled" in button and "4 of 5 trials reported: 1 more needed" in page
    report(p, ["success"], prefix="fifth")
    page = client_for(lead).get(QUEUE).content.decode()
    assert "disabled" not in page[page.index('data-action="approve"') :][:120]
    assert "<strong>5 of 5 trials succeeded</strong>" in page


def test_auditor_reads_and_changes_nothing(auditor, lead):
    p = nominated()
    report(p, ["success"] * 5)
    client = client_for(auditor)
    page = client.get(QUEUE).content.decode()
    assert f'id="skill-{p.pk}"' in page
    assert 'data-action="approve"' not in page and 'name="steps"' not in page and 'data-action="reject"' not in page
    for action, data in (("approve", {}), ("edit", {"pitfalls": "x"}), ("reject", {"reason": "no"})):
        assert client.post(url(action, p), {"version": 1, **data}).status_code == 403
    approved = approved_skill(lead, scope="acme/billing-api/host")
    assert (
        client.post(
            reverse("curation:skill-retire", args=[approved.slug]), {"version": approved.version, "reason": "no"}
        ).status_code
        == 403
    )
    assert fresh(p).status == "nominated" and fresh(approved).status == "approved"


def test_a_reviewer_approving_gets_403_with_a_clear_message(reviewer):
    p = nominated()
    report(p, ["success"] * 5)
    response = client_for(reviewer).post(url("approve", p), {"version": 1})
    assert response.status_code == 403 and "Only a lead may approve a skill promotion." in response.content.decode()
    assert fresh(p).status == "nominated"


def test_lead_approves_with_htmx(lead):
    p = nominated()
    report(p, ["success"] * 5)
    response = client_for(lead).post(url("approve", p), {"version": 1}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and f"Skill {p.slug}: approved and published" in body
    assert "0 nominated" in body and f'href="/skills/{p.slug}/SKILL.md"' in body
    assert fresh(p).status == "approved"


def test_approving_before_the_gate_passes_is_refused_in_place(lead):
    p = nominated()
    report(p, ["success"] * 4 + ["failure"])
    response = client_for(lead).post(url("approve", p), {"version": 1}, **HTMX)
    body = response.content.decode()
    assert (
        response.status_code == 409 and "cannot be approved yet" in body and "1 trial of this revision failed" in body
    )
    assert fresh(p).status == "nominated"


def test_edit_with_htmx_bad_input_and_stale(reviewer, second_reviewer):
    p = nominated()
    client = client_for(reviewer)
    bad = client.post(url("edit", p), {"version": 1, "slug": "Not A Slug", "rollback": ""}, **HTMX)
    body = bad.content.decode()
    assert bad.status_code == 422 and "Lowercase letters a-z" in body and "rollback path" in body
    assert 'data-panel="edit" data-key="e" open' in body and 'value="Not A Slug"' in body  # what was typed stays
    ok = client.post(url("edit", p), {"version": 1, "steps": "1. Run migrate from /srv/app.", "slug": p.slug}, **HTMX)
    assert ok.status_code == 200 and "Draft saved steps." in ok.content.decode()
    assert "revision 2" in ok.content.decode() and fresh(p).revision == 2
    skills.edit_skill_draft(p.pk, actor=second_reviewer, expected_version=2, changes={"pitfalls": "rob's"})
    stale = client.post(url("edit", p), {"version": 2, "pitfalls": "rita's"}, **HTMX)
    assert stale.status_code == 409 and "changed since you loaded it" in stale.content.decode()
    assert fresh(p).pitfalls == "rob's"


def test_without_javascript_the_forms_post_and_redirect(reviewer):
    p = nominated()
    client = client_for(reviewer)
    response = client.post(url("edit", p), {"version": 1, "pitfalls": "Watch the lock.", "next": f"{QUEUE}?scope=acme"})
    assert response.status_code == 302 and response["Location"] == f"{QUEUE}?scope=acme"
    response = client.post(url("reject", p), {"version": 2, "reason": "", "next": QUEUE})
    assert response.status_code == 422 and "Say why" in response.content.decode()
    response = client.post(
        url("reject", p), {"version": 2, "reason": "one container only", "next": "//evil.example/"}, follow=True
    )
    assert response.redirect_chain[-1][0] == QUEUE and "rejected, never nominated again" in response.content.decode()
    assert fresh(p).status == "rejected"
    assert client.post(url("approve", p), {}).status_code == 403  # the role is checked before the form


def test_scopes_limit_the_queue(reviewer):
    p = nominated()
    web = make_user("wes", "reviewer", scopes=["acme/web"])
    client = client_for(web)
    assert f'id="skill-{p.pk}"' not in client.get(QUEUE).content.decode()
    assert client.get(url("card", p)).status_code == 404
    assert client.post(url("edit", p), {"version": 1, "pitfalls": "x"}).status_code == 404
    assert client_for(make_user("nora")).get(QUEUE).status_code == 403


def test_filters(reviewer, lead):
    p = nominated()
    ready = nominated(scope="acme/billing-api/host", trigger="Running migrations on the host")
    report(ready, ["success"] * 5)
    client = client_for(reviewer)
    page = client.get(QUEUE, {"f-ready": "1"}).content.decode()
    assert f'id="skill-{ready.pk}"' in page and f'id="skill-{p.pk}"' not in page and "1 nominated" in page
    assert f'id="skill-{p.pk}"' not in client.get(QUEUE, {"f-scope": "acme/billing-api/host"}).content.decode()
    assert f'id="skill-{p.pk}"' not in client.get(QUEUE, {"f-kind": "success_pattern"}).content.decode()
    assert client.get(QUEUE, {"f-kind": "fact"}).status_code == 400
    assert client.get(QUEUE, {"after": "nope"}).status_code == 400


def test_queue_query_count(reviewer, django_assert_max_num_queries):
    for i in range(3):
        report(nominated(trigger=f"Procedure {i} in the container"), ["success", "failure"], prefix=f"p{i}")
    client = client_for(reviewer)
    client.get(QUEUE)
    # session, user, permissions (2), grants, the roles in the top bar, the reviewer's queue preference,
    # then 4: proposals with their trial counts, their sources, their trials, the count
    with django_assert_max_num_queries(11) as few:
        client.get(QUEUE)
    for i in range(3, 12):
        report(nominated(trigger=f"Procedure {i} in the container"), ["success"], prefix=f"p{i}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = client.get(QUEUE).content.decode()
    assert page.count('class="card skill-card') == 12


# --- approved skills --------------------------------------------------------------------------------------


def test_the_skills_page_lists_approved_skills_with_downloads(lead, reviewer):
    skill = approved_skill(lead)
    draft = nominated(scope="acme/billing-api/host", trigger="Running migrations on the host")
    page = client_for(reviewer).get("/skills/").content.decode()
    assert f'id="skill-{skill.slug}"' in page and f'id="skill-{draft.slug}"' not in page
    assert f'href="/skills/{skill.slug}/SKILL.md"' in page and "5 of 5 trials succeeded" in page
    assert 'data-action="retire"' not in page  # a reviewer does not retire
    lead_page = client_for(lead).get("/skills/").content.decode()
    assert 'data-action="retire"' in lead_page


def test_skill_md_download(lead, auditor):
    skill = approved_skill(lead)
    response = client_for(auditor).get(f"/skills/{skill.slug}/SKILL.md")
    assert response.status_code == 200 and response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{skill.slug}-SKILL.md"'
    text = response.content.decode()
    assert yaml.safe_load(text.split("---\n")[1]) == {"name": skill.slug, "description": skill.description}
    assert f"(http://testserver/entries/{skill.nominated_entry_id}/)" in text
    assert "approved by lena" in text
    assert client_for(auditor).get("/skills/no-such-skill/SKILL.md").status_code == 404


def test_export_zip_has_the_agent_layout(lead, reviewer):
    one = approved_skill(lead)
    two = approved_skill(lead, scope="acme/web", trigger="Deploying the web app")
    scoped = make_user("sam", "reviewer", scopes=["acme/billing-api"])
    with zipfile.ZipFile(io.BytesIO(client_for(reviewer).get("/skills/export.zip").content)) as archive:
        assert sorted(archive.namelist()) == sorted([f"skills/{one.slug}/SKILL.md", f"skills/{two.slug}/SKILL.md"])
        assert archive.read(f"skills/{one.slug}/SKILL.md").decode().startswith(f'---\nname: "{one.slug}"\n')
    with zipfile.ZipFile(io.BytesIO(client_for(scoped).get("/skills/export.zip").content)) as archive:
        assert archive.namelist() == [f"skills/{one.slug}/SKILL.md"]


def test_lead_retires_a_skill_and_its_entries_come_back(lead):
    skill = approved_skill(lead)
    client = client_for(lead)
    page = client.get(f"/skills/{skill.slug}/").content.decode()
    assert 'id="skill-md"' in page and "Retire this skill" in page
    refused = client.post(f"/skills/{skill.slug}/retire/", {"version": skill.version, "reason": ""}, follow=True)
    assert "Say why the skill is retired." in refused.content.decode() and fresh(skill).status == "approved"
    response = client.post(
        f"/skills/{skill.slug}/retire/", {"version": skill.version, "reason": "scripted now"}, follow=True
    )
    assert "retired: its source entries are back in retrieval" in response.content.decode()
    assert fresh(skill).status == "retired"
    assert f'id="skill-{skill.slug}"' in client.get("/skills/", {"status": "retired"}).content.decode()
    assert f'id="skill-{skill.slug}"' not in client.get("/skills/").content.decode()
    assert client.get("/skills/", {"status": "nominated"}).status_code == 404


def test_the_skill_page_tells_its_history_from_its_own_events(lead, auditor, django_assert_max_num_queries):
    skill = approved_skill(lead)
    skills.retire_skill(skill.pk, actor=lead, expected_version=fresh(skill).version, reason="scripted now")
    client = client_for(auditor)
    with django_assert_max_num_queries(12):
        page = client.get(f"/skills/{skill.slug}/").content.decode()
    history = page[page.index('id="history"') :]
    actions = [a for a in ("skill_nominated", "skill_trial", "skill_approved", "skill_retired") if a in history]
    assert actions == ["skill_nominated", "skill_trial", "skill_approved", "skill_retired"]
    assert history.count('class="event action-skill_trial"') == 5
    assert [history.index(f"action-{a}") for a in actions] == sorted(history.index(f"action-{a}") for a in actions)
    assert "scripted now" in history and "lena" in history


def test_a_skill_decided_before_events_had_subjects_keeps_its_history(lead, auditor):
    """Such decisions were written on each source entry, naming the proposal in `after`; the nominated
    entry's copy is the skill's history (once, though every source has one)."""
    skill = approved_skill(lead)
    legacy = {
        "entry_label": "old",
        "actor_label": "lena",
        "action": "skill_retired",
        "reason": "retired long ago",
        "after": {"proposal": skill.pk, "proposal_version": 99},
    }
    Event.objects.create(entry_id=skill.nominated_entry_id, **legacy)
    Event.objects.create(entry=make_entry(), **legacy)  # the copy on another source entry
    history = client_for(auditor).get(f"/skills/{skill.slug}/").content.decode()
    history = history[history.index('id="history"') :]
    assert history.count("retired long ago") == 1


def test_a_reviewer_retiring_gets_403(lead, reviewer):
    skill = approved_skill(lead)
    response = client_for(reviewer).post(f"/skills/{skill.slug}/retire/", {"version": skill.version, "reason": "x"})
    assert response.status_code == 403 and "Only a lead may retire a skill." in response.content.decode()


def test_skills_list_query_count(lead, reviewer, django_assert_max_num_queries):
    approved_skill(lead)
    client = client_for(reviewer)
    client.get("/skills/")
    with django_assert_max_num_queries(9) as few:  # 6 as above, then skills, sources, trials
        client.get("/skills/")
    for i in range(5):
        approved_skill(lead, trigger=f"Procedure {i} in the container")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get("/skills/").content.decode().count('class="card" id="skill-') == 6


def test_the_dashboard_counts_the_skills_queue(lead):
    p = nominated()
    *_, skill_q, _forget_q = board_reads.dashboard(lead).queues
    assert (skill_q.name, skill_q.count, skill_q.oldest) == ("Skills", 1, fresh(p).created_at)
    page = client_for(lead).get("/").content.decode()
    assert 'id="queue-skills"' in page and 'href="/review/skills/"' in page
    assert Entry.objects.filter(pk=p.nominated_entry_id).exists()


def test_the_entry_page_says_it_is_a_skills_source(lead):
    skill = approved_skill(lead)
    page = client_for(lead).get(f"/entries/{skill.nominated_entry_id}/").content.decode()
    assert f'id="entry-skill-{skill.pk}"' in page and f'href="/skills/{skill.slug}/"' in page
    assert "withheld from retrieval while the skill is approved" in page
    assert "skill_approved" in page  # the timeline


def test_every_role_check_comes_before_the_form(reviewer, auditor, lead):
    p = nominated()
    skill = approved_skill(lead, scope="acme/billing-api/host")
    for user, posts in (
        (reviewer, [url("approve", p), f"/skills/{skill.slug}/retire/"]),
        (auditor, [url("approve", p), url("edit", p), url("reject", p), f"/skills/{skill.slug}/retire/"]),
    ):
        for path in posts:
            response = client_for(user).post(path, {})  # no version, no fields: still 403, not 422
            assert response.status_code == 403, (user, path)
