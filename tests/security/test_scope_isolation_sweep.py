"""Role and scope isolation from the outside: a reviewer, a lead and an auditor limited to acme/billing-api, and
an agent token of acme/billing-api, against objects of acme/web (and of acme, above them).

Every route that names an object answers for one outside the reader's scopes exactly as for one that does not
exist (same status, same page or JSON, the id aside): pages, htmx cards and fragments, decisions, bulk actions
and their undo, the API's ids and slugs. Then the places that read several objects at once (a card's group of
conflicts, the releases page's pre-publish checks, a memory test's answer) name nothing beyond the reader's
scopes. The routes of curation/urls.py and curation/api/urls.py not exercised here take no object id (lists,
forms, the reader's own preferences) and filter by the reader's scopes in their selectors."""

import io
import json
import uuid
import zipfile

import pytest
from django.urls import reverse

from curation import services
from curation.models import (
    AgentToken,
    Conflict,
    ConsolidationProposal,
    Entry,
    ForgetRequest,
    ImportJob,
    SkillProposal,
    Status,
)
from curation.services import conflicts
from curation.services.forgets import approve_forget_request, file_forget_request
from curation.services.import_jobs import start_job
from curation.services.memory_tests import create_memory_test
from curation.services.tokens import create_agent_token
from curation.sweeps import consolidation as consolidation_sweep
from tests.factories import (
    PAYROLL_LESSON,
    PAYROLL_PARAPHRASE,
    NO_REBASE,
    REBASE,
    Agent,
    active,
    candidate_data,
    client_for,
    make_user,
    nominated,
    page_text,
    publish_pending,
)

pytestmark = pytest.mark.django_db

MINE, THEIRS = "acme/billing-api", "acme/web"
UNKNOWN = 999999
HTMX = {"HTTP_HX_REQUEST": "true"}
PORT = dict(trigger="Connecting to the web database from the container", conditions=["db"])


def _same(answer) -> tuple:
    """What an answer says, with the object's id (or slug) it names made one placeholder."""
    return answer.status_code, answer.get("Location", ""), page_text(answer)


def _alike(outside, unknown, outside_id, unknown_id) -> None:
    """The two answers say the same once the unknown id (or slug) the second names, which appears nowhere
    else, reads as the outside one."""
    renamed = tuple(str(part).replace(str(unknown_id), str(outside_id)) for part in _same(unknown))
    assert tuple(str(part) for part in _same(outside)) == renamed


@pytest.fixture
def theirs(lead, reviewer, make_candidate):
    """One object of each kind in acme/web, made by people of every scope."""
    candidate = make_candidate(scope=THEIRS)
    entry = active(reviewer, scope=THEIRS, trigger="Deploying the web app", content="Run the smoke tests first.")
    a = active(reviewer, scope=THEIRS, **REBASE)
    b = active(reviewer, scope=f"{THEIRS}/frontend", **NO_REBASE)
    [conflict] = conflicts.detect_conflicts_for(b)
    for content in ("Probe port 5432 with nc before connecting.", "Probe port 5432 with nc before connecting!"):
        active(reviewer, scope=THEIRS, content=content, **PORT)
    [proposal] = consolidation_sweep.sweep_consolidation().proposed
    skill = nominated(scope=THEIRS)
    forget = file_forget_request(entry_id=entry.pk, reason="the user asked", actor=reviewer)
    test = create_memory_test(
        data={
            "scope": THEIRS,
            "name": "web lesson",
            "query": "deploying",
            "k": "5",
            "budget_tokens": "500",
            "expectations": f"top #{entry.pk}",
        },
        actor=lead,
    )
    token, _ = create_agent_token(name="web-agent", scopes=[THEIRS], actor=lead)
    job = start_job(actor=lead, upload_id="u" * 32, name="notes.md", format="markdown", scope=THEIRS, dry_run=True)
    return dict(
        candidate=candidate,
        entry=entry,
        conflict=conflict,
        proposal=proposal,
        skill=skill,
        forget=forget,
        test=test,
        token=token,
        job=job,
        versions=(a, b),
    )


