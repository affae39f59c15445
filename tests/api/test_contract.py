"""The agent API contract: every endpoint, its answers and its refusals."""

import datetime
import json
import re

import pytest
from django.db import DatabaseError, connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from curation.models import Conflict, Entry, Event, Evidence, QueueReason, Retrieval, RetrievedEntry, Status
from curation.services import submissions
from curation.services.tokens import revoke_agent_token
from tests.factories import Agent, api_candidate

pytestmark = pytest.mark.django_db


# --- authentication and the body ---------------------------------------------------------------------


def test_no_token_is_401_with_a_bearer_challenge(client):
    response = client.get("/api/v1/memory", {"scope": "acme"})
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in response.json()["error"]


def test_unknown_revoked_and_expired_tokens_are_401(make_agent, lead):
    assert Agent("ma_not-a-real-token-at-all").retrieve().status_code == 401
    revoked = make_agent("revoked")
    revoke_agent_token(revoked.token.pk, actor=lead)
    assert revoked.retrieve().status_code == 401
    expired = make_agent(
        "expired", expires_in=datetime.timedelta(minutes=5), at=timezone.now() - datetime.timedelta(hours=1)
    )
    response = expired.retrieve()
    assert response.status_code == 401 and "expired" in response.json()["error"]


def test_malformed_json_wrong_type_and_huge_bodies_are_refused(agent):
    assert agent.post("candidates", "{not json").status_code == 400
    assert agent.post("candidates", "[1, 2]").json()["error"] == "The body must be a JSON object."
    assert agent.post("candidates", "scope=acme", content_type="application/x-www-form-urlencoded").status_code == 415
    huge = json.dumps({**api_candidate(), "content": "x" * (1024 * 1024)})
    response = agent.post("candidates", huge)
    assert response.status_code == 413
    assert not Entry.objects.exists()


def test_unknown_endpoints_answer_json_404(agent):
    for path in ("entries/not-a-number", "memories", "candidates/batch/extra"):
        response = agent.get(path)
        assert response.status_code == 404 and "No such endpoint" in response.json()["error"]


def test_wrong_method_is_405(agent):
    response = agent.get("candidates")
    assert response.status_code == 405 and response["Allow"] == "POST"


