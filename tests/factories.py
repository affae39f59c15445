"""Every helper that builds test data, in one module: users and clients, candidates and active entries,
the background-curation state the sweeps find (entries with exact numbers, archived entries, evidence,
retrievals, outcomes), skill nominations and trial reports, and another worker's sweep lock."""

import datetime
import json
import re
import uuid

import psycopg
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from playwright.sync_api import expect

from curation import services, sweeps
from curation.models import (
    AgentToken, Entry, Event, Evidence, Retrieval, RetrievedEntry, ScopeGrant, SkillProposal, Status, TaskRun,
)
from curation.services import skills
from curation.services.tokens import create_agent_token
from curation.similarity import fingerprint
from curation.sweeps import run_sweep

PASSWORD = "correct-horse-battery"
AS_OF = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc)


# --- people -------------------------------------------------------------------------------------------------

def make_user(username, role=None, scopes=()):
    user = User.objects.create_user(username, password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    for prefix in scopes:
        ScopeGrant.objects.create(user=user, prefix=prefix)
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def log_in(page, live_server, username):
    """Sign in through the login form in a real browser; lands on the candidates queue."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/review/candidates/$"))


# --- the agent API ---------------------------------------------------------------------------------------

class Agent:
    """A test client that speaks to the agent API with one token."""

    def __init__(self, key: str, token=None):
        self.key, self.token = key, token
        self.client = Client()

    def headers(self, extra=None):
        return {"HTTP_AUTHORIZATION": f"Bearer {self.key}", **(extra or {})}

    def post(self, path, body, *, content_type="application/json", **extra):
        if isinstance(body, bytes):  # sent as is, whatever charset the content type claims
            return self.client.generic("POST", f"/api/v1/{path}", data=body, CONTENT_TYPE=content_type,
                                       **self.headers(extra))
        data = body if isinstance(body, str) else json.dumps(body)
        return self.client.post(f"/api/v1/{path}", data=data, content_type=content_type, **self.headers(extra))

    def get(self, path, **params):
        return self.client.get(f"/api/v1/{path}", params, **self.headers())

    def submit(self, **overrides):
        return self.post("candidates", api_candidate(**overrides))

    def retrieve(self, scope="acme/billing-api/container", **params):
        return self.get("memory", scope=scope, **params)


def api_candidate(**overrides):
    data = candidate_data(signal="external")
    data.pop("confidence")
    data.update(overrides)
    return data


# --- candidates and active entries --------------------------------------------------------------------------

def candidate_data(**overrides):
    data = {
        "kind": "failure_lesson",
        "scope": "acme/billing-api/container",
        "trigger": "Editing config files inside the billing-api container",
        "content": "Confirm the repository root with `git rev-parse --show-toplevel` before editing config.",
        "boundary": "Does not apply on the host checkout, where the root is fixed.",
        "conditions": ["container", "config"],
        "signal": "self",
        "confidence": 0.7,
    }
    data.update(overrides)
    return data


def active(actor, at=None, evidence=(), **fields):
    """An active entry made the way a reviewer makes one: submitted by an agent, then approved."""
    entry = services.create_candidate(data=candidate_data(**fields), evidence=list(evidence), actor_label="agent:ci",
                                      at=at)
    return services.approve_candidate(entry.pk, actor=actor, expected_version=entry.version, at=at)


# --- the state the background sweeps find -------------------------------------------------------------------

def days_before(days: float, moment: datetime.datetime = AS_OF) -> datetime.datetime:
    return moment - datetime.timedelta(days=days)


def make_entry(**fields) -> Entry:
    base = fields.pop("base_confidence", 0.8)
    values = {
        "kind": "procedure",
        "scope": "acme/billing-api/container",
        "trigger": f"When deploying {uuid.uuid4().hex[:8]}",
        "content": "Run the smoke tests first.",
        "signal": "independent",
        "base_confidence": base,
        "confidence": fields.pop("confidence", base),
        "status": Status.ACTIVE,
        "created_at": days_before(400),
        "updated_at": days_before(400),
        "last_verified_at": days_before(10),
    }
    values.update(fields)
    return Entry.objects.create(**values)


def make_archived(*, archived_at, reason="decayed", **fields) -> Entry:
    return make_entry(status=Status.ARCHIVED, archived_at=archived_at, archive_reason=reason,
                      base_confidence=fields.pop("base_confidence", 0.4), confidence=fields.pop("confidence", 0.29),
                      **fields)


def add_evidence_row(entry, *, signal, polarity="supports", observed_at, created_at=None) -> Evidence:
    return Evidence.objects.create(
        entry=entry, kind="test_result", signal=signal, polarity=polarity, excerpt="CI run 4411 passed",
        observed_at=observed_at, created_at=created_at or observed_at, recorded_by_label="agent:ci",
    )


def retrieve(entry, *, at, times=1) -> None:
    token, _ = AgentToken.objects.get_or_create(name="ci", defaults={"key_prefix": "ci", "key_hash": "0" * 64})
    for _ in range(times):
        retrieval = Retrieval.objects.create(id=uuid.uuid4(), token=token, scope=entry.scope, entry_ids=[entry.pk],
                                             created_at=at)
        RetrievedEntry.objects.create(retrieval=retrieval, entry=entry, rank=1, created_at=at)


class holding_lock:
    """Another worker in the middle of a run: an advisory lock from a second connection on PostgreSQL,
    an older TaskRun still running elsewhere."""

    def __init__(self, task):
        self.task = task

    def __enter__(self):
        if connection.vendor == "postgresql":
            s = connection.settings_dict
            self.conn = psycopg.connect(dbname=s["NAME"], user=s["USER"], host=s["HOST"] or None,
                                        port=s["PORT"] or None, password=s["PASSWORD"] or None, autocommit=True)
            assert self.conn.execute("SELECT pg_try_advisory_lock(%s)", [sweeps.runs.lock_key(self.task)]).fetchone()[0]
        else:
            self.run = TaskRun.objects.create(task=self.task, as_of=AS_OF)

    def __exit__(self, *exc):
        if connection.vendor == "postgresql":
            self.conn.close()
        else:
            TaskRun.objects.filter(pk=self.run.pk).update(state=TaskRun.State.SUCCEEDED)


# --- skill promotions ---------------------------------------------------------------------------------------

MIGRATE = dict(
    kind="procedure",
    scope="acme/billing-api/container",
    trigger="Running migrations in the billing-api container",
    content="Run `python manage.py migrate` from /srv/app, not from /workspace.\n"
            "Check `python manage.py showmigrations` lists every migration as applied.\n"
            "Rollback: `python manage.py migrate billing <previous>` from /srv/app, then restart the worker.",
    boundary="Not on the host checkout, where `make migrate` sets the directory.",
    conditions=["container", "migrations"],
)


def record_uses(entry: Entry, outcomes, *, end: datetime.datetime = AS_OF) -> None:
    """Outcome Events as services/usage.py writes them, oldest first, one hour apart, the last at `end`."""
    outcomes = list(outcomes)
    Event.objects.bulk_create(
        Event(entry=entry, entry_label=entry.label, actor_label="agent:ci", action=f"outcome_{outcome}",
              entry_version=entry.version, created_at=end - datetime.timedelta(hours=len(outcomes) - 1 - i))
        for i, outcome in enumerate(outcomes)
    )


def ready_entry(*, hits: int = 12, utility: float = 0.9, outcomes=None, **fields) -> Entry:
    """An active procedure that passes every nomination gate unless a field says otherwise: `hits` uses,
    all successful (or `outcomes`, oldest first), at `utility` on average."""
    outcomes = list(outcomes) if outcomes is not None else ["success"] * hits
    values = {**MIGRATE, "hit_count": hits, "utility_n": hits, "utility_sum": utility * hits,
              "last_verified_at": days_before(1), "trigger": MIGRATE["trigger"]}
    values.update(fields)
    values.setdefault("fingerprint", fingerprint(values["trigger"], values["content"]))
    entry = make_entry(**values)
    record_uses(entry, outcomes)
    return entry


def nominate(at: datetime.datetime = AS_OF):
    run, sweep = run_sweep("skill_nomination", as_of=at)
    return sweep


def nominated(**fields) -> SkillProposal:
    entry = ready_entry(**fields)
    nominate()
    return SkillProposal.objects.get(nominated_entry=entry)


def agent_token(name: str = "skill-agent", scopes=("acme/billing-api",)):
    token, _ = create_agent_token(name=name, scopes=list(scopes))
    return token


def report(proposal: SkillProposal, outcomes=("success",) * 5, *, token=None, prefix: str = "task"):
    token = token or agent_token(f"trial-agent-{proposal.pk}-{prefix}", scopes=[proposal.scope])
    return [skills.record_skill_trial(token=token, slug=proposal.slug,
                                      data={"outcome": o, "task_ref": f"{prefix}-{i}", "notes": ""})
            for i, o in enumerate(outcomes)]