@pytest.fixture
def scoped(db):
    return {
        "reviewer": make_user("sam", "reviewer", scopes=[MINE]),
        "lead": make_user("bill", "lead", scopes=[MINE]),
        "auditor": make_user("audrey", "auditor", scopes=[MINE]),
    }


# (who, method, URL name, the object it names, the form posted): every route of curation/urls.py that names one
# object by id or slug, each decision of every queue included.
ENTRY_FORM = {"version": "1", "reason": "no", "note": "n", "target": "1", "trigger": "t", "content": "c"}
PAIR_FORM = {"version_a": "1", "version_b": "1", "keep": "1", "reason": "no", "merge_scope": THEIRS}
GROUP_FORM = {**PAIR_FORM, "keep": "new", "members": ["{id}:1:1", "1:1:1"]}
ROUTES = [
    ("reviewer", "get", "candidate-card", "candidate", {}),
    ("reviewer", "get", "candidate-impact", "candidate", {}),
    *[("reviewer", "post", f"candidate-{d}", "candidate", ENTRY_FORM) for d in ("approve", "edit", "reject")],
    *[("reviewer", "post", f"candidate-{d}", "candidate", ENTRY_FORM) for d in ("defer", "merge", "undo")],
    ("auditor", "get", "entry", "entry", {}),
    ("auditor", "get", "entry-history", "entry", {}),
    ("reviewer", "post", "entry-evidence", "entry", {"kind": "test_result", "signal": "external", "excerpt": "ok"}),
    ("reviewer", "post", "entry-forget", "entry", {"reason": "the user asked"}),
    ("reviewer", "post", "learning-recheck", "entry", {"version": "3"}),
    ("reviewer", "get", "conflict-card", "conflict", {}),
    *[("reviewer", "post", f"conflict-{d}", "conflict", PAIR_FORM) for d in ("keep", "split", "merge", "dismiss")],
    ("reviewer", "post", "conflict-undo", "conflict", PAIR_FORM),
    *[("reviewer", "post", f"conflict-group-{d}", "conflict", GROUP_FORM) for d in ("keep", "dismiss", "undo")],
    ("reviewer", "get", "proposal-card", "proposal", {}),
    *[("reviewer", "post", f"proposal-{d}", "proposal", {"note": "n"}) for d in ("accept", "dismiss", "undo")],
    ("reviewer", "get", "skill-card", "skill", {}),
    ("reviewer", "post", "skill-edit", "skill", {"version": "1", "description": "d"}),
    ("reviewer", "post", "skill-reject", "skill", {"version": "1", "reason": "no"}),
    *[("lead", "post", f"skill-{d}", "skill", {"version": "1", "note": "n"}) for d in ("approve", "acknowledge")],
    ("auditor", "get", "skill", "skill-slug", {}),
    ("auditor", "get", "skill-md", "skill-slug", {}),
    ("lead", "post", "skill-retire", "skill-slug", {"version": "1", "reason": "old"}),
    ("auditor", "get", "forget-card", "forget", {}),
    *[
        ("lead", "post", f"forget-{d}", "forget", {"reason": "no", "note": "n"})
        for d in ("approve", "decline", "close")
    ],
    ("lead", "get", "memory-test", "test", {}),
    *[("lead", "post", f"memory-test-{d}", "test", {"version": "1", "scope": MINE}) for d in ("edit", "retire")],
    ("lead", "post", "token-revoke", "token", {"confirm": "yes"}),
    ("lead", "get", "import-job", "job", {}),
    ("lead", "post", "import-job", "job", {"action": "import"}),
    ("lead", "get", "import-job-progress", "job", {}),
]


def _target(theirs, kind):
    """The outside object's id (or slug) and an unknown one of the same shape."""
    if kind == "skill-slug":
        return theirs["skill"].slug, "no-such-skill"
    return theirs[kind].pk, UNKNOWN