@override_settings(CURATION={**__import__("django.conf").conf.settings.CURATION, "API_RATE_LIMIT": 3})
def test_rate_limit_answers_429_with_retry_after(agent, make_agent):
    statuses = [agent.retrieve().status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    last = agent.retrieve()
    assert 1 <= int(last["Retry-After"]) <= 61
    assert make_agent("other", scopes=["acme/billing-api"]).retrieve().status_code == 200  # per token


# --- POST /candidates ----------------------------------------------------------------------------------


def test_submit_creates_a_pending_candidate_with_its_evidence(agent):
    response = agent.submit(
        evidence=[
            {
                "kind": "tool_output",
                "signal": "external",
                "excerpt": "config.yml: not found",
                "task_ref": "task-9",
                "observed_at": "2026-11-30T10:00:00Z",
            }
        ],
        source_task="task-9",
        review_by="2027-03-01",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "pending" and body["created"] is True
    assert body["duplicates"] == [] and body["conflicts"] == [] and body["flags"] == []
    entry = Entry.objects.get(pk=body["id"])
    assert entry.status == Status.PENDING and entry.queue_reason == QueueReason.NEW
    assert entry.created_by_label == "agent:billing-agent"
    assert entry.review_by == datetime.date(2027, 3, 1)
    evidence = entry.evidence.get()
    assert (evidence.excerpt, evidence.task_ref, evidence.recorded_by_label) == (
        "config.yml: not found",
        "task-9",
        "agent:billing-agent",
    )
    assert Event.objects.get(entry=entry).action == "submit"


@pytest.mark.parametrize(
    "signal, kind, proposed, expected",
    [
        ("self", "failure_lesson", 0.99, 0.85),  # self-made lessons are capped
        ("self", "failure_lesson", 0.6, 0.6),
        ("external", "procedure", 0.99, 0.95),  # nothing passes the ceiling
        ("self", "human_correction", 0.4, 0.95),  # human corrections start at 0.95
    ],
)
def test_confidence_caps_by_signal_and_kind(agent, signal, kind, proposed, expected):
    body = agent.submit(signal=signal, kind=kind, confidence=proposed).json()
    assert body["confidence"] == expected
    assert Entry.objects.get(pk=body["id"]).base_confidence == pytest.approx(expected)


def test_field_errors_name_every_bad_field(agent):
    response = agent.submit(colour="red", evidence=[{"kind": "review", "signal": "self", "excerpt": "x", "mood": 1}])
    assert response.status_code == 422  # unknown fields are refused, not silently dropped
    assert response.json()["errors"] == {"colour": ["Unknown field."], "evidence[0].mood": ["Unknown field."]}
    response = agent.submit(
        scope="Acme/Billing API",
        kind="rumour",
        trigger="t" * 501,
        content="",
        confidence=1.5,
        signal="gut",
        review_by="next week",
        conditions=7,
        evidence=[{"kind": "tool_output", "signal": "external", "excerpt": ""}],
    )
    errors = response.json()["errors"]
    assert set(errors) == {
        "scope",
        "kind",
        "trigger",
        "content",
        "confidence",
        "signal",
        "review_by",
        "conditions",
        "evidence[0].excerpt",
    }
    assert "Illegal scope segment 'Acme'" in errors["scope"][0]
    assert errors["trigger"] == ["At most 500 characters (this has 501)."]
    assert errors["confidence"] == ["A number from 0 to 1."]
    assert not Entry.objects.exists()


def test_a_scope_with_spaces_around_it_is_refused_with_the_rule_not_trimmed(agent):
    response = agent.submit(scope=" acme/billing-api ")
    assert response.status_code == 422
    assert response.json()["errors"]["scope"] == [
        "No spaces before or after a scope (' acme/billing-api '): a scope is segments of a-z, 0-9, '.', '_' "
        "or '-', joined by '/'."
    ]
    assert not Entry.objects.exists()
    response = agent.get("memory", scope="acme/billing-api ")
    assert response.status_code == 422 and "No spaces before or after a scope" in response.json()["errors"]["scope"][0]


def test_the_described_scope_pattern_forbids_spaces(client):
    schema = client.get("/api/v1/openapi.json").json()
    candidate = schema["components"]["schemas"]["Candidate"]["properties"]["scope"]
    assert "No spaces, also none around it" in candidate["description"]
    pattern = re.compile(candidate["pattern"])
    assert pattern.match("acme/billing-api")
    assert not any(pattern.match(s) for s in (" acme/billing-api", "acme/billing-api ", "acme/billing api"))


def test_content_over_4000_characters_is_refused(agent):
    errors = agent.submit(content="y" * 4001).json()["errors"]
    assert errors == {"content": ["At most 4000 characters (this has 4001)."]}


def test_writing_outside_the_tokens_scopes_is_403(agent):
    response = agent.submit(scope="acme/web")
    assert response.status_code == 403 and "acme/web" in response.json()["error"]
    # a sibling that merely shares the prefix text is outside too
    assert agent.submit(scope="acme/billing-api-v2").status_code == 403
    assert not Entry.objects.exists()


def test_exact_duplicate_of_an_active_entry_adds_evidence_instead(agent, approved):
    active = approved(
        scope="acme/billing-api",
        trigger="Editing config in the container",
        content="Confirm the repository root first.",
    )
    response = agent.submit(
        scope="acme/billing-api",
        trigger="editing CONFIG in the  container!",
        content="Confirm the repository root first",
        evidence=[{"kind": "test_result", "signal": "external", "excerpt": "passed after cd"}],
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["id"], body["created"], body["duplicate_of"], body["evidence_added"]) == (
        active.pk,
        False,
        active.pk,
        1,
    )
    assert Entry.objects.count() == 1
    assert Evidence.objects.filter(entry=active, excerpt="passed after cd").exists()
    assert Event.objects.filter(entry=active, action="resubmit").exists()


def test_near_duplicates_are_created_and_linked(agent, approved):
    active = approved(
        scope="acme/billing-api",
        trigger="Editing config files inside the billing-api container",
        content="Confirm the repository root with git rev-parse before editing config.",
    )
    body = agent.submit(
        scope="acme/billing-api/container",
        trigger="Editing config files in the billing-api container",
        content="Confirm the repository root with git rev-parse before you edit config files.",
    ).json()
    assert body["created"] is True and body["duplicates"] == [active.pk]
    assert Entry.objects.get(pk=body["id"]).similar_links.get().similar_id == active.pk


def test_secrets_are_redacted_and_flagged(agent):
    body = agent.submit(content="Log in with password: hunter2hunter2 then run the migration.").json()
    assert body["flags"] == [{"kind": "redacted", "detail": "password removed from content"}]
    entry = Entry.objects.get(pk=body["id"])
    assert "hunter2hunter2" not in entry.content and "[REDACTED: password]" in entry.content


# --- POST /candidates/batch ------------------------------------------------------------------------------


def test_batch_answers_in_order_and_one_bad_item_blocks_nothing(agent):
    items = [
        api_candidate(trigger="first lesson trigger"),
        api_candidate(trigger=""),
        api_candidate(scope="acme/web"),
        api_candidate(trigger="fourth lesson trigger"),
        "not an object",
    ]
    response = agent.post("candidates/batch", {"candidates": items})
    assert response.status_code == 200
    body = response.json()
    results = body["results"]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r["ok"] for r in results] == [True, False, False, True, False]
    assert results[1]["errors"] == {"trigger": ["This field is required."]}
    assert results[2]["status"] == 403
    assert (body["created"], body["failed"]) == (2, 3)
    assert set(Entry.objects.values_list("pk", flat=True)) == {results[0]["id"], results[3]["id"]}


def test_batch_limits(agent):
    assert agent.post("candidates/batch", {"candidates": []}).status_code == 422
    response = agent.post("candidates/batch", {"candidates": [api_candidate()] * 501})
    assert response.status_code == 422 and "At most 500" in response.json()["errors"]["candidates"][0]


# --- GET /memory ---------------------------------------------------------------------------------------


def test_memory_returns_active_entries_of_the_scope_and_its_ancestors(agent, approved, make_candidate):
    own = approved(
        scope="acme/billing-api/container",
        trigger="Editing config in the container",
        content="Confirm the repository root first.",
    )
    parent = approved(
        scope="acme/billing-api",
        trigger="Running billing tests",
        content="Use the ledger fixture, never the live ledger.",
    )
    approved(scope="acme/billing-api/worker", trigger="Restarting the worker", content="Drain the queue first.")
    make_candidate(scope="acme/billing-api/container", trigger="A pending one", content="Not yet reviewed.")
    response = agent.retrieve(scope="acme/billing-api/container", k=5)
    assert response.status_code == 200
    body = response.json()
    assert {e["id"] for e in body["entries"]} == {own.pk, parent.pk}  # not the sibling, not the pending one
    assert set(body["entries"][0]) >= {
        "id",
        "kind",
        "scope",
        "trigger",
        "content",
        "boundary",
        "confidence",
        "signal",
        "score",
    }
    retrieval = Retrieval.objects.get(pk=body["retrieval_id"])
    assert sorted(retrieval.entry_ids) == sorted([own.pk, parent.pk])
    assert RetrievedEntry.objects.filter(retrieval=retrieval).count() == 2
    own.refresh_from_db()
    assert own.retrieval_count == 1 and own.last_retrieved_at is not None


def test_memory_ranks_by_relevance_and_honours_k(agent, approved):
    ledger = approved(
        scope="acme/billing-api",
        trigger="Running the ledger migration",
        content="Take the ledger lock before migrating ledger tables.",
    )
    approved(scope="acme/billing-api", trigger="Writing invoices as PDF", content="Embed the fonts.")
    approved(scope="acme/billing-api", trigger="Calling Stripe", content="Send an idempotency key.")
    body = agent.retrieve(scope="acme/billing-api", q="ledger migration", k=1).json()
    assert [e["id"] for e in body["entries"]] == [ledger.pk]


def test_memory_drops_entries_below_the_retrieval_floor(agent, approved):
    low = approved(scope="acme/billing-api", trigger="Low one", content="Barely believed.", confidence=0.4)
    body = agent.retrieve(scope="acme/billing-api", min_confidence=0).json()
    assert body["min_confidence"] == 0.5
    assert low.pk not in [e["id"] for e in body["entries"]]


def test_memory_drops_near_duplicates(agent, approved):
    first = approved(
        scope="acme/billing-api",
        trigger="Editing config in the container",
        content="Confirm the repository root first, then edit the config.",
    )
    approved(
        scope="acme/billing-api/container",
        trigger="Editing config in the container",
        content="Confirm the repository root first and then edit the config.",
    )
    ids = [e["id"] for e in agent.retrieve(scope="acme/billing-api/container", q="config container").json()["entries"]]
    assert len(ids) == 1 and ids[0] in (first.pk, first.pk + 1)


def test_context_separates_agreements_validated_lessons_and_inferences(agent, approved):
    approved(
        scope="acme/billing-api",
        kind="human_correction",
        trigger="Rounding amounts",
        content="Use Decimal, never float.",
        signal="external",
    )
    approved(scope="acme/billing-api", trigger="Running tests", content="Use the ledger fixture.", signal="external")
    approved(scope="acme/billing-api", trigger="Deploying", content="Maybe drain the queue first.", signal="self")
    context = agent.retrieve(scope="acme/billing-api").json()["context"]
    agreed = context.index("## Agreed with people")
    validated = context.index("## Validated lessons")
    inferred = context.index("## Unvalidated inferences")
    assert agreed < context.index("Use Decimal, never float.") < validated
    assert validated < context.index("Use the ledger fixture.") < inferred < context.index("Maybe drain")


def test_context_fits_the_budget_and_lists_only_what_fits(agent, approved):
    for n in range(6):
        approved(
            scope="acme/billing-api",
            trigger=f"Situation number {n} of many",
            content=f"Lesson {n}: " + "careful words " * 10,
        )
    body = agent.retrieve(scope="acme/billing-api", budget_chars=450, k=6).json()
    assert len(body["context"]) <= 450
    assert 1 <= len(body["entries"]) < 6
    assert all(f"[#{e['id']} " in body["context"] for e in body["entries"])
    assert sorted(Retrieval.objects.get(pk=body["retrieval_id"]).entry_ids) == sorted(e["id"] for e in body["entries"])


# Shared with POST /memory/search, which refuses the same parameters with the same answer.
MEMORY_PARAMETER_ERRORS = [
    ({"scope": "Not A Scope"}, "scope"),
    ({"scope": "acme/billing-api", "k": "21"}, "k"),
    ({"scope": "acme/billing-api", "k": "many"}, "k"),
    ({"scope": "acme/billing-api", "min_confidence": "2"}, "min_confidence"),
    ({"scope": "acme/billing-api", "budget_chars": "10"}, "budget_chars"),
    ({}, "scope"),
]


@pytest.mark.parametrize("params, field", MEMORY_PARAMETER_ERRORS)
def test_memory_parameter_errors(agent, params, field):
    response = agent.get("memory", **params)
    assert response.status_code == 422 and field in response.json()["errors"]


def test_memory_outside_the_tokens_scopes_is_403(agent):
    assert agent.retrieve(scope="acme/web").status_code == 403
    assert agent.retrieve(scope="acme").status_code == 403  # a parent of the token's scope is outside it
    assert not Retrieval.objects.exists()


# --- entries -------------------------------------------------------------------------------------------


def test_entry_detail_with_evidence_and_events(agent, approved):
    entry = approved(
        scope="acme/billing-api", evidence=[{"kind": "tool_output", "signal": "external", "excerpt": "exit 1"}]
    )
    body = agent.get(f"entries/{entry.pk}").json()
    assert body["id"] == entry.pk and body["status"] == "active"
    assert [e["excerpt"] for e in body["evidence"]] == ["exit 1"]
    assert [e["action"] for e in body["events"]] == ["submit", "approve"]


def test_entries_outside_scope_or_missing_are_404_alike(agent, approved):
    other = approved(scope="acme/web")
    outside = agent.get(f"entries/{other.pk}")
    missing = agent.get("entries/999999")
    assert outside.status_code == missing.status_code == 404
    assert outside.json() == missing.json()


def test_add_evidence_to_an_entry(agent, approved):
    entry = approved(scope="acme/billing-api")
    response = agent.post(
        f"entries/{entry.pk}/evidence",
        {
            "kind": "test_result",
            "signal": "independent",
            "excerpt": "green on CI",
            "polarity": "supports",
            "task_ref": "task-77",
        },
    )
    assert response.status_code == 201
    assert response.json()["evidence"]["excerpt"] == "green on CI"
    assert Evidence.objects.get(entry=entry, task_ref="task-77").recorded_by_label == "agent:billing-agent"
    assert agent.post(f"entries/{entry.pk}/evidence", {"kind": "gossip", "signal": "self", "excerpt": "x"}).json()[
        "errors"
    ] == {"kind": ["One of: tool_output, test_result, user_statement, review, task_outcome, reflection."]}


# --- schema and docs --------------------------------------------------------------------------------------


def test_openapi_schema_and_docs_page(client):
    schema = client.get("/api/v1/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    assert set(schema["paths"]) == {
        "/candidates",
        "/candidates/batch",
        "/memory",
        "/memory/search",
        "/feedback",
        "/evaluation",
        "/export",
        "/entries/{id}",
        "/entries/{id}/evidence",
        "/skills",
        "/skills/{slug}",
        "/skills/{slug}/trials",
        "/token",
        "/forget-requests",
        "/memory-tests/run",
    }
    page = client.get("/api/v1/docs").content.decode()
    assert "GET /api/v1/memory" in page and "POST /api/v1/feedback" in page and "GET /api/v1/evaluation" in page
    assert "GET /api/v1/skills" in page and "POST /api/v1/skills/{slug}/trials" in page
    assert "POST /api/v1/memory-tests/run" in page


def test_a_contradiction_with_an_active_entry_opens_a_conflict(agent, approved):

    active = approved(
        scope="acme/billing-api",
        trigger="Updating a feature branch before review",
        content="Always rebase the feature branch onto main.",
        conditions=[],
    )
    body = agent.submit(
        scope="acme/billing-api/container",
        trigger="Updating a feature branch before review",
        content="Never rebase the feature branch onto main; merge main into it.",
        conditions=[],
    ).json()
    conflict = Conflict.objects.get()
    assert body["conflicts"] == [conflict.pk]
    assert {conflict.entry_a_id, conflict.entry_b_id} == {active.pk, body["id"]}
    assert conflict.state == "open" and conflict.detected_by == "ingest" and "rebase" in conflict.reason


def test_batch_handles_duplicates_of_existing_entries_and_within_the_batch(agent, approved):
    active = approved(
        scope="acme/billing-api",
        trigger="Editing config in the container",
        content="Confirm the repository root first.",
    )
    again = api_candidate(
        scope="acme/billing-api",
        trigger="Editing config in the container",
        content="Confirm the repository root first.",
    )
    twice = api_candidate(
        trigger="A brand new lesson",
        content="Said twice in one batch.",
        evidence=[{"kind": "review", "signal": "external", "excerpt": "seen it"}],
    )
    body = agent.post("candidates/batch", {"candidates": [again, twice, twice]}).json()
    first, second, third = body["results"]
    assert (first["created"], first["duplicate_of"]) == (False, active.pk)
    assert second["created"] is True and (third["created"], third["duplicate_of"]) == (False, second["id"])
    assert (body["created"], body["duplicates"]) == (1, 2)
    assert Evidence.objects.filter(entry_id=second["id"], excerpt="seen it").count() == 2
    assert Event.objects.filter(entry_id=second["id"], action="resubmit").count() == 1
    assert Event.objects.filter(entry=active, action="resubmit").count() == 1


def test_batch_falls_back_to_item_by_item_when_the_database_refuses(agent, monkeypatch):

    def refuse(*args, **kwargs):
        raise DatabaseError("simulated")

    monkeypatch.setattr(submissions, "_write_batch", refuse)
    body = agent.post(
        "candidates/batch", {"candidates": [api_candidate(trigger="one"), api_candidate(trigger="")]}
    ).json()
    assert [r["ok"] for r in body["results"]] == [True, False]
    assert Entry.objects.get(pk=body["results"][0]["id"]).trigger == "one"


def test_batch_links_near_duplicates_like_single_submissions(agent, approved):
    active = approved(
        scope="acme/billing-api",
        trigger="Editing config files inside the billing-api container",
        content="Confirm the repository root with git rev-parse before editing config.",
    )
    near = dict(
        trigger="Editing config files in the billing-api container",
        content="Confirm the repository root with git rev-parse before you edit config files.",
    )
    body = agent.post(
        "candidates/batch",
        {
            "candidates": [
                api_candidate(scope="acme/billing-api/container", **near),
                api_candidate(scope="acme/web", trigger="Unrelated", content="Nothing alike here at all."),
                api_candidate(scope="acme/billing-api", trigger="Something else entirely", content="Another topic."),
            ]
        },
    ).json()
    assert [r.get("duplicates") for r in body["results"]] == [[active.pk], None, []]
    assert body["results"][1]["status"] == 403


def test_batch_finds_conflicts_above_and_below_each_candidates_scope(make_agent, approved):
    agent = make_agent("acme-agent", scopes=["acme"])  # reads the parent scope, so the answer may name it
    parent = approved(
        scope="acme",
        trigger="Updating a feature branch before review",
        content="Always rebase the feature branch onto main.",
        conditions=[],
    )
    child = approved(
        scope="acme/billing-api/container",
        trigger="Restarting the billing worker after deploys",
        content="Never drain the queue before restarting the worker.",
        conditions=[],
    )
    elsewhere = approved(
        scope="acme/web",
        trigger="Restarting the billing worker after deploys",
        content="Never drain the queue before restarting the worker.",
        conditions=[],
    )
    body = agent.post(
        "candidates/batch",
        {
            "candidates": [
                api_candidate(
                    scope="acme/billing-api",
                    trigger="Restarting the billing worker after deploys",
                    content="Always drain the queue before restarting the worker.",
                    conditions=[],
                ),
                api_candidate(
                    scope="acme/billing-api", trigger="Nothing to do with either", content="Write tests first."
                ),
                api_candidate(
                    scope="acme/billing-api",
                    trigger="Updating a feature branch before review",
                    content="Never rebase the feature branch; merge main into it.",
                    conditions=[],
                ),
            ]
        },
    ).json()
    below, unrelated, above = body["results"]
    assert [Conflict.objects.get(pk=pk).entry_a_id for pk in below["conflicts"]] == [child.pk]
    assert unrelated["conflicts"] == []
    assert [Conflict.objects.get(pk=pk).entry_a_id for pk in above["conflicts"]] == [parent.pk]
    assert not Conflict.objects.filter(entry_a=elsewhere).exists()  # acme/web does not apply with billing-api


def test_an_exact_duplicate_is_one_of_the_same_scope_only(agent, approved):
    other_scope = approved(
        scope="acme/billing-api/container",
        trigger="Editing config in the container",
        content="Confirm the repository root first.",
    )
    body = agent.post(
        "candidates/batch",
        {
            "candidates": [
                api_candidate(
                    scope="acme/billing-api",
                    trigger="Editing config in the container",
                    content="Confirm the repository root first.",
                )
            ]
        },
    ).json()
    [result] = body["results"]
    assert result["created"] is True and result["duplicate_of"] is None
    assert result["duplicates"] == [other_scope.pk]  # a near duplicate below it, linked, not merged


def test_a_batch_costs_the_same_number_of_queries_whatever_its_size(agent, approved):

    approved(scope="acme/billing-api", trigger="Editing config in the container", content="Confirm the root first.")

    def queries_for(n, tag):
        items = [
            api_candidate(
                scope="acme/billing-api",
                trigger=f"Lesson {tag} number {i}",
                content=f"Check the {tag} log {i} before retrying the job.",
            )
            for i in range(n)
        ]
        with CaptureQueriesContext(connection) as captured:
            body = agent.post("candidates/batch", {"candidates": items}).json()
        assert body["created"] == n
        return len(captured)

    queries_for(1, "warm")  # the token's first use is recorded once
    small, large = queries_for(3, "alpha"), queries_for(40, "beta")
    if connection.vendor == "postgresql":  # one statement per check for the whole batch
        assert small == large
    else:  # one pool per scope of the batch (one here) for near duplicates and conflict partners both;
        # SQLite's parameter limit splits inserts
        assert 0 <= large - small <= 2


def test_a_contradiction_about_an_action_postgres_does_not_index_is_still_found(agent, approved):
    """ "over" is an English stop word: PostgreSQL keeps no index key for it, so partners are looked up by
    the action's objects instead."""

    active = approved(
        scope="acme/billing-api",
        trigger="Sizing the worker pool of billing",
        content="Always over-provision the worker pool.",
        conditions=[],
    )
    body = agent.post(
        "candidates/batch",
        {
            "candidates": [
                api_candidate(
                    scope="acme/billing-api",
                    trigger="Sizing the worker pool of billing",
                    content="Never over-provision the worker pool.",
                    conditions=[],
                )
            ]
        },
    ).json()
    [conflict_id] = body["results"][0]["conflicts"]
    assert Conflict.objects.get(pk=conflict_id).entry_a_id == active.pk


def test_a_near_duplicate_with_a_trigger_of_stop_words_is_still_found(agent, approved):
    active = approved(
        scope="acme/billing-api",
        trigger="When it is off",
        conditions=[],
        content="Restart the billing worker with systemctl restart billing-worker and check its log.",
    )
    body = agent.submit(
        scope="acme/billing-api",
        trigger="When it is off",
        conditions=[],
        content="Restart the billing worker with systemctl restart billing-worker, then check the log.",
    ).json()
    assert body["duplicates"] == [active.pk]


def test_the_docs_page_renders_schemas_as_tables_not_python_dicts(client):
    page = client.get("/api/v1/docs").content.decode()
    assert "<th scope=\"col\">field</th><th scope=\"col\">type</th><th scope=\"col\">required</th>" in page
    # The candidate's body, its nested evidence, and an answer's fields, each a row in words.
    assert (
        "<td><code>trigger</code></td><td>text, at least 1 and at most 500 characters</td><td>yes</td><td>When it applies.</td>"
        in page
    )
    assert "<td><code>evidence[].signal</code></td><td>one of: self, independent, external</td><td>yes</td>" in page
    assert (
        "<td><code>conditions</code></td><td>list of up to 50 items, each text, at most 200 characters</td><td>no</td>"
        in page
    )
    assert (
        "<td><code>k</code></td><td>query</td><td>whole number from 1 to 20</td><td>no</td><td>Default: 5.</td>" in page
    )
    for python in ("{'type'", "&#x27;type&#x27;", "{&#x27;", "'$ref'"):
        assert python not in page
