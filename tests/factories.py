"""Every helper that builds test data, in one module: users and clients, the agent API client, candidates
and active entries, the state the background sweeps find (entries with a history of use, archived entries,
evidence, retrievals, outcomes), skill nominations and trial reports, and another worker's sweep lock.

State is built through the public services and sweeps, as the product reaches it, with `at` moments
relative to AS_OF; the one state no service reaches (an active entry never verified) says so."""

import datetime
import json
import math
import re
import threading
import uuid
from contextlib import contextmanager

import psycopg
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test import Client
from django.test.utils import override_settings
from playwright.sync_api import expect

from curation import services, sweeps
from curation.rules import clock, lifecycle
from curation.models import (
    AgentToken,
    Entry,
    Evidence,
    Retrieval,
    ScopeGrant,
    ScopePolicy,
    SkillProposal,
    Status,
    TaskRun,
)
from curation.rules.scope_policies import HOLDOUT
from curation.rules.access import EVERY_SCOPE
from curation.selectors import forgets
from curation.services import skills, usage
from curation.services.releases import publish_version
from curation.services.scope_policies import set_scope_policy
from curation.services.tokens import create_agent_token
from curation.sweeps import run_sweep

PASSWORD = "correct-horse-battery"
POLICY_LEAD = "policy-lead"  # who sets the scope policies test data needs
AS_OF = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc)


# --- people -------------------------------------------------------------------------------------------------