def _form(form, outside_id) -> dict:
    return {k: [v.format(id=outside_id) for v in vs] if isinstance(vs, list) else vs for k, vs in form.items()}


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize("who, method, name, kind, form", ROUTES, ids=[f"{r[1]}-{r[2]}" for r in ROUTES])
def test_an_object_outside_the_scopes_answers_as_an_unknown_one(theirs, scoped, who, method, name, kind, form, htmx):
    outside_id, unknown_id = _target(theirs, kind)
    answers = []
    for target in (outside_id, unknown_id):
        client = client_for(scoped[who])  # a fresh session each time: no message of the first shows on the second
        url = reverse(f"curation:{name}", args=[target])
        extra = HTMX if htmx else {}
        answer = client.get(url, **extra) if method == "get" else client.post(url, _form(form, target), **extra)
        answers.append(answer)
    assert answers[0].status_code == 404, page_text(answers[0])[:500]
    _alike(answers[0], answers[1], outside_id, unknown_id)
    # Nothing of theirs was changed by the attempt.
    assert Entry.objects.get(pk=theirs["candidate"].pk).status == Status.PENDING
    assert Conflict.objects.get(pk=theirs["conflict"].pk).state == Conflict.State.OPEN
    assert ConsolidationProposal.objects.get(pk=theirs["proposal"].pk).state == ConsolidationProposal.State.OPEN
    assert SkillProposal.objects.get(pk=theirs["skill"].pk).status == SkillProposal.Status.NOMINATED
    assert ForgetRequest.objects.get(pk=theirs["forget"].pk).state == ForgetRequest.State.OPEN
    assert AgentToken.objects.get(pk=theirs["token"].pk).revoked_at is None
    assert ImportJob.objects.filter(scope=THEIRS, dry_run=False).count() == 0


BULKS = [
    ("candidates-bulk", "candidate", {"action": "approve"}, "{id}:1"),
    ("candidates-bulk", "candidate", {"action": "reject", "reason": "no"}, "{id}:1"),
    ("candidates-bulk-undo", "candidate", {}, "{id}:2"),
    ("conflicts-bulk", "conflict", {"reason": "no"}, "{id}:1:1"),
    ("consolidation-bulk", "proposal", {"action": "accept"}, "{id}"),
    ("consolidation-bulk", "proposal", {"action": "dismiss"}, "{id}"),
]


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize("name, kind, form, selected", BULKS, ids=[f"{b[0]}-{b[2].get('action', '')}" for b in BULKS])
def test_a_bulk_action_on_an_object_outside_the_scopes_reads_as_on_an_unknown_one(
    theirs, scoped, name, kind, form, selected, htmx
):
    outside_id = theirs[kind].pk
    answers = []
    for target in (outside_id, UNKNOWN):
        client = client_for(scoped["reviewer"])
        answer = client.post(
            reverse(f"curation:{name}"), {**form, "selected": selected.format(id=target)}, **(HTMX if htmx else {})
        )
        if answer.status_code == 302:  # without htmx: what happened is said on the page it leads back to
            answer = client.get(answer["Location"])
        answers.append(answer)
    _alike(answers[0], answers[1], outside_id, UNKNOWN)
    assert "not found" in page_text(answers[0])
    assert Entry.objects.get(pk=theirs["candidate"].pk).status == Status.PENDING
    assert ConsolidationProposal.objects.get(pk=theirs["proposal"].pk).state == ConsolidationProposal.State.OPEN


# --- the agent API ----------------------------------------------------------------------------------------------


@pytest.fixture
def billing_agent(db):
    token, key = create_agent_token(name="billing-agent", scopes=[MINE])
    agent = Agent(key, token)
    agent.publish_first = False
    return agent


def test_the_api_answers_an_object_outside_the_tokens_scopes_as_an_unknown_one(theirs, billing_agent, lead):
    web_agent = Agent(create_agent_token(name="web-reader", scopes=[THEIRS])[1])
    publish_pending()
    retrieval_id = web_agent.get("memory", scope=THEIRS, q="deploying").json()["retrieval_id"]
    entry, skill = theirs["entry"], theirs["skill"]
    evidence = {"kind": "test_result", "signal": "external", "polarity": "supports", "excerpt": "CI run passed"}
    trial = {"outcome": "success", "task_ref": "task-1"}
    evidence_before = entry.evidence.count()
    calls = [
        (lambda i: billing_agent.get(f"entries/{i}"), entry.pk, UNKNOWN),
        (lambda i: billing_agent.post(f"entries/{i}/evidence", evidence), entry.pk, UNKNOWN),
        (lambda i: billing_agent.get(f"skills/{i}"), skill.slug, "no-such-skill"),
        (lambda i: billing_agent.post(f"skills/{i}/trials", trial), skill.slug, "no-such-skill"),
        (lambda i: billing_agent.post("forget-requests", {"entry_id": i, "reason": "asked"}), entry.pk, UNKNOWN),
        (
            lambda i: billing_agent.post("feedback", {"retrieval_id": i, "outcome": "success"}),
            retrieval_id,
            str(uuid.uuid4()),
        ),
    ]
    for call, outside, unknown in calls:
        said = [call(i) for i in (outside, unknown)]
        bodies = [json.dumps(a.json()).replace(str(i), "N") for a, i in zip(said, (outside, unknown))]
        assert said[0].status_code == said[1].status_code == 404 and bodies[0] == bodies[1], bodies
    assert not ForgetRequest.objects.filter(entry=entry).exclude(pk=theirs["forget"].pk).exists()
    assert entry.evidence.count() == evidence_before


def test_a_batch_item_naming_another_scope_is_refused_alone_and_nothing_lands_there(billing_agent):
    items = [
        candidate_data(scope=f"{MINE}/container", signal="external"),
        candidate_data(scope=THEIRS, signal="external", trigger="Deploying the web app on Fridays"),
        candidate_data(scope="acme", signal="external", trigger="Deploying anything on Fridays"),
    ]
    for item in items:
        item.pop("confidence")
    answer = billing_agent.post("candidates/batch", {"candidates": items})
    assert answer.status_code == 200
    results = answer.json()["results"]
    assert [r["ok"] for r in results] == [True, False, False]
    assert [r.get("status") for r in results[1:]] == [403, 403]
    assert not Entry.objects.filter(scope__in=[THEIRS, "acme"]).exists()


def test_an_idempotency_key_is_one_tokens_own(billing_agent):
    """Another token sending the same key (and the same body) gets its own answer, never the first token's,
    and is not told that the key was used."""
    other = Agent(create_agent_token(name="billing-other", scopes=[MINE])[1])
    body = candidate_data(scope=f"{MINE}/container", signal="external")
    body.pop("confidence")
    key = {"HTTP_IDEMPOTENCY_KEY": "7d0c0a6e-1111-4c3b-9a77-5a8d7c0e7b01"}
    first = billing_agent.post("candidates", body, **key)
    second = other.post("candidates", {**body, "trigger": body["trigger"] + " again"}, **key)
    assert first.status_code == second.status_code == 201
    assert "Idempotent-Replayed" not in second and second.json()["id"] != first.json()["id"]
    replay = billing_agent.post("candidates", body, **key)
    assert replay["Idempotent-Replayed"] == "true" and replay.json() == first.json()


# --- what one answer reads of several objects ---------------------------------------------------------------


def _flood(reviewer, *, above: bool):
    """A candidate of acme/billing-api contradicting two lessons below it: their conflicts are one card
    (`above`: and a lesson of acme, above the scoped reviewer's scopes, which it contradicts too)."""
    over = active(reviewer, scope="acme", **REBASE) if above else None
    existing = [active(reviewer, scope=f"{MINE}/p{i}", **REBASE) for i in range(2)]
    new = services.create_candidate(data=candidate_data(scope=MINE, **NO_REBASE), actor_label="agent:ci")
    opened = conflicts.detect_conflicts_for(new)
    mine = [c for c in opened if {c.entry_a_id, c.entry_b_id} & {e.pk for e in existing}]
    theirs = [c for c in opened if c not in mine]
    assert len(mine) == 2 and len(theirs) == (1 if over else 0)
    return mine, theirs