def make_user(username, role=None, scopes=None):
    """A user with `role` and scope grants `scopes`; left out, someone with a role is granted every scope
    (a grant like any other: `scopes=()` makes a person with a role and no scopes)."""
    user = User.objects.create_user(username, password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    if scopes is None:
        scopes = [EVERY_SCOPE] if role else []
    for prefix in scopes:
        ScopeGrant.objects.create(user=user, prefix=prefix)
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions


def set_holdout(prefix: str, fraction: float, rules_only: float = 0.0) -> ScopePolicy:
    """A holdout under `prefix`, set by a lead through the scope policies service (for tests about the arms)."""
    lead = User.objects.filter(username=POLICY_LEAD).first() or make_user(POLICY_LEAD, "lead")
    return set_scope_policy(
        HOLDOUT, data={"prefix": prefix, "fraction": fraction, "rules_only": rules_only}, actor=lead
    ).policy


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def page_text(response) -> str:
    """A console page without its CSRF token (masked afresh in every answer), so that two answers that
    must say the same thing can be compared whole."""
    return re.sub(r"""("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+""", r"\1", response.content.decode())


def log_in(page, live_server, username):
    """Sign in through the login form in a real browser; lands on the candidates queue."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/review/candidates/$"))


# --- concurrent requests ---------------------------------------------------------------------------------


def run_together(calls, timeout: float = 60) -> list:
    """Run each call in its own thread (its own database connection), all released at once by a barrier;
    the result of each, or the exception it raised, in order. Needs django_db(transaction=True): the
    threads see only what is committed."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait()
            results[index] = call()
        except Exception as exc:  # handed back to the test, which says what it expected
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return results


# --- the agent API ---------------------------------------------------------------------------------------


def publish_pending(*, written_directly=(), **options):
    """Publish whatever is pending, as a lead would after reading the releases page: agents read only the
    published version, so a test that approves something and then reads it as an agent publishes between.
    `written_directly`: entries a test changed with a plain UPDATE (no service, so no Event names them).
    Answers the new version, or None when nothing was pending."""
    try:
        return publish_version(
            actor=None,
            actor_label="tests:publish",
            summary="publish what the test did",
            acknowledge=True,
            also_entry_ids=[e.pk for e in written_directly],
            **options,
        )
    except ValidationError:
        return None


class Agent:
    """A test client that speaks to the agent API with one token."""

    def __init__(self, key: str, token=None):
        self.key, self.token = key, token
        self.publish_first = True  # publish_pending() before each read of memory or skills
        self.client = Client()

    def headers(self, extra=None):
        return {"HTTP_AUTHORIZATION": f"Bearer {self.key}", **(extra or {})}

    def post(self, path, body, *, content_type="application/json", **extra):
        if isinstance(body, bytes):  # sent as is, whatever charset the content type claims
            return self.client.generic(
                "POST", f"/api/v1/{path}", data=body, CONTENT_TYPE=content_type, **self.headers(extra)
            )
        data = body if isinstance(body, str) else json.dumps(body)
        if self.publish_first and path == "memory/search":
            publish_pending()
        return self.client.post(f"/api/v1/{path}", data=data, content_type=content_type, **self.headers(extra))

    def get(self, path, **params):
        if self.publish_first and path.startswith(("memory", "skills")):
            publish_pending()
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
    entry = services.create_candidate(
        data=candidate_data(**fields), evidence=list(evidence), actor_label="agent:ci", at=at
    )
    return services.approve_candidate(entry.pk, actor=actor, expected_version=entry.version, at=at)


# --- the state the background sweeps find -------------------------------------------------------------------


def clock_moving_a_day_a_reading(monkeypatch) -> None:
    """clock.now() a day later at each reading: what a read says at one moment says one number throughout."""
    start, readings = clock.now(), []

    def moving():
        readings.append(None)
        return start + datetime.timedelta(days=len(readings))

    monkeypatch.setattr(clock, "now", moving)


def days_before(days: float, moment: datetime.datetime = AS_OF) -> datetime.datetime:
    return moment - datetime.timedelta(days=days)


CI_AGENT = "ci"  # the agent token that retrieves, reports outcomes and adds evidence: "agent:ci"
CURATOR = "curator"  # the reviewer who approves the entries made here (and confirms them after a recheck)
_DEFAULT = object()


def _curator() -> User:
    user = User.objects.filter(username=CURATOR).first()
    return user or make_user(CURATOR, "reviewer")


def _ci_token() -> AgentToken:
    return AgentToken.objects.filter(name=CI_AGENT).first() or agent_token(CI_AGENT, scopes=["acme", "globex"])


def _starting_base(target: float, outcomes) -> float:
    """The proposed confidence from which `outcomes` (each success +step, each failure -step) end at `target`."""
    rules = lifecycle.rules()
    base = target
    for outcome in reversed(outcomes):
        base += -rules.success_step if outcome == "success" else rules.failure_step
    return round(base, 12)


def _days_to_fade(base: float) -> float:
    """Days without verification after which `base` has decayed to 0.29, just under the archive threshold."""
    rules = lifecycle.rules()
    return rules.decay_period_days * math.log((rules.archive_below - 0.01) / base) / math.log(rules.decay_factor)


def make_entry(
    *,
    base_confidence: float = _DEFAULT,
    last_verified_at=_DEFAULT,
    created_at=None,
    updated_at=None,
    status: str = Status.ACTIVE,
    archived_at=None,
    review_by=None,
    retrieval_count: int = 0,
    hit_count: int | None = None,
    utility_sum: float = 0.0,
    utility_n: int = 0,
    outcomes=None,
    confirm_failures: bool = True,
    signal: str = "independent",
    **text,
) -> Entry:
    """An entry in the state the sweeps find, reached the way the product reaches it:

    - an agent submits it at `created_at` (400 days before AS_OF unless said) and the curator approves it,
      which verifies it at `last_verified_at` (10 days before AS_OF unless said; `updated_at` names the same
      moment, for a test that cares when the row was written);
    - its uses are retrievals and reported outcomes in the hours before that verification, the last one at
      it: `utility_n` (or `hit_count`) outcomes, successes unless `outcomes` says, at `utility_sum / utility_n`
      each, and retrievals without an outcome up to `retrieval_count`. A failure sends the entry back for a
      recheck and the curator confirms it, unless `confirm_failures` is False (then it waits in the queue);
    - the agent proposes the confidence from which those uses end at `base_confidence` (0.8 unless said;
      None: it proposes 0.8 and the uses move the base as the rules say). A base above the self cap comes
      with a piece of external supporting evidence, which lifts the cap, unless the signal is external;
    - an archived entry was verified long enough before `archived_at` to have decayed under the threshold,
      and the archive sweep run as of `archived_at` archives it (and any other entry as faded by then).

    Raises ValueError for a state no service reaches. Answers the entry as stored."""
    if status not in (Status.ACTIVE, Status.ARCHIVED):
        raise ValueError(f"make_entry makes active or archived entries; reach {status} through the services")
    outcomes = list(outcomes) if outcomes is not None else ["success"] * (utility_n or hit_count or 0)
    if len(outcomes) != utility_n and utility_n:
        raise ValueError("utility_n counts the outcomes: give one or the other")
    if hit_count is not None and hit_count != len(outcomes):
        raise ValueError("every reported outcome is a hit: hit_count is the number of outcomes")
    if retrieval_count < len(outcomes):
        retrieval_count = len(outcomes)  # every outcome is reported on a retrieval
    archived = status == Status.ARCHIVED
    if base_confidence is _DEFAULT:
        base_confidence = 0.4 if archived else 0.8
    if archived:
        archived_at = archived_at or days_before(1)
        if last_verified_at is _DEFAULT:
            fading = base_confidence or lifecycle.rules().self_signal_cap  # None: as high as uses take it
            last_verified_at = archived_at - datetime.timedelta(days=_days_to_fade(fading))
    if updated_at is not None:
        if last_verified_at not in (_DEFAULT, updated_at):
            raise ValueError("an approval writes the row when it verifies it: updated_at is last_verified_at")
        last_verified_at = updated_at
    if last_verified_at is None:
        return never_verified_entry(
            base_confidence=base_confidence, created_at=created_at, review_by=review_by, signal=signal, **text
        )
    verified = days_before(10) if last_verified_at is _DEFAULT else last_verified_at
    approved_at = verified - datetime.timedelta(hours=len(outcomes))
    created_at = created_at or min(days_before(400), approved_at)
    if created_at > approved_at:
        raise ValueError("an entry is approved after it is submitted: created_at is after its approval")

    start = 0.8 if base_confidence is None else _starting_base(base_confidence, outcomes)
    entry = submitted(created_at, base=start, review_by=review_by, signal=signal, **text)
    curator = _curator()
    entry = services.approve_candidate(entry.pk, actor=curator, expected_version=entry.version, at=approved_at)
    retrieve(entry, at=approved_at, times=retrieval_count - len(outcomes))
    record_uses(
        entry,
        outcomes,
        end=verified,
        utility=utility_sum / utility_n if utility_n else None,
        confirm_failures=confirm_failures,
    )
    if archived:
        run_sweep("archive", as_of=archived_at)
    entry = Entry.objects.get(pk=entry.pk)
    reached = base_confidence is None or abs(entry.base_confidence - base_confidence) < 1e-9
    if not reached or entry.status != status:
        raise ValueError(
            f"not reachable through the services: base {base_confidence} and {status} asked, "
            f"base {entry.base_confidence:.4f} and {entry.status} reached"
        )
    return entry


def submitted(created_at, *, base: float, review_by=None, signal: str = "independent", **text) -> Entry:
    """A pending procedure, as an agent submits it, proposing `base` as its confidence."""
    fields = {
        "kind": "procedure",
        "scope": "acme/billing-api/container",
        "trigger": f"When deploying {uuid.uuid4().hex[:8]}",
        "content": "Run the smoke tests first.",
        "boundary": "",
        "conditions": [],
        **text,
    }
    lift_cap = base > lifecycle.rules().self_signal_cap and signal != "external"
    evidence = (
        [
            {
                "kind": "tool_output",
                "signal": "external",
                "excerpt": "CI run 4410 passed",
                "observed_at": created_at.isoformat(),
            }
        ]
        if lift_cap
        else []
    )
    review_by = review_by.isoformat() if review_by else None
    return services.create_candidate(
        data={**fields, "signal": signal, "confidence": base, "review_by": review_by},
        evidence=evidence,
        actor_label=f"agent:{CI_AGENT}",
        at=created_at,
    )


def never_verified_entry(*, base_confidence: float, created_at=None, **fields) -> Entry:
    """An active entry that was never verified (last_verified_at empty). No service leaves an active entry
    unverified (an approval verifies it, so does a revival), but the column allows it and the sweeps handle
    it (decay counts from the creation), so after a real submission and approval the verification is
    cleared in place: the one state here written directly."""
    created_at = created_at or days_before(400)
    entry = submitted(created_at, base=base_confidence, **fields)
    services.approve_candidate(entry.pk, actor=_curator(), expected_version=entry.version, at=created_at)
    Entry.objects.filter(pk=entry.pk).update(last_verified_at=None)
    return Entry.objects.get(pk=entry.pk)


def make_archived(*, archived_at, **fields) -> Entry:
    """An entry archived because its confidence decayed (base 0.4 unless said)."""
    return make_entry(status=Status.ARCHIVED, archived_at=archived_at, **fields)


def add_evidence_row(entry, *, signal, polarity="supports", observed_at, created_at=None) -> Evidence:
    """A test result the CI agent adds to the entry, observed at `observed_at` and recorded at `created_at`."""
    return services.add_evidence(
        entry.pk,
        data={
            "kind": "test_result",
            "signal": signal,
            "polarity": polarity,
            "excerpt": "CI run 4411 passed",
            "observed_at": observed_at.isoformat(),
        },
        actor_label=f"agent:{CI_AGENT}",
        at=created_at or observed_at,
    )


def retrieve(entry, *, at, times=1) -> None:
    """The CI agent is given the entry `times` times at `at`."""
    for _ in range(times):
        _retrieval(entry, at)


def _retrieval(entry: Entry, at) -> Retrieval:
    return usage.record_retrieval(token=_ci_token(), scope=entry.scope, query="", task_ref="", entries=[entry], at=at)


def record_uses(
    entry: Entry,
    outcomes,
    *,
    end: datetime.datetime = AS_OF,
    utility: float | None = None,
    confirm_failures: bool = True,
) -> None:
    """Tasks that used the entry: for each outcome, oldest first, one hour apart and the last at `end`, the CI
    agent retrieves it and reports the outcome (at `utility`, else 1 for a success and 0 for a failure).
    A failure sends the entry back for a recheck; the curator confirms it then unless `confirm_failures` is
    False. The outcomes move confidence by the design notes' rule (OUTCOME_RULE "steps"), so a history of
    outcomes ends at a base a test can name (_starting_base)."""
    outcomes = list(outcomes)
    for i, outcome in enumerate(outcomes):
        at = end - datetime.timedelta(hours=len(outcomes) - 1 - i)
        retrieval = _retrieval(entry, at)
        with override_settings(CURATION={**settings.CURATION, "OUTCOME_RULE": "steps"}):
            usage.record_feedback(
                token=retrieval.token, retrieval_id=retrieval.pk, outcome=outcome, utility=utility, at=at
            )
        if outcome != "success" and confirm_failures:
            queued = Entry.objects.get(pk=entry.pk)
            services.approve_candidate(entry.pk, actor=_curator(), expected_version=queued.version, at=at)


@contextmanager
def a_forget_being_approved():
    """An approval's transaction holding the forgetting lock alone (selectors.forgets.forgetting_alone), in
    another thread and connection, for as long as the block runs: PostgreSQL only."""
    holding, done, failed = threading.Event(), threading.Event(), []

    def approval():
        try:
            with transaction.atomic(), forgets.forgetting_alone():
                holding.set()
                done.wait(30)
        except Exception as exc:  # handed back to the test
            failed.append(exc)
            holding.set()
        finally:
            connection.close()

    thread = threading.Thread(target=approval)
    thread.start()
    assert holding.wait(10) and not failed
    try:
        yield
    finally:
        done.set()
        thread.join(10)


class holding_lock:
    """Another worker in the middle of a run: an advisory lock from a second connection on PostgreSQL,
    an older TaskRun still running elsewhere."""

    def __init__(self, task):
        self.task = task

    def __enter__(self):
        if connection.vendor == "postgresql":
            s = connection.settings_dict
            self.conn = psycopg.connect(
                dbname=s["NAME"],
                user=s["USER"],
                host=s["HOST"] or None,
                port=s["PORT"] or None,
                password=s["PASSWORD"] or None,
                autocommit=True,
            )
            assert self.conn.execute("SELECT pg_try_advisory_lock(%s)", [sweeps.runs.lock_key(self.task)]).fetchone()[0]
        else:
            self.run = TaskRun.objects.create(task=self.task, as_of=AS_OF)

    def __exit__(self, *exc):
        if connection.vendor == "postgresql":
            # Given back before the connection closes: a closed client's server process ends (and drops its
            # locks) a moment later, and a loaded machine let the next run find the lock still held.
            self.conn.execute("SELECT pg_advisory_unlock(%s)", [sweeps.runs.lock_key(self.task)])
            self.conn.close()
        else:
            TaskRun.objects.filter(pk=self.run.pk).update(state=TaskRun.State.SUCCEEDED)


# --- skill promotions ---------------------------------------------------------------------------------------

# Two lessons the near-duplicate measure pairs, on both databases, and two the contradiction detector does.
CONFIG = dict(
    trigger="Editing config files inside the billing-api container",
    content="Confirm the repository root with git rev-parse before editing config.",
)
NEAR = dict(
    trigger="Editing config files in the billing-api container",
    content="Confirm the repository root with git rev-parse before you edit config files.",
)
# A payroll lesson and a paraphrase of it that the near-duplicate measure pairs (forgetting a lesson and what
# says it again).
PAYROLL_LESSON = dict(
    trigger="Deploying the payroll service on Fridays",
    content="Always page Marguerite Okonkwo before deploying payroll, she holds the rollback keys.",
)
PAYROLL_PARAPHRASE = dict(
    trigger="When deploying payroll service on a Friday",
    content="Page Marguerite Okonkwo before any payroll deploy: she holds rollback keys.",
)
REBASE = dict(
    trigger="Updating a feature branch before review",
    content="Always rebase the feature branch onto main.",
    conditions=[],
)
NO_REBASE = dict(
    trigger="Updating a feature branch before review",
    content="Never rebase the feature branch; merge main into it.",
    conditions=[],
)

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


def ready_entry(*, hits: int = 12, utility: float = 0.9, outcomes=None, **fields) -> Entry:
    """An active procedure that passes every nomination gate unless a field says otherwise: `hits` uses,
    all successful (or `outcomes`, oldest first), at `utility` each, the last one a day before AS_OF."""
    outcomes = list(outcomes) if outcomes is not None else ["success"] * hits
    values = {
        **MIGRATE,
        "outcomes": outcomes,
        "utility_n": len(outcomes),
        "utility_sum": utility * len(outcomes),
        "base_confidence": None,
    }
    if fields.get("status", Status.ACTIVE) == Status.ACTIVE:
        values["last_verified_at"] = days_before(1)
    return make_entry(**{**values, **fields})


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
    return [
        skills.record_skill_trial(
            token=token, slug=proposal.slug, data={"outcome": o, "task_ref": f"{prefix}-{i}", "notes": ""}
        )
        for i, o in enumerate(outcomes)
    ]


# --- secrets and personal data ------------------------------------------------------------------------------

# The redaction suite's corpus: (format, how it appears in text, the value that must never be stored). Every
# format is tried in every text field, with punctuation around it (tests/unit/test_redaction.py,
# tests/api/test_secrets.py, tests/services/test_console_redaction.py).
SECRET_CORPUS = [
    ("AWS access key", "AKIAZ3MPLE7QWERTY123", "AKIAZ3MPLE7QWERTY123"),
    (
        "AWS secret key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("GitHub token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "GitHub fine-grained token",
        "github_pat_11ABCDEFG0abcdefghijklmn_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU",
        "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU",
    ),
    ("GitLab token", "glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"),
    ("Slack bot token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    (
        "Slack webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("Stripe key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("OpenAI key", "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"),
    ("Google API key", "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "abcdefghijklmnopqrstuvwxyz01234"),
    ("JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456ghi789", "eyJzdWIiOiIxMjM0In0"),
    (
        "bearer header",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9sadkjhasd8723hjkasd",
        "eyJhbGciOiJIUzI1NiJ9sadkjhasd8723hjkasd",
    ),
    ("basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"),
    ("password assignment", "password: Tr0ub4dor-and-3-more", "Tr0ub4dor-and-3-more"),
    ("password in prose", "the admin password is Sup3rS3cret!x", "Sup3rS3cret!x"),
    ("credential in URL", "postgres://admin:s3cr3tpass@db.internal/app", "s3cr3tpass"),
    (
        "RSA private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    (
        "OpenSSH private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    ("npm token", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "PyPI token",
        "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0",
        "AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0",
    ),
    (
        "SendGrid key",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDE",
        "abcdefghijklmnopqrstuvwxyz0123456789ABCDE",
    ),
    ("Twilio key", "SKabcdef0123456789abcdef0123456789", "SKabcdef0123456789abcdef0123456789"),
    (
        "Discord bot token",
        "MTAxMDEwMTAxMDEwMTAxMDEw.GhIjKl.abcdefghijklmnopqrstuvwxyzABCDEF",
        "abcdefghijklmnopqrstuvwxyzABCDEF",
    ),
    ("Telegram bot token", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"),
    ("Mailchimp key", "abcdef0123456789abcdef0123456789-us6", "abcdef0123456789abcdef0123456789"),
    (
        "Azure storage key",
        "AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij==",
        "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    ),
    ("session id", "session=Zk3mQ9pL2xV7rT4nB8wY1cH6jD5sF0gA", "Zk3mQ9pL2xV7rT4nB8wY1cH6jD5sF0gA"),
    ("e-mail address", "jane.doe@example-corp.com", "jane.doe@example-corp.com"),
    ("e-mail address spelled out", "jane dot doe at example dot com", "doe at example"),
    ("e-mail address in brackets", "jane [at] example-corp [dot] com", "jane [at] example-corp"),
    ("short password field", "pw: Hunter2-xyz", "Hunter2-xyz"),
    ("German password", "das Passwort lautet Sommer2026x", "Sommer2026x"),
    ("log in with a password", "Log in as root with Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("credentials as a pair", "the credentials are deploy / s3cr3t-Pass!x", "s3cr3t-Pass!x"),
    ("lower-case prose password", "the staging wifi password is correcthorsebattery", "correcthorsebattery"),
    ("AWS key split by a line break", "AKIAZ3MPLE7Q\nWERTY123", "WERTY123"),
    ("AWS key split by a zero-width space", "AKIAZ3MPLE7Q\u200bWERTY123", "WERTY123"),
    ("international phone", "+44 20 7946 0958", "7946 0958"),
    ("US phone", "(415) 555-0134", "555-0134"),
    ("card number", "4111 1111 1111 1111", "4111 1111 1111 1111"),
    ("compact card number", "5500005555555559", "5500005555555559"),
    ("IBAN", "GB82 WEST 1234 5698 7654 32", "1234 5698 7654"),
    ("compact IBAN", "DE89370400440532013000", "DE89370400440532013000"),
    ("US social security number", "123-45-6789", "123-45-6789"),
]


def database_dump() -> str:
    """Every row of every table, as text: what a pg_dump or sqlite .dump of this transaction would hold."""
    lines = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            lines += [repr(row) for row in cursor.fetchall()]
    return "\n".join(lines)


# How a value sits in a sentence: the detectors must find it with any of these around it.
SECRET_SURROUNDINGS = ["{}", "({})", "{}.", "'{}',", '"{}";', "<{}>", "[{}]!", "see {}. Then", "{}:"]