@pytest.mark.parametrize("decision", ["group-keep", "group-dismiss", "group-undo"])
@pytest.mark.parametrize("how", ["apart", "sharing"])
def test_a_card_of_conflicts_naming_one_outside_the_scopes_answers_as_for_an_unknown_one(
    reviewer, scoped, decision, how
):
    """A card of the reviewer's own conflicts, posted with one more conflict id: one outside their scopes (of
    two acme/web entries; or of the card's own candidate and an entry of acme, above their scopes, sent with
    another version of that candidate) is refused as an unknown id is, and nothing is decided."""
    mine, theirs = _flood(reviewer, above=how == "sharing")
    if how == "apart":
        active(reviewer, scope=THEIRS, **REBASE)
        theirs = conflicts.detect_conflicts_for(active(reviewer, scope=f"{THEIRS}/frontend", **NO_REBASE))
    [outside] = theirs
    card = Conflict.objects.select_related("entry_a", "entry_b").filter(pk__in=[c.pk for c in mine]).order_by("pk")
    members = [f"{c.pk}:{c.entry_a.version}:{c.entry_b.version}" for c in card]
    answers = []
    for extra in (outside.pk, UNKNOWN):
        form = {"members": [*members, f"{extra}:7:7"], "keep": "new", "reason": "not a conflict"}
        answer = client_for(scoped["reviewer"]).post(
            reverse(f"curation:conflict-{decision}", args=[card[0].pk]), form, **HTMX
        )
        answers.append(answer)
    _alike(answers[0], answers[1], outside.pk, UNKNOWN)
    assert {c.state for c in Conflict.objects.filter(pk__in=[*(c.pk for c in mine), outside.pk])} == {"open"}


PAYROLL = "acme/payroll"
LESSON, PARAPHRASE = PAYROLL_LESSON, PAYROLL_PARAPHRASE


def test_the_releases_page_names_no_entry_outside_the_readers_scopes(lead, reviewer):
    """The pre-publish checks of a reader limited to acme/payroll: an entry of acme a forget left matching its
    tombstone, and the acme side of a conflict with one of their pending entries, stay unnamed; a lead of
    every scope reads both."""
    lesson = active(lead, scope=PAYROLL, **LESSON)
    above = active(lead, scope="acme", **PARAPHRASE)  # outside the approving lead's scopes: left active
    parent = active(lead, scope="acme", **REBASE)
    publish_pending()
    payroll_lead = make_user("paula", "lead", scopes=[PAYROLL])
    request = file_forget_request(entry_id=lesson.pk, reason="asked", actor=reviewer)
    approve_forget_request(request.pk, actor=payroll_lead)
    child = active(lead, scope=f"{PAYROLL}/eu", **NO_REBASE)
    [conflict] = [c for c in conflicts.detect_conflicts_for(child) if parent.pk in (c.entry_a_id, c.entry_b_id)]

    everyone = client_for(lead).get(reverse("curation:releases")).content.decode()
    assert f"#{above.pk} repeats a lesson forgotten by forget request #{request.pk}" in everyone
    assert f"#{child.pk} is in open {conflict.label}." in everyone
    for reader in (payroll_lead, make_user("pat", "reviewer", scopes=[PAYROLL])):
        for query in ("", f"?scope={PAYROLL}", "?scope=acme"):
            page = page_text(client_for(reader).get(reverse("curation:releases") + query))
            assert (
                f"#{above.pk} " not in page and f"#{parent.pk}" not in page and f"conflict #{conflict.pk}" not in page
            )
        page = page_text(client_for(reader).get(reverse("curation:releases")))
        assert f"#{child.pk} is in an open conflict with an entry outside your scopes." in page


@pytest.mark.xfail(
    strict=True,
    reason="A memory test at a scope reads that scope and its ancestors (selectors.memory_tests.run_test), and its "
    "result names what it received and what it broke by entry id (TestResult.received, rules.memory_tests.failures, "
    "stored in the run's Event): an agent token of acme/billing-api running the tests of its scopes is told the ids "
    "and ranks of acme's entries, which GET /api/v1/entries/<id> answers 404 (and the memory tests, releases and "
    "impact pages say the same to a lead or reviewer of acme/billing-api). The fix is a decision on what a result "
    "says to a reader beyond whose scopes it reached (its verdict too is an oracle for 'absent #N'), not a filter.",
)
def test_a_memory_test_run_names_no_entry_outside_the_tokens_scopes(lead, billing_agent):
    above = active(lead, scope="acme", trigger="Deploying any service", content="Tag the release first.")
    mine = active(lead, scope=MINE, trigger="Deploying the billing service", content="Drain the queue first.")
    publish_pending()
    create_memory_test(
        data={
            "scope": MINE,
            "name": "deploys",
            "query": "deploying service",
            "k": "5",
            "budget_tokens": "500",
            "expectations": f"top #{mine.pk}\nno scope acme",
        },
        actor=lead,
    )
    assert billing_agent.get(f"entries/{above.pk}").status_code == 404
    answer = billing_agent.post("memory-tests/run", {})
    assert answer.status_code == 200
    [result] = answer.json()["results"]
    assert mine.pk in result["received"]
    assert above.pk not in result["received"] and f"#{above.pk}" not in json.dumps(result)


# Every page and download of curation/urls.py that lists or counts (no object named in its URL), with the query
# parameters that select a scope directly.
LISTS = [
    ("reviewer", "/", ""),
    *[
        ("reviewer", f"/review/{q}/", p)
        for q in ("candidates", "conflicts", "consolidation", "skills")
        for p in ("", "?f-scope=acme/web")
    ],
    ("reviewer", "/review/candidates/", "?f-scope=acme/web&f-view=compact"),
    *[("htmx-reviewer", f"/review/{q}/", "?f-scope=acme") for q in ("candidates", "conflicts", "consolidation")],
    ("htmx-auditor", "/review/forgets/", "?f-scope=acme"),
    ("auditor", "/review/forgets/", ""),
    ("auditor", "/review/forgets/", "?f-scope=acme/web&f-state=open"),
    ("auditor", "/skills/", ""),
    ("auditor", "/skills/", "?scope=acme/web"),
    ("auditor", "/skills/", "?status=retired"),
    ("auditor", "/skills/export.zip", ""),
    ("auditor", "/releases/", ""),
    ("auditor", "/releases/", "?scope=acme/web"),
    ("auditor", "/releases/diff/", "?a=1&b=2"),
    ("auditor", "/releases/diff.json", "?a=1&b=2"),
    ("auditor", "/releases/export.zip", ""),
    ("auditor", "/preview/", "?scope=acme/web&q=deploying"),
    ("auditor", "/preview/", "?scope=acme&q=deploying&version=draft"),
    ("auditor", "/reviewers/", ""),
    ("auditor", "/learning/", ""),
    ("auditor", "/learning/", "?scope=acme/web"),
    ("auditor", "/maintenance/", ""),
    ("lead", "/memory-tests/", ""),
    ("lead", "/policies/", ""),
    ("lead", "/agents/tokens/", ""),
    ("lead", "/imports/", ""),
]


def _text(answer) -> str:
    if answer.get("Content-Type", "").startswith("application/zip"):
        with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
            return "\n".join(archive.read(name).decode() for name in archive.namelist())
    return answer.content.decode()


@pytest.mark.parametrize("who, path, query", LISTS, ids=[f"{w}{p}{q}" for w, p, q in LISTS])
def test_a_list_shows_nothing_outside_the_readers_scopes(theirs, scoped, who, path, query):
    publish_pending()  # version 2 holds acme/web's entries
    # htmx-: the queue's list alone, as its filter bar asks for it (partials/queue_list.html)
    fragment = {**HTMX, "HTTP_HX_TARGET": "queue"} if who.startswith("htmx-") else {}
    answer = client_for(scoped[who.removeprefix("htmx-")]).get(path + query, **fragment)
    assert answer.status_code in (200, 404, 422), answer.status_code
    text = _text(answer)
    markers = [
        "Deploying the web app",
        REBASE["content"],
        NO_REBASE["content"],
        "Probe port 5432",
        theirs["candidate"].content,
        theirs["skill"].slug,
        "web-agent",
        "web lesson",
        "notes.md",
        *(f'/entries/{e.pk}/"' for e in (theirs["entry"], *theirs["versions"], theirs["candidate"])),
    ]
    assert [m for m in markers if m in text] == []


def test_the_apis_reads_give_a_token_nothing_outside_its_scopes(theirs, lead, billing_agent):
    """Every read of the agent API (and so of the MCP tools and resources, each one of these calls) as a token
    of acme/billing-api: nothing of acme/web, nor of acme above it, which its scopes do not cover."""
    above = active(lead, scope="acme", trigger="Deploying any service from the monorepo", content="Tag it first.")
    mine = active(lead, scope=MINE, trigger="Deploying the billing service", content="Drain the queue first.")
    publish_pending()
    reads = [
        billing_agent.get("token"),
        billing_agent.get("memory", scope=MINE, q="deploying service"),
        billing_agent.get("memory", scope=f"{MINE}/container", q="deploying web app", k="20"),
        billing_agent.post("memory/search", {"scope": MINE, "q": "deploying", "k": 20}),
        billing_agent.get("skills"),
        billing_agent.get("skills", scope=MINE),
        billing_agent.get("export"),
        billing_agent.get("export", scope=MINE),
        billing_agent.get("evaluation", scope=MINE),
        billing_agent.get(f"entries/{mine.pk}"),
    ]
    assert [r.status_code for r in reads] == [200] * len(reads)
    assert mine.trigger in json.dumps(reads[1].json())  # the reads do read memory
    text = "\n".join(json.dumps(r.json()) for r in reads)
    markers = [above.trigger, "Deploying the web app", REBASE["content"], "Probe port 5432", theirs["skill"].slug]
    assert [m for m in markers if m in text] == []
    for refused in (
        billing_agent.get("memory", scope="acme"),
        billing_agent.get("export", scope=THEIRS),
        billing_agent.get("skills", scope=THEIRS),
        billing_agent.get("evaluation", scope="acme"),
        billing_agent.post("memory-tests/run", {"scope": THEIRS}),
    ):
        assert refused.status_code == 403 and "may not read scope" in refused.json()["error"]


# Who may decide what, whatever the scopes: (the role refused, method, URL, object). Every decision of every
# queue, and every lead's action, by a role below it granted every scope: 403, and nothing changes.
ROLE_REFUSALS = [
    *[("auditor", name, kind) for _who, method, name, kind, _form in ROUTES if method == "post"],
    *[("reviewer", name, kind) for who, method, name, kind, _form in ROUTES if method == "post" and who == "lead"],
    ("reviewer", "release-publish", None),
    ("reviewer", "release-rollback", 1),
    ("reviewer", "memory-test-create", None),
    ("reviewer", "token-create", None),
    ("reviewer", "imports", None),
    ("reviewer", "maintenance-run", "decay"),
    ("reviewer", "scope-policy-set", "review"),
    ("auditor", "candidates-bulk", None),
    ("auditor", "candidates-bulk-undo", None),
    ("auditor", "conflicts-bulk", None),
    ("auditor", "consolidation-bulk", None),
]


@pytest.mark.parametrize("role, name, kind", ROLE_REFUSALS, ids=[f"{r}-{n}" for r, n, _ in ROLE_REFUSALS])
def test_a_role_below_the_decision_is_refused_before_anything_is_read(theirs, role, name, kind):
    user = make_user(f"every-{role}", role)  # every scope: the role alone refuses
    if isinstance(kind, str) and kind in theirs:
        args = [theirs["skill"].slug if kind == "skill-slug" else theirs[kind].pk]
    elif kind is None:
        args = []
    else:
        args = [kind]
    form = {"version": "1", "reason": "r", "note": "n", "summary": "s", "confirm": "yes", "action": "approve"}
    answer = client_for(user).post(reverse(f"curation:{name}", args=args), {**form, "selected": "1:1"})
    assert answer.status_code == 403
    assert Entry.objects.get(pk=theirs["candidate"].pk).status == Status.PENDING
    assert SkillProposal.objects.get(pk=theirs["skill"].pk).status == SkillProposal.Status.NOMINATED
    assert ForgetRequest.objects.get(pk=theirs["forget"].pk).state == ForgetRequest.State.OPEN
    assert AgentToken.objects.get(pk=theirs["token"].pk).revoked_at is None


def test_an_id_typed_into_a_form_reads_alike_outside_the_scopes_and_unknown(theirs, scoped, lead, reviewer):
    """The forms that take another object's id: a skill draft's source entries, a forget approval's ticked
    duplicates, a candidate's merge target. An entry outside the scoped person's scopes is refused in the
    words an unknown id is, and nothing is written."""
    skill = nominated(scope=f"{MINE}/container", trigger="Running the billing migrations in the container")
    mine = active(reviewer, scope=MINE, trigger="Paging the billing on-call", content="Use the rota first.")
    forget = file_forget_request(entry_id=mine.pk, reason="the user asked", actor=reviewer)
    candidate = services.create_candidate(data=candidate_data(scope=MINE), actor_label="agent:ci")
    outside = theirs["entry"].pk
    forms = [
        (
            "reviewer",
            reverse("curation:skill-edit", args=[skill.pk]),
            lambda i: {"version": skill.version, "sources": f"#{skill.nominated_entry_id}, #{i}"},
        ),
        ("lead", reverse("curation:forget-approve", args=[forget.pk]), lambda i: {"duplicates": [str(i)]}),
        (
            "reviewer",
            reverse("curation:candidate-merge", args=[candidate.pk]),
            lambda i: {"version": candidate.version, "target": str(i)},
        ),
    ]
    for who, url, form in forms:
        answers = [client_for(scoped[who]).post(url, form(i), **HTMX) for i in (outside, UNKNOWN)]
        assert answers[0].status_code == 422, url
        _alike(answers[0], answers[1], outside, UNKNOWN)
    assert SkillProposal.objects.get(pk=skill.pk).version == skill.version
    assert ForgetRequest.objects.get(pk=forget.pk).state == ForgetRequest.State.OPEN
    assert Entry.objects.get(pk=candidate.pk).status == Status.PENDING


def test_a_held_submission_reads_as_an_unknown_id_to_people_of_its_scope(lead, reviewer, scoped, billing_agent):
    """A submission repeating a forgotten lesson is held (services.held): no page shows it, so no decision,
    single or bulk, tells its id from an unknown one."""
    lesson = dict(
        trigger="Deploying the billing service on Fridays",
        content="Always page Marguerite Okonkwo before deploying billing, she holds the rollback keys.",
    )
    entry = active(lead, scope=MINE, **lesson)
    approve_forget_request(file_forget_request(entry_id=entry.pk, reason="asked", actor=reviewer).pk, actor=lead)
    body = candidate_data(scope=MINE, signal="external", **lesson)
    body.pop("confidence")
    held = Entry.objects.get(pk=billing_agent.post("candidates", body).json()["id"])
    assert held.held_by_id is not None
    mine = active(reviewer, scope=MINE, trigger="Paging the billing on-call", content="Use the rota first.")
    forget = file_forget_request(entry_id=mine.pk, reason="the user asked", actor=reviewer)
    for pk in (held.pk, UNKNOWN):  # a lead ticking it as a near duplicate of another request's entry
        answer = client_for(scoped["lead"]).post(
            reverse("curation:forget-approve", args=[forget.pk]), {"duplicates": [str(pk)]}, **HTMX
        )
        assert answer.status_code == 422 and f"No such entry in your scopes: #{pk}." in page_text(answer)
    assert ForgetRequest.objects.get(pk=forget.pk).state == ForgetRequest.State.OPEN
    client = client_for(scoped["reviewer"])
    for name, form in (
        ("entry", None),
        ("candidate-card", None),
        ("candidate-approve", {"version": "{v}"}),
        ("candidate-undo", {"version": "{v}"}),
        ("candidates-bulk", {"action": "approve", "selected": "{id}:{v}"}),
        ("candidates-bulk", {"action": "reject", "reason": "no", "selected": "{id}:{v}"}),
        ("candidates-bulk-undo", {"selected": "{id}:{v}"}),
        ("entry-forget", {"reason": "the user asked"}),
        ("learning-recheck", {"version": "{v}"}),
    ):
        answers = []
        for pk in (held.pk, UNKNOWN):
            url = reverse(f"curation:{name}", args=[] if "bulk" in name else [pk])
            if form is None:
                answers.append(client.get(url))
            else:
                filled = {k: v.format(id=pk, v=held.version) for k, v in form.items()}
                answers.append(client.post(url, filled, **HTMX))
        _alike(answers[0], answers[1], held.pk, UNKNOWN)
    assert not ForgetRequest.objects.filter(entry=held).exists()
