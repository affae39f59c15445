"""The demo's lessons, as plain data: who submitted each one and when, its evidence, and what happened
to it afterwards; `timeline` puts all of it in time order. `manage.py seed_demo` replays that through
the services and the sweeps: nothing here writes."""

import datetime
import zlib

DEMO_TASK_PREFIX = "demo:"

BILLING = "agent:claude-code@billing"
WEB = "agent:codex@web"
FRONTEND = "agent:claude-code@web-frontend"
PIPELINE = "agent:pipeline-bot@globex"
K8S = "agent:k8s-operator@globex-infra"
SUPPORT = "agent:support-bot@initech"
JUDGE = "judge:review-model@ci"

# The scopes of the tokens of the agents whose retrievals, outcomes and trial runs are replayed.
AGENT_TOKEN_SCOPES = {
    BILLING: ("acme/billing-api",),
    WEB: ("acme/web",),
    FRONTEND: ("acme/web",),
    PIPELINE: ("globex/data-pipeline",),
}


def ev(kind, signal, excerpt, task="", polarity="supports"):
    """One piece of evidence as the services take it (observed_at is filled in when it is replayed)."""
    return {"kind": kind, "signal": signal, "polarity": polarity, "excerpt": excerpt, "task_ref": task}


def lesson(
    key,
    *,
    agent,
    day,
    task,
    kind,
    scope,
    trigger,
    content,
    signal,
    evidence=(),
    steps=(),
    boundary="",
    conditions=(),
    confidence=None,
    recheck_when="",
    review_by_days=None,
):
    """A demo entry: submitted `day` days ago by `agent`, then `steps` as (days ago, action, params)."""
    return {
        "key": key,
        "agent": agent,
        "day": day,
        "data": {
            "kind": kind,
            "scope": scope,
            "trigger": trigger,
            "content": content,
            "signal": signal,
            "boundary": boundary,
            "conditions": list(conditions),
            "confidence": confidence,
            "recheck_when": recheck_when,
            "source_task": DEMO_TASK_PREFIX + task,
        },
        "review_by_days": review_by_days,
        "evidence": list(evidence),
        "steps": list(steps),
    }


# What happened to a lesson after its submission, as (days ago, action, params):
#   approve, edit_approve, reject, defer: the lead's decision in the candidates queue (a reject retires
#     an active entry that is back in the queue for a recheck);
#   evidence: added by the agent, or by `by` ("lead" or another label);
#   use: a retrieval by the agent and the outcome of its task, 40 minutes later (a failure sends an active
#     entry back to the queue for a recheck); uses: n successful ones with a utility, `every` days apart;
#   sweep: a background task run as of that moment, which must act on this entry and on nothing else;
#   supersedes: the lead accepts the consolidation proposal in which this entry replaces `older`;
#   trials: trial runs of the entry's nominated skill, `every` days apart; approve_skill: the lead's approval.
# Reasons may name other demo entries as {key}; they are written as #id.
LESSONS = [
    # --- acme/billing-api/container ---------------------------------------------------------------
    lesson(
        "bc_migrate_root",
        agent=BILLING,
        day=88,
        task="task-2041",
        kind="failure_lesson",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Running migrations in the billing-api container",
        content="Run `python manage.py migrate` from /srv/app, not from /workspace. The container's working "
        "directory is the mounted checkout, which has no settings_local.py, so migrations run against "
        "a default SQLite file and report success while the Postgres schema stays old.",
        boundary="Does not hold on the host checkout, where `make migrate` sets the directory itself.",
        conditions=["container", "migrations", "working directory", "settings_local"],
        recheck_when="The Dockerfile's WORKDIR or the compose volume layout changes.",
        evidence=[
            ev(
                "tool_output",
                "external",
                "$ python manage.py migrate\nOperations to perform:\n  Apply all migrations: billing, auth\n"
                "Running migrations:\n  No migrations to apply.\n$ ls -la /workspace/db.sqlite3\n"
                "-rw-r--r-- 1 app app 131072 created 2s ago",
                "task-2041",
            ),
            ev(
                "test_result",
                "external",
                "tests/billing/test_invoice_totals.py: 14 passed after re-running migrate from /srv/app "
                "(before: 14 failed with 'column billing_invoice.tax_region does not exist')",
                "task-2041",
            ),
        ],
        steps=[(87, "approve", {"reason": "Reproduced in my own container: the sqlite file appears in /workspace."})],
    ),
    lesson(
        "bc_repo_root",
        agent=BILLING,
        day=80,
        task="task-2055",
        kind="failure_lesson",
        scope="acme/billing-api/container",
        signal="self",
        confidence=0.75,
        trigger="Editing config files inside the billing-api container",
        content="Confirm the repository root with `git rev-parse --show-toplevel` before editing config. "
        "/workspace and /srv/app both contain a config/ directory and only /srv/app/config is loaded.",
        boundary="Does not apply on the host checkout.",
        conditions=["container", "config", "repo root"],
        evidence=[
            ev(
                "reflection",
                "self",
                "I edited /workspace/config/billing.yaml twice and restarted the service before noticing it "
                "reads /srv/app/config/billing.yaml.",
                "task-2055",
            ),
            ev("tool_output", "external", "$ git rev-parse --show-toplevel\n/srv/app", "task-2055"),
        ],
        steps=[
            (
                78,
                "edit_approve",
                {
                    "changes": {
                        "boundary": "Does not apply on the host checkout, where the root is fixed, or in "
                        "the slim staging image, which has no /workspace mount."
                    },
                    "reason": "Boundary widened to the staging image; otherwise as submitted.",
                },
            )
        ],
    ),
    lesson(
        "bc_pip_cache",
        agent=BILLING,
        day=76,
        task="task-2062",
        kind="success_pattern",
        scope="acme/billing-api/container",
        signal="self",
        trigger="Installing Python packages in the billing-api container",
        content="Always pass --no-cache-dir to pip.",
        conditions=["pip", "container"],
        evidence=[ev("reflection", "self", "The image got 40 MB smaller when I used --no-cache-dir.", "task-2062")],
        steps=[
            (
                75,
                "reject",
                {
                    "reason": "Too generic, and the image already sets PIP_NO_CACHE_DIR=1; "
                    "nothing specific to this container."
                },
            )
        ],
    ),
    # The health-check chain: A is replaced by B, B by C.
    lesson(
        "bc_health_a",
        agent=BILLING,
        day=85,
        task="task-2047",
        kind="fact",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Checking whether the billing-api container is healthy",
        content="The health endpoint is http://localhost:8000/health; it returns 200 with {\"status\": \"ok\"}.",
        conditions=["health check", "container", "curl"],
        evidence=[ev("tool_output", "external", "$ curl -s localhost:8000/health\n{\"status\": \"ok\"}", "task-2047")],
        steps=[(84, "approve", {})],
    ),
    lesson(
        "bc_health_b",
        agent=BILLING,
        day=55,
        task="task-2150",
        kind="fact",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Checking whether the billing-api container is healthy",
        content="The health endpoint moved to http://localhost:8080/healthz when the service switched to "
        "gunicorn behind the envoy sidecar; port 8000 now refuses connections.",
        boundary="Does not hold for containers built before image tag 2024.05, which still serve :8000/health.",
        conditions=["health check", "container", "curl", "sidecar"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "$ curl -s localhost:8000/health\ncurl: (7) Failed to connect to localhost port 8000: "
                "Connection refused\n$ curl -s localhost:8080/healthz\n{\"status\": \"ok\"}",
                "task-2150",
            )
        ],
        steps=[
            (54, "approve", {"reason": "Matches the sidecar rollout notes."}),
            (54, "sweep", {"task": "consolidation"}),
            (54, "supersedes", {"older": "bc_health_a"}),
        ],
    ),
    lesson(
        "bc_health_c",
        agent=BILLING,
        day=20,
        task="task-2266",
        kind="procedure",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Checking whether the billing-api container is healthy",
        content="Use `curl -fsS 'http://localhost:8080/healthz?deep=1'`. The plain /healthz returns 200 even "
        "when the database is unreachable; deep=1 also checks the database and the Stripe webhook secret.",
        boundary="Not for the load balancer probe, which must stay on the cheap /healthz.",
        conditions=["health check", "container", "curl", "database"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "$ docker compose stop postgres\n$ curl -s localhost:8080/healthz\n{\"status\": \"ok\"}\n"
                "$ curl -s 'localhost:8080/healthz?deep=1'\n{\"status\": \"fail\", \"db\": \"unreachable\"}",
                "task-2266",
            ),
        ],
        steps=[
            (19, "approve", {}),
            (19, "sweep", {"task": "consolidation"}),
            (19, "supersedes", {"older": "bc_health_b"}),
        ],
    ),
    lesson(
        "bc_pytest_cache",
        agent=BILLING,
        day=70,
        task="task-2088",
        kind="failure_lesson",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Running the billing-api test suite inside the container",
        content="Run `pytest -p no:cacheprovider` in the container: the mounted checkout is read-only for the "
        "app user and the cache plugin fails with PermissionError on .pytest_cache.",
        boundary="Not needed on the host or in CI, where the checkout is writable.",
        conditions=["pytest", "container", "read-only mount"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "PermissionError: [Errno 13] Permission denied: '/workspace/.pytest_cache/v/cache/nodeids'",
                "task-2088",
            )
        ],
        steps=[
            (69, "approve", {}),
            (3.2, "use", {"outcome": "failure", "task": "task-2318"}),
            (
                3.1,
                "evidence",
                {
                    "evidence": ev(
                        "task_outcome",
                        "external",
                        "task-2318 failed: with -p no:cacheprovider the run still stopped with PermissionError on "
                        "/workspace/.coverage; coverage also writes to the read-only mount "
                        "(needs COVERAGE_FILE=/tmp/.coverage).",
                        "task-2318",
                        polarity="contradicts",
                    )
                },
            ),
        ],
    ),
    lesson(
        "bc_migrate_dup",
        agent=BILLING,
        day=6,
        task="task-2377",
        kind="procedure",
        scope="acme/billing-api/container",
        signal="self",
        trigger="Running Django migrations inside the billing-api container",
        content="Change to /srv/app before running `python manage.py migrate` in the container; from the mounted "
        "/workspace checkout the migrations go to a default SQLite file and the Postgres schema stays old.",
        conditions=["migrations", "container"],
        evidence=[
            ev(
                "reflection",
                "self",
                "Migrations 'succeeded' but the new column was missing; cwd was /workspace.",
                "task-2377",
            )
        ],
    ),
    lesson(
        "bc_repo_root_dup",
        agent=BILLING,
        day=4,
        task="task-2391",
        kind="failure_lesson",
        scope="acme/billing-api/container",
        signal="self",
        trigger="Editing YAML config in the billing-api container",
        content="Check the repository root with `git rev-parse --show-toplevel` before editing config files; "
        "only /srv/app/config is loaded, not /workspace/config.",
        boundary="Does not apply on the host checkout.",
        conditions=["container", "config"],
        evidence=[
            ev("reflection", "self", "Edited the wrong billing.yaml again; the change had no effect.", "task-2391")
        ],
    ),
    lesson(
        "bc_timezone",
        agent=BILLING,
        day=9,
        task="task-2360",
        kind="failure_lesson",
        scope="acme/billing-api/container",
        signal="independent",
        trigger="Comparing invoice due dates in tests run inside the billing-api container",
        content="The container runs with TZ=UTC while the CI runners use Europe/Berlin. Build due dates with "
        "`timezone.make_aware()` and freeze time with an aware datetime in tests that compare them.",
        boundary="Not needed for tests that only compare dates within one timezone.",
        conditions=["timezone", "tests", "due date", "container"],
        evidence=[
            ev(
                "test_result",
                "external",
                "FAILED tests/billing/test_due_dates.py::test_due_at_midnight - AssertionError: "
                "datetime(2024, 3, 31, 23, 0, tzinfo=UTC) != datetime(2024, 4, 1, 0, 0, tzinfo=Europe/Berlin)",
                "task-2360",
            ),
            ev(
                "review",
                "independent",
                "Second judge: the failure only reproduces when TZ differs; fix is sound.",
                "task-2360",
            ),
        ],
    ),
    lesson(
        "bc_rebuild",
        agent=BILLING,
        day=2.5,
        task="task-2402",
        kind="procedure",
        scope="acme/billing-api/container",
        signal="self",
        trigger="Restarting the billing-api container after changing requirements.txt",
        content="Rebuild the image with `docker compose build billing-api` instead of restarting: requirements "
        "are baked into the image and a restarted container keeps the old wheels.",
        conditions=["docker compose", "requirements", "container"],
        evidence=[
            ev("reflection", "self", "ImportError for the new dependency persisted after two restarts.", "task-2402")
        ],
    ),
    lesson(
        "bc_debugger",
        agent=BILLING,
        day=11,
        task="task-2349",
        kind="procedure",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Attaching a debugger to the billing-api container",
        content="Start it with `docker compose -f docker-compose.yml -f docker-compose.debug.yml up billing-api` "
        "and attach to port 5678; debugpy is only installed in the debug image.",
        boundary="Not possible in the staging container, which runs the slim image.",
        conditions=["debugger", "debugpy", "container"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "$ python -m debugpy --listen 0.0.0.0:5678 ...\n/usr/local/bin/python: No module named debugpy",
                "task-2349",
            )
        ],
    ),
    # --- acme/billing-api ---------------------------------------------------------------------------
    lesson(
        "ba_stripe_idem",
        agent=BILLING,
        day=82,
        task="task-2050",
        kind="failure_lesson",
        scope="acme/billing-api",
        signal="external",
        trigger="Retrying Stripe charge requests in billing-api",
        content="Reuse the original Idempotency-Key when retrying a charge. Generating a new key on retry created "
        "a duplicate charge for the same invoice in test mode.",
        boundary="Does not apply to read-only calls (GET /v1/charges), which need no key.",
        conditions=["stripe", "retry", "idempotency", "charges"],
        recheck_when="billing-api moves charges to a queue with its own deduplication.",
        evidence=[
            ev(
                "tool_output",
                "external",
                "stripe.Charge.list(metadata={'invoice': 'INV-1182'}) -> 2 charges: ch_3Pq...a1 (EUR 49.00), "
                "ch_3Pq...b7 (EUR 49.00)",
                "task-2050",
            )
        ],
        steps=[(81, "approve", {"reason": "Duplicate charge confirmed in the Stripe test dashboard."})],
    ),
    lesson(
        "ba_decimal",
        agent=BILLING,
        day=79,
        task="task-2063",
        kind="human_correction",
        scope="acme/billing-api",
        signal="external",
        trigger="Computing invoice totals in billing-api",
        content="Use Decimal and `billing.money.quantize()`, which rounds half-even; never float or round(). "
        "Finance reconciles to the cent with banker's rounding.",
        boundary="Display-only formatting in templates may use the |money filter, which calls the same helper.",
        conditions=["decimal", "rounding", "invoice", "money"],
        evidence=[
            ev(
                "user_statement",
                "external",
                "User: \"Don't round with round(); finance uses banker's rounding, there's a helper in "
                "billing/money.py.\"",
                "task-2063",
            )
        ],
        steps=[(79, "approve", {})],
        review_by_days=120,
    ),
    lesson(
        "ba_stripe_idem_dup",
        agent="agent:codex@billing",
        day=5,
        task="task-2385",
        kind="failure_lesson",
        scope="acme/billing-api",
        signal="self",
        trigger="Retrying a failed Stripe charge from billing-api",
        content="Keep the same Idempotency-Key when you retry a Stripe charge; a fresh key on retry creates a "
        "second charge for the invoice.",
        conditions=["stripe", "retry"],
        evidence=[ev("reflection", "self", "Noticed two charges for INV-2210 after my retry loop.", "task-2385")],
    ),
    lesson(
        "ba_fixture_order",
        agent=BILLING,
        day=14,
        task="task-2331",
        kind="failure_lesson",
        scope="acme/billing-api",
        signal="self",
        trigger="Loading fixtures for billing-api tests",
        content="Load `currencies.json` before `plans.json`; plans reference currency codes and loaddata fails "
        "with an IntegrityError otherwise.",
        boundary="Not needed when tests use the factory_boy factories, which create currencies on demand.",
        conditions=["fixtures", "loaddata", "tests"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "django.db.utils.IntegrityError: insert or update on table \"billing_plan\" violates foreign "
                "key constraint \"billing_plan_currency_id_fkey\"",
                "task-2331",
            )
        ],
    ),
    lesson(
        "ba_ledger_lock",
        agent=BILLING,
        day=8,
        task="task-2366",
        kind="failure_lesson",
        scope="acme/billing-api",
        signal="independent",
        trigger="Updating ledger balances concurrently in billing-api",
        content="Wrap balance updates in `select_for_update()` on the Account row; two webhook workers updating "
        "the same account lost an update.",
        conditions=["concurrency", "ledger", "webhooks", "select_for_update"],
        evidence=[
            ev(
                "test_result",
                "external",
                "tests/ledger/test_concurrent_webhooks.py::test_two_payments FAILED: "
                "expected balance 200.00, got 100.00",
                "task-2366",
            ),
            ev(
                "tool_output",
                "external",
                "Since PR #812 Account balances are updated with "
                "`Account.objects.filter(pk=...).update(balance=F('balance') + amount)`; the failing test patches the "
                "old save() path. select_for_update adds a lock without fixing anything.",
                "task-2366",
                polarity="contradicts",
            ),
        ],
        steps=[
            (
                6,
                "evidence",
                {
                    "by": "lead",
                    "evidence": ev(
                        "review",
                        "independent",
                        "Checked PR #812: the F() update covers Account but not CreditNote.balance, which still does "
                        "read-modify-write. The lesson may hold for credit notes only.",
                        "task-2366",
                    ),
                },
            )
        ],
    ),
    lesson(
        "ba_celery_eager",
        agent=BILLING,
        day=66,
        task="task-2097",
        kind="success_pattern",
        scope="acme/billing-api",
        signal="self",
        trigger="Testing billing-api Celery tasks",
        content="Set CELERY_TASK_ALWAYS_EAGER=True in every test so tasks run inline.",
        conditions=["celery", "tests"],
        evidence=[ev("reflection", "self", "Tests became deterministic once tasks ran eagerly.", "task-2097")],
        steps=[
            (
                64,
                "reject",
                {
                    "reason": "Against the team's testing guide: eager mode hides serialisation bugs. "
                    "Use the celery_worker fixture."
                },
            )
        ],
    ),
    lesson(
        "ba_stripe_version_old",
        agent=BILLING,
        day=80,
        task="task-2058",
        kind="fact",
        scope="acme/billing-api",
        signal="external",
        trigger="Calling the Stripe API from billing-api",
        content="Pin the Stripe API version to 2022-11-15 in the client (stripe.api_version).",
        conditions=["stripe", "api version"],
        evidence=[ev("tool_output", "external", "settings.py: STRIPE_API_VERSION = \"2022-11-15\"", "task-2058")],
        steps=[(79, "approve", {})],
    ),
    lesson(
        "ba_stripe_version_new",
        agent=BILLING,
        day=25,
        task="task-2241",
        kind="fact",
        scope="acme/billing-api",
        signal="external",
        trigger="Calling the Stripe API from billing-api",
        content="Pin the Stripe API version to 2024-06-20 (settings.STRIPE_API_VERSION). The 2022-11-15 pin was "
        "dropped when billing-api moved from Charges to PaymentIntents.",
        conditions=["stripe", "api version", "payment intents"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "git log -1 -- billing/settings.py: \"Move to PaymentIntents; bump Stripe API to 2024-06-20\"",
                "task-2241",
            )
        ],
        steps=[
            (24, "approve", {}),
            (24, "sweep", {"task": "consolidation"}),
            (24, "supersedes", {"older": "ba_stripe_version_old"}),
        ],
    ),
    lesson(
        "ba_pdf_fonts",
        agent=BILLING,
        day=89,
        task="task-2036",
        kind="fact",
        scope="acme/billing-api",
        signal="self",
        confidence=0.34,
        trigger="Generating PDF invoices in billing-api",
        content="WeasyPrint needs the DejaVu fonts; install fonts-dejavu-core or currency symbols render as "
        "empty boxes.",
        conditions=["pdf", "weasyprint", "fonts"],
        evidence=[ev("reflection", "self", "Guessing from a blank euro sign in one PDF; not reproduced.", "task-2036")],
        steps=[(88, "approve", {"reason": "Low confidence; let usage decide."}), (14, "sweep", {"task": "archive"})],
    ),
    lesson(
        "ba_openapi",
        agent=BILLING,
        day=13,
        task="task-2340",
        kind="procedure",
        scope="acme/billing-api",
        signal="external",
        trigger="Changing a serializer or endpoint in billing-api",
        content="Run `make openapi` and commit docs/openapi.yaml with the change; the contract test compares the "
        "committed schema with the generated one.",
        boundary="Not needed for changes to internal admin views, which are excluded from the schema.",
        conditions=["openapi", "schema", "contract test"],
        evidence=[
            ev(
                "test_result",
                "external",
                "FAILED tests/contract/test_schema.py::test_schema_is_current - generated schema differs "
                "from docs/openapi.yaml (3 paths changed)",
                "task-2340",
            )
        ],
    ),
    lesson(
        "ba_data_migration",
        agent=BILLING,
        day=7,
        task="task-2371",
        kind="failure_lesson",
        scope="acme/billing-api",
        signal="independent",
        trigger="Writing a data migration for billing-api",
        content="Use `apps.get_model()` inside RunPython and never import models directly; the direct import broke "
        "migration 0047 on fresh databases once Invoice gained a field.",
        boundary="Does not apply to management commands, which run against the current models.",
        conditions=["migrations", "RunPython", "data migration"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "django.db.utils.ProgrammingError: column billing_invoice.tax_region does not exist "
                "(while applying billing.0047_backfill_invoice_numbers)",
                "task-2371",
            )
        ],
    ),
    lesson(
        "ba_invoice_numbers",
        agent=BILLING,
        day=3.5,
        task="task-2398",
        kind="fact",
        scope="acme/billing-api",
        signal="self",
        trigger="Changing the invoice number format in billing-api",
        content="Invoice numbers must stay gapless per calendar year; coordinate with finance before touching "
        "InvoiceSequence.",
        conditions=["invoice numbers", "finance"],
        evidence=[
            ev(
                "reflection",
                "self",
                "Found a comment in billing/sequences.py: 'gapless — legal requirement'.",
                "task-2398",
            )
        ],
        steps=[
            (
                1.2,
                "defer",
                {
                    "hours": 72,
                    "reason": "Waiting for finance to confirm the gapless rule still "
                    "applies after the e-invoicing change.",
                },
            )
        ],
    ),
    # --- acme/web -----------------------------------------------------------------------------------
    lesson(
        "web_node",
        agent=WEB,
        day=77,
        task="task-2071",
        kind="failure_lesson",
        scope="acme/web",
        signal="external",
        trigger="Installing npm dependencies for acme/web",
        content="Run `nvm use` first (the repo's .nvmrc pins Node 20); `npm ci` on Node 22 fails in the node-sass "
        "postinstall.",
        boundary="Does not apply inside the web CI image, which ships Node 20.",
        conditions=["node", "npm ci", "nvm", "node-sass"],
        recheck_when="node-sass is replaced by sass (dart-sass).",
        evidence=[
            ev(
                "tool_output",
                "external",
                "gyp ERR! node -v v22.3.0\nnpm ERR! node-sass@7.0.3 postinstall: `node scripts/build.js`\n"
                "npm ERR! Exit status 1",
                "task-2071",
            )
        ],
        steps=[(76, "approve", {})],
    ),
    lesson(
        "web_node_dup",
        agent="agent:claude-code@web",
        day=2,
        task="task-2405",
        kind="procedure",
        scope="acme/web",
        signal="external",
        trigger="Running npm ci in acme/web",
        content="Switch to Node 20 with `nvm use` before `npm ci`; on Node 22 the node-sass postinstall fails.",
        conditions=["node", "npm ci"],
        evidence=[ev("tool_output", "external", "npm ERR! node-sass@7.0.3 postinstall: Exit status 1", "task-2405")],
    ),
    lesson(
        "web_env_local",
        agent=WEB,
        day=10,
        task="task-2352",
        kind="failure_lesson",
        scope="acme/web",
        signal="independent",
        trigger="Starting the acme/web dev server",
        content="Copy .env.example to .env.local first. Without it the dev server still starts, but every API "
        "call goes to the production API URL.",
        conditions=["dev server", "env", "configuration"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "[proxy] GET /api/orders -> https://api.acme.example/orders (200)",
                "task-2352",
            )
        ],
    ),
    lesson(
        "web_flaky_e2e",
        agent=WEB,
        day=5.5,
        task="task-2381",
        kind="success_pattern",
        scope="acme/web",
        signal="self",
        trigger="A Playwright test fails in acme/web CI",
        content="Retry a failed e2e test once before investigating; checkout.spec.ts is flaky on CI.",
        conditions=["playwright", "e2e", "ci", "flaky"],
        evidence=[
            ev("reflection", "self", "checkout.spec.ts passed on the second try last week.", "task-2381"),
            ev(
                "test_result",
                "external",
                "checkout.spec.ts failed 5 of 5 runs on main since #1432 (\"Pay now\" button disabled); a real "
                "regression, not flakiness.",
                "task-2381",
                polarity="contradicts",
            ),
        ],
    ),
    lesson(
        "web_eslint",
        agent=WEB,
        day=63,
        task="task-2104",
        kind="procedure",
        scope="acme/web",
        signal="self",
        trigger="Fixing lint errors in acme/web",
        content="Run `eslint --fix .` on the whole repository.",
        conditions=["eslint", "lint"],
        evidence=[ev("reflection", "self", "Fixed 212 lint errors in one go.", "task-2104")],
        steps=[
            (
                62,
                "reject",
                {
                    "reason": "Rewrites files outside the change. The team runs eslint --fix only on "
                    "staged files (lint-staged)."
                },
            )
        ],
    ),
    lesson(
        "web_friday",
        agent=WEB,
        day=58,
        task="task-2133",
        kind="human_correction",
        scope="acme/web",
        signal="external",
        trigger="Deploying acme/web to production on a Friday afternoon",
        content="Do not deploy acme/web to production after 15:00 on Fridays; ask in #web-release for an exception.",
        boundary="Hotfixes approved in #web-release are exempt.",
        conditions=["deploy", "production", "release window"],
        evidence=[
            ev(
                "user_statement",
                "external",
                "User: \"no prod deploys after 3pm on Friday, that's a team rule; ask in #web-release if it's "
                "urgent.\"",
                "task-2133",
            )
        ],
        steps=[(58, "approve", {})],
        review_by_days=60,
    ),
    lesson(
        "web_django_lts",
        agent=WEB,
        day=72,
        task="task-2083",
        kind="fact",
        scope="acme/web",
        signal="external",
        trigger="Upgrading Django in acme/web",
        content="Stay on Django 4.2 LTS until djangocms-blog supports 5.x; check the plugin's changelog before "
        "upgrading.",
        conditions=["django", "upgrade", "django-cms"],
        recheck_when="djangocms-blog releases a version that supports Django 5.",
        evidence=[
            ev(
                "tool_output",
                "external",
                "pip install 'django>=5.0' -> djangocms-blog 2.0.8 requires Django<5.0",
                "task-2083",
            )
        ],
        steps=[(71, "approve", {}), (4, "sweep", {"task": "review_due"})],
        review_by_days=-6,
    ),
    lesson(
        "web_cache_version",
        agent=WEB,
        day=78,
        task="task-2067",
        kind="procedure",
        scope="acme/web",
        signal="external",
        trigger="Invalidating the page cache in acme/web after a template change",
        content="Bump CACHE_VERSION in settings to invalidate cached pages.",
        conditions=["cache", "templates"],
        evidence=[
            ev("tool_output", "external", "Stale header after deploy until CACHE_VERSION was bumped.", "task-2067")
        ],
        steps=[
            (77, "approve", {}),
            (14, "sweep", {"task": "review_due"}),
            (
                12,
                "reject",
                {
                    "reason": "Obsolete: the cache key now includes the build id, and bumping "
                    "CACHE_VERSION flushes every tenant's cache at once."
                },
            ),
        ],
        review_by_days=-16,
    ),
    lesson(
        "web_urls",
        agent=WEB,
        day=12,
        task="task-2345",
        kind="failure_lesson",
        scope="acme/web",
        signal="external",
        trigger="Adding a new page to acme/web",
        content="Register the URL in web/urls/public.py, not web/urls.py; patterns added to the root file are "
        "shadowed by the catch-all CMS route.",
        conditions=["urls", "routing", "django-cms"],
        evidence=[
            ev(
                "test_result",
                "external",
                "tests/test_pages.py::test_pricing_page FAILED: expected template pricing.html, got cms/page.html",
                "task-2345",
            )
        ],
    ),
    lesson(
        "web_cms_preview",
        agent=WEB,
        day=86,
        task="task-2039",
        kind="procedure",
        scope="acme/web",
        signal="external",
        trigger="Previewing unpublished CMS pages in acme/web",
        content="Append ?edit to the URL while logged in as a staff user; the toolbar's preview button is hidden "
        "for the editor role.",
        conditions=["django-cms", "preview"],
        evidence=[ev("tool_output", "external", "GET /pricing/?edit -> 200 (draft rendered)", "task-2039")],
        steps=[
            (85, "approve", {}),
            (30, "uses", {"n": 3, "every": 8, "utility": 0.1}),
            (9, "sweep", {"task": "low_utility"}),
        ],
    ),
    # --- acme/web/frontend --------------------------------------------------------------------------
    lesson(
        "fe_storybook",
        agent=FRONTEND,
        day=68,
        task="task-2092",
        kind="success_pattern",
        scope="acme/web/frontend",
        signal="external",
        trigger="Adding a new component to the acme/web design system",
        content="Write the Storybook story first (`npm run storybook`), then the component; the Chromatic visual "
        "regression job fails on components without a story.",
        conditions=["storybook", "chromatic", "components"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "Chromatic: 1 component without stories: <PriceTag />. Build failed.",
                "task-2092",
            )
        ],
        steps=[(67, "approve", {})],
    ),
    lesson(
        "fe_i18n",
        agent=FRONTEND,
        day=9.5,
        task="task-2358",
        kind="procedure",
        scope="acme/web/frontend",
        signal="external",
        trigger="Adding user-facing strings in acme/web/frontend",
        content="Wrap strings in `t('...')` and run `npm run i18n:extract`; CI's i18n check fails on untranslated "
        "keys in de and fr.",
        boundary="Not for strings in the internal admin bundle, which is English only.",
        conditions=["i18n", "translations", "ci"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "i18n-check: 3 missing keys in locales/de.json: checkout.pay_now, checkout.total, checkout.vat",
                "task-2358",
            )
        ],
    ),
    lesson(
        "fe_css_modules",
        agent=FRONTEND,
        day=6.5,
        task="task-2374",
        kind="preference",
        scope="acme/web/frontend",
        signal="self",
        trigger="Styling components in acme/web/frontend",
        content="Use CSS modules (*.module.css); global class names collide with the legacy Bootstrap theme.",
        conditions=["css", "styling"],
        evidence=[ev("reflection", "self", "My .card class picked up Bootstrap's padding.", "task-2374")],
    ),
    lesson(
        "fe_fake_timers",
        agent=FRONTEND,
        day=4.5,
        task="task-2389",
        kind="success_pattern",
        scope="acme/web/frontend",
        signal="independent",
        trigger="Testing debounced inputs in acme/web/frontend",
        content="Use `jest.useFakeTimers()` and `act(() => jest.advanceTimersByTime(300))`; with real timers the "
        "SearchBox tests take 2 s each and flake under load.",
        boundary="Not for tests that use msw with real network delays; those need waitFor.",
        conditions=["jest", "timers", "debounce", "tests"],
        evidence=[
            ev("test_result", "external", "SearchBox.test.tsx: 12 passed in 0.4 s (was 24.1 s)", "task-2389"),
            ev("review", "independent", "Second judge agrees; matches the testing guide.", "task-2389"),
        ],
    ),
    lesson(
        "fe_msw",
        agent=FRONTEND,
        day=1.5,
        task="task-2410",
        kind="procedure",
        scope="acme/web/frontend",
        signal="self",
        trigger="Mocking API calls in acme/web/frontend tests",
        content="Use the msw handlers in src/test/handlers.ts; jest.mock on the fetch wrapper breaks the retry "
        "logic tests.",
        conditions=["msw", "mocking", "tests"],
        evidence=[ev("reflection", "self", "useOrders retry tests failed after I mocked apiFetch.", "task-2410")],
    ),
    lesson(
        "fe_function_components",
        agent=FRONTEND,
        day=60,
        task="task-2121",
        kind="preference",
        scope="acme/web/frontend",
        signal="external",
        trigger="Writing React components in acme/web/frontend",
        content="Write function components with hooks; the team no longer accepts new class components.",
        boundary="Existing class components are left alone unless the change touches their lifecycle methods.",
        conditions=["react", "components", "code style"],
        evidence=[
            ev(
                "user_statement",
                "external",
                "Reviewer on PR #1398: \"please no new class components, hooks only.\"",
                "task-2121",
            )
        ],
        steps=[(59, "approve", {})],
    ),
    lesson(
        "fe_bundle_old",
        agent=FRONTEND,
        day=74,
        task="task-2076",
        kind="procedure",
        scope="acme/web/frontend",
        signal="external",
        trigger="Checking the bundle size of acme/web/frontend",
        content="Run `npm run analyze` (webpack-bundle-analyzer) and open the report on port 8888.",
        conditions=["bundle size", "webpack"],
        evidence=[
            ev("tool_output", "external", "Webpack Bundle Analyzer is started at http://127.0.0.1:8888", "task-2076")
        ],
        steps=[(73, "approve", {})],
    ),
    lesson(
        "fe_bundle_new",
        agent=FRONTEND,
        day=30,
        task="task-2219",
        kind="procedure",
        scope="acme/web/frontend",
        signal="external",
        trigger="Checking the bundle size of acme/web/frontend",
        content="Run `npm run build -- --report` and open dist/stats.html; the webpack analyzer script was removed "
        "when the frontend moved to Vite.",
        conditions=["bundle size", "vite"],
        evidence=[ev("tool_output", "external", "npm ERR! Missing script: \"analyze\"", "task-2219")],
        steps=[
            (29, "approve", {}),
            (29, "sweep", {"task": "consolidation"}),
            (29, "supersedes", {"older": "fe_bundle_old"}),
        ],
    ),
    lesson(
        "fe_staging_login",
        agent=FRONTEND,
        day=65,
        task="task-2100",
        kind="fact",
        scope="acme/web/frontend",
        signal="external",
        trigger="Logging in to the acme/web staging frontend",
        content="Use the shared QA account stored in the team vault under acme-staging/qa.",
        conditions=["staging", "login"],
        evidence=[ev("tool_output", "external", "POST /login (shared QA account) -> 302 /dashboard", "task-2100")],
        steps=[
            (64, "approve", {}),
            (17, "use", {"outcome": "failure", "task": "task-2284"}),
            (
                16,
                "reject",
                {
                    "reason": "Forget request from the web team lead: the shared staging account was "
                    "removed; do not reintroduce it."
                },
            ),
        ],
    ),
    # --- globex/data-pipeline -----------------------------------------------------------------------
    lesson(
        "dp_backfill",
        agent=PIPELINE,
        day=84,
        task="task-2046",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Backfilling a date range in globex/data-pipeline",
        content="Run `make backfill START=... END=...` in chunks of at most 7 days; larger ranges exceed the "
        "warehouse's 6-hour query timeout and leave partial partitions behind.",
        boundary="Does not hold for events_raw, which is append-only and can be backfilled in one run.",
        conditions=["backfill", "warehouse", "timeout", "partitions"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "ERROR: Query exceeded 6h timeout (job bq-7f3a...); 11 of 31 partitions written",
                "task-2046",
            )
        ],
        steps=[(83, "approve", {})],
    ),
    lesson(
        "dp_backfill_dup",
        agent=PIPELINE,
        day=3,
        task="task-2395",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="self",
        trigger="Backfilling several weeks of data in globex/data-pipeline",
        content="Backfill in chunks of 7 days or less with `make backfill START=... END=...`; one large range hits "
        "the warehouse's 6-hour query timeout.",
        conditions=["backfill"],
        evidence=[ev("reflection", "self", "A 30-day backfill timed out; weekly chunks worked.", "task-2395")],
    ),
    lesson(
        "dp_vendor_headers",
        agent=PIPELINE,
        day=15,
        task="task-2322",
        kind="failure_lesson",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Loading vendor CSV files in globex/data-pipeline",
        content="Validate the headers against schemas/vendor_orders.json before loading; the vendor renamed "
        "order_ts to order_time without notice and the load filled the column with NULLs.",
        conditions=["csv", "vendor", "schema"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "SELECT count(*) FROM staging.vendor_orders WHERE order_ts IS NULL -> 48213 (of 48213)",
                "task-2322",
            )
        ],
        steps=[
            (
                13,
                "evidence",
                {
                    "by": JUDGE,
                    "evidence": ev(
                        "review",
                        "independent",
                        "The loader validates headers since v2.3 (pipeline/loaders/csv.py:88); the failure came from a run "
                        "pinned to v2.2. Duplicate of the loader's own check.",
                        "task-2322",
                        polarity="contradicts",
                    ),
                },
            )
        ],
    ),
    lesson(
        "dp_full_refresh",
        agent=PIPELINE,
        day=61,
        task="task-2113",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="self",
        trigger="A dbt model fails in globex/data-pipeline",
        content="Rerun it with `dbt run --full-refresh`.",
        conditions=["dbt"],
        evidence=[ev("reflection", "self", "The full refresh made the error go away.", "task-2113")],
        steps=[
            (
                60,
                "reject",
                {
                    "reason": "Dangerous: a full refresh of fct_orders rebuilds 2 TB and blocks the "
                    "nightly run. Fix the failing model instead."
                },
            )
        ],
    ),
    lesson(
        "dp_airflow_pool",
        agent=PIPELINE,
        day=57,
        task="task-2140",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Adding a new Airflow DAG in globex/data-pipeline",
        content="Assign its tasks to the `warehouse` pool (pool='warehouse'); tasks outside the pool saturate the "
        "warehouse connections during the 02:00 run.",
        conditions=["airflow", "dag", "pool"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "psycopg2.OperationalError: FATAL: remaining connection slots are reserved",
                "task-2140",
            )
        ],
        steps=[(56, "approve", {})],
    ),
    lesson(
        "dp_replica",
        agent=PIPELINE,
        day=87,
        task="task-2043",
        kind="fact",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Extracting from the legacy Postgres database in globex/data-pipeline",
        content="Read from the replica replica-2.db.globex.internal, never the primary.",
        conditions=["postgres", "replica", "extract"],
        evidence=[ev("user_statement", "external", "DBA: \"extracts go to replica-2, please.\"", "task-2043")],
        steps=[
            (86, "approve", {}),
            (8.8, "uses", {"n": 3, "every": 0.5, "utility": 0.15}),
            (7, "sweep", {"task": "low_utility"}),
        ],
    ),
    lesson(
        "dp_airflow_logs",
        agent=PIPELINE,
        day=8.5,
        task="task-2363",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="self",
        trigger="Debugging a failed Airflow task in globex/data-pipeline",
        content="Read the task log in S3 (s3://globex-airflow-logs/<dag>/<task>/) instead of the web UI; the UI "
        "truncates logs over 1 MB.",
        conditions=["airflow", "logs", "debugging"],
        evidence=[
            ev("reflection", "self", "The UI log ended mid-traceback; the S3 copy had the full error.", "task-2363")
        ],
    ),
    lesson(
        "dp_partition_filter",
        agent=PIPELINE,
        day=1,
        task="task-2413",
        kind="failure_lesson",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Querying the events table in globex/data-pipeline",
        content="Always filter on event_date; the table is partitioned by it and unfiltered queries scan 40 TB "
        "and are killed by the cost guard.",
        boundary="Not for the events_daily rollup, which is small and unpartitioned.",
        conditions=["warehouse", "partitions", "cost"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "Query rejected by cost guard: estimated 41.2 TB scanned (limit 1 TB)",
                "task-2413",
            )
        ],
    ),
    lesson(
        "dp_refresh_extract",
        agent=PIPELINE,
        day=67,
        task="task-2095",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Refreshing the orders dashboard extract",
        content="Trigger refresh_orders_extract right after the nightly dbt run finishes; the extract reads "
        "fct_orders directly.",
        conditions=["dashboard", "extract", "dbt"],
        evidence=[
            ev("tool_output", "external", "refresh_orders_extract: 1.2M rows from analytics.fct_orders", "task-2095")
        ],
        steps=[
            (66, "approve", {}),
            (2.2, "use", {"outcome": "failure", "task": "task-2401"}),
            (
                2.1,
                "evidence",
                {
                    "evidence": ev(
                        "task_outcome",
                        "external",
                        "task-2401 failed: refresh_orders_extract now reads the orders_snapshot view, built 40 minutes "
                        "after dbt; the dashboard showed yesterday's numbers.",
                        "task-2401",
                        polarity="contradicts",
                    )
                },
            ),
        ],
    ),
    lesson(
        "dp_dbt_docs",
        agent=PIPELINE,
        day=10.5,
        task="task-2350",
        kind="procedure",
        scope="globex/data-pipeline",
        signal="external",
        trigger="Adding a column to a dbt model in globex/data-pipeline",
        content="Add the column to the model's schema.yml with a description; the dbt-checkpoint pre-commit hook "
        "rejects undocumented columns.",
        conditions=["dbt", "schema.yml", "pre-commit"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "check-model-columns-have-desc....Failed\n- models/marts/fct_orders.sql: discount_code",
                "task-2350",
            )
        ],
    ),
    lesson(
        "dp_schedule",
        agent=PIPELINE,
        day=15.5,
        task="task-2318",
        kind="fact",
        scope="globex/data-pipeline",
        signal="self",
        trigger="Scheduling a new DAG in globex/data-pipeline",
        content="Schedule new DAGs after 04:00 UTC; 02:00-04:00 is reserved for the finance close jobs.",
        conditions=["airflow", "schedule"],
        evidence=[ev("reflection", "self", "Read in the team wiki, not checked against the scheduler.", "task-2318")],
        steps=[(12, "defer", {"hours": 48, "reason": "Asked the data team whether the window moved with DST."})],
    ),
    # --- globex/infra/k8s ---------------------------------------------------------------------------
    lesson(
        "k8s_context",
        agent=K8S,
        day=81,
        task="task-2052",
        kind="failure_lesson",
        scope="globex/infra",
        signal="external",
        trigger="Running kubectl against globex clusters",
        content="Check `kubectl config current-context` and pass --context explicitly; `gcloud container clusters "
        "get-credentials` switched the default context to prod-eu.",
        conditions=["kubectl", "context", "prod"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "$ kubectl get pods -n billing\nNAME ... (prod-eu!)\n$ kubectl config current-context\n"
                "gke_globex-prod_europe-west1_prod-eu",
                "task-2052",
            )
        ],
        steps=[
            (
                80,
                "edit_approve",
                {
                    "changes": {
                        "scope": "globex/infra/k8s",
                        "boundary": "Does not apply inside the CI runners, which have exactly one context.",
                    },
                    "reason": "Narrowed to k8s and added the CI boundary.",
                },
            )
        ],
    ),
    lesson(
        "k8s_context_dup",
        agent=K8S,
        day=5.2,
        task="task-2383",
        kind="failure_lesson",
        scope="globex/infra/k8s",
        signal="self",
        trigger="Running kubectl commands for globex/infra",
        content="Always pass --context explicitly to kubectl and check `kubectl config current-context`; "
        "get-credentials switches the default context to prod-eu.",
        conditions=["kubectl", "context"],
        evidence=[ev("reflection", "self", "Nearly scaled a prod deployment.", "task-2383")],
    ),
    lesson(
        "k8s_context_dup2",
        agent="agent:codex@globex-infra",
        day=40,
        task="task-2187",
        kind="failure_lesson",
        scope="globex/infra/k8s",
        signal="self",
        trigger="Running kubectl against globex clusters",
        content="Check `kubectl config current-context` before running commands; get-credentials switched the "
        "default context to prod-eu.",
        conditions=["kubectl", "context"],
        evidence=[ev("reflection", "self", "Same surprise as last week.", "task-2187")],
        steps=[(39, "reject", {"reason": "Duplicate of {k8s_context}, which already says this with a boundary."})],
    ),
    lesson(
        "k8s_helm_diff",
        agent=K8S,
        day=50,
        task="task-2164",
        kind="procedure",
        scope="globex/infra/k8s",
        signal="external",
        trigger="Upgrading a Helm release in globex/infra/k8s",
        content="Run `helm diff upgrade` before `helm upgrade`; chart 4.x changed default resources and a blind "
        "upgrade halved the ingress replicas.",
        boundary="Not for releases managed by Argo CD, which shows the diff itself.",
        conditions=["helm", "upgrade", "diff"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "ingress-nginx, Deployment (apps) has changed:\n-  replicas: 4\n+  replicas: 2",
                "task-2164",
            )
        ],
        steps=[(49, "approve", {})],
        review_by_days=40,
    ),
    lesson(
        "k8s_pdb",
        agent=K8S,
        day=7.5,
        task="task-2369",
        kind="failure_lesson",
        scope="globex/infra/k8s",
        signal="independent",
        trigger="Draining nodes in globex/infra/k8s",
        content="Check PodDisruptionBudgets (`kubectl get pdb -A`) before `kubectl drain`; the kafka PDB allows 0 "
        "disruptions and the drain hangs forever.",
        boundary="Not on the dev cluster, which has no PDBs.",
        conditions=["drain", "pdb", "kafka"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "error when evicting pods/\"kafka-2\" -n \"kafka\" (will retry after 5s): Cannot evict pod as it "
                "would violate the pod's disruption budget.",
                "task-2369",
            )
        ],
    ),
    lesson(
        "k8s_force_delete",
        agent=K8S,
        day=59,
        task="task-2129",
        kind="procedure",
        scope="globex/infra/k8s",
        signal="self",
        trigger="Pods stuck in Terminating in globex/infra/k8s",
        content="Delete them with `kubectl delete pod --grace-period=0 --force`.",
        conditions=["pods", "terminating"],
        evidence=[ev("reflection", "self", "The pod went away immediately.", "task-2129")],
        steps=[
            (
                58,
                "reject",
                {
                    "reason": "Unsafe for StatefulSets (two pods with one identity). The runbook says to "
                    "find the blocking finalizer first."
                },
            )
        ],
    ),
    lesson(
        "k8s_certs_old",
        agent=K8S,
        day=83,
        task="task-2048",
        kind="procedure",
        scope="globex/infra/k8s",
        signal="external",
        trigger="Renewing TLS certificates in globex/infra/k8s",
        content="Certificates are renewed by the renew-certs cron job in kube-system; run it by hand with "
        "`kubectl create job --from=cronjob/renew-certs renew-now -n kube-system`.",
        conditions=["tls", "certificates"],
        evidence=[ev("tool_output", "external", "job.batch/renew-now created", "task-2048")],
        steps=[(82, "approve", {})],
    ),
    lesson(
        "k8s_certs_new",
        agent=K8S,
        day=35,
        task="task-2201",
        kind="procedure",
        scope="globex/infra/k8s",
        signal="external",
        trigger="Renewing TLS certificates in globex/infra/k8s",
        content="Certificates are managed by cert-manager since the March migration: check `kubectl get "
        "certificate -A` and `kubectl describe certificaterequest`; the renew-certs cron job was deleted.",
        conditions=["tls", "certificates", "cert-manager"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "Error from server (NotFound): cronjobs.batch \"renew-certs\" not found",
                "task-2201",
            )
        ],
        steps=[
            (34, "approve", {}),
            (34, "sweep", {"task": "consolidation"}),
            (34, "supersedes", {"older": "k8s_certs_old"}),
        ],
    ),
    lesson(
        "k8s_pending_pods",
        agent=K8S,
        day=0.6,
        task="task-2416",
        kind="procedure",
        scope="globex/infra/k8s",
        signal="self",
        trigger="A pod is stuck in Pending in globex/infra/k8s",
        content="Run `kubectl describe pod` and read Events first; most Pending pods here wait for the gpu node "
        "pool to scale up, which takes about 6 minutes.",
        conditions=["pending", "scheduling", "gpu"],
        evidence=[ev("reflection", "self", "Waited; the pod scheduled after the node pool grew.", "task-2416")],
    ),
    lesson(
        "k8s_limits",
        agent=K8S,
        day=80.5,
        task="task-2054",
        kind="success_pattern",
        scope="globex/infra/k8s",
        signal="self",
        confidence=0.33,
        trigger="Setting resource limits in globex/infra/k8s",
        content="Set memory limits equal to requests for JVM services to avoid OOM kills during GC spikes.",
        conditions=["resources", "limits", "jvm"],
        evidence=[
            ev(
                "reflection",
                "self",
                "One service stopped restarting after the change; may be coincidence.",
                "task-2054",
            )
        ],
        steps=[
            (79.5, "approve", {"reason": "Plausible but unproven; low confidence."}),
            (23, "sweep", {"task": "archive"}),
        ],
    ),
    lesson(
        "k8s_secrets",
        agent=K8S,
        day=11.5,
        task="task-2347",
        kind="procedure",
        scope="globex/infra/k8s",
        signal="external",
        trigger="Rotating secrets in globex/infra/k8s",
        content="Update the secret in Vault, then `kubectl rollout restart` the deployment; the pods read secrets "
        "only at start-up.",
        boundary="Does not apply to services with the vault-agent sidecar, which reload secrets on change.",
        conditions=["secrets", "vault", "rotation"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "401 from payments-gateway for 20 min after rotation, until the rollout restart",
                "task-2347",
            )
        ],
    ),
    lesson(
        "k8s_argocd_scale",
        agent=K8S,
        day=0.3,
        task="task-2419",
        kind="failure_lesson",
        scope="globex/infra/k8s",
        signal="external",
        trigger="Scaling the ingress controller in globex/infra/k8s",
        content="Change replicas in values-prod.yaml and let Argo CD sync; `kubectl scale` is reverted by Argo CD "
        "within 3 minutes.",
        conditions=["argo cd", "scaling", "ingress"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "argocd app get ingress: Sync Status: Synced (auto-heal reverted replicas 6 -> 4)",
                "task-2419",
            )
        ],
    ),
    # --- initech/support-bot ------------------------------------------------------------------------
    lesson(
        "sb_refund",
        agent=SUPPORT,
        day=75,
        task="task-2074",
        kind="human_correction",
        scope="initech/support-bot",
        signal="external",
        trigger="A customer asks for a refund",
        content="Do not promise a refund. Open a ticket tagged refund-request and tell the customer a person will "
        "answer within one business day.",
        boundary="Does not apply to duplicate-charge reports, which the bot may refund automatically via "
        "the refunds API under 50 EUR.",
        conditions=["refund", "ticket", "escalation"],
        evidence=[
            ev(
                "user_statement",
                "external",
                "Support lead: \"The bot must never say a refund is approved. Only finance can approve.\"",
                "task-2074",
            )
        ],
        steps=[(75, "approve", {})],
    ),
    lesson(
        "sb_refund_dup",
        agent=SUPPORT,
        day=1.8,
        task="task-2408",
        kind="failure_lesson",
        scope="initech/support-bot",
        signal="self",
        trigger="A customer asks for their money back",
        content="Never promise a refund; open a ticket tagged refund-request and say a person will answer within "
        "one business day.",
        conditions=["refund"],
        evidence=[
            ev(
                "reflection",
                "self",
                "I told a customer 'your refund is on its way'; a human corrected it.",
                "task-2408",
            )
        ],
    ),
    lesson(
        "sb_tone",
        agent=SUPPORT,
        day=73,
        task="task-2079",
        kind="preference",
        scope="initech/support-bot",
        signal="external",
        trigger="Replying to customers in initech/support-bot",
        content="Address customers by first name, use no emoji, and sign as \"Initech Support\".",
        conditions=["tone", "signature"],
        evidence=[
            ev(
                "user_statement",
                "external",
                "Support lead: \"first names, no emoji, sign as Initech Support.\"",
                "task-2079",
            )
        ],
        steps=[(72, "approve", {})],
    ),
    lesson(
        "sb_kb_link",
        agent=SUPPORT,
        day=13.5,
        task="task-2338",
        kind="success_pattern",
        scope="initech/support-bot",
        signal="independent",
        trigger="Answering password-reset questions",
        content="Link to KB article kb/1042 instead of pasting the steps; the steps change with each release and "
        "pasted copies go stale.",
        conditions=["password reset", "knowledge base"],
        evidence=[
            ev("review", "independent", "Judge: 3 of 5 pasted answers last month had outdated steps.", "task-2338")
        ],
    ),
    lesson(
        "sb_breach",
        agent=SUPPORT,
        day=4.2,
        task="task-2393",
        kind="procedure",
        scope="initech/support-bot",
        signal="external",
        trigger="A customer reports a possible data breach",
        content="Stop troubleshooting and escalate to the security team's mail alias immediately.",
        conditions=["security", "breach", "escalation"],
        evidence=[
            ev("user_statement", "external", "Customer: \"someone logged into my account from Brazil.\"", "task-2393"),
            ev(
                "user_statement",
                "external",
                "Support lead: \"Use the #sec-incident pager, not the email alias; the alias is read once a day.\"",
                "task-2393",
                polarity="contradicts",
            ),
        ],
    ),
    lesson(
        "sb_competitors",
        agent=SUPPORT,
        day=45,
        task="task-2172",
        kind="procedure",
        scope="initech/support-bot",
        signal="self",
        trigger="A customer asks how our price compares with competitors",
        content="Compare our price with Initrode's public price list.",
        conditions=["pricing", "competitors"],
        evidence=[ev("reflection", "self", "The customer seemed satisfied with the comparison.", "task-2172")],
        steps=[(44, "reject", {"reason": "Legal does not allow the bot to discuss competitors' prices."})],
    ),
    lesson(
        "sb_card_digits",
        agent=SUPPORT,
        day=71,
        task="task-2085",
        kind="procedure",
        scope="initech/support-bot",
        signal="external",
        review_by_days=-23,
        trigger="Verifying a customer's identity in initech/support-bot",
        content="Ask for the last four digits of the card on file.",
        conditions=["identity", "verification"],
        evidence=[
            ev("user_statement", "external", "Support agent: \"we usually ask for the last four digits.\"", "task-2085")
        ],
        steps=[
            (70, "approve", {}),
            (21.5, "sweep", {"task": "review_due"}),
            (
                21,
                "reject",
                {
                    "reason": "Forget request (PCI review): the bot must not ask for card digits; "
                    "verification moved to the signed-in portal."
                },
            ),
        ],
    ),
    lesson(
        "sb_legacy_orders",
        agent=SUPPORT,
        day=86.5,
        task="task-2040",
        kind="fact",
        scope="initech/support-bot",
        signal="self",
        confidence=0.33,
        trigger="Looking up orders placed before the 2023 platform migration",
        content="Look them up in the legacy admin at old-admin.initech.example; the new admin does not show them.",
        conditions=["orders", "legacy", "migration"],
        evidence=[ev("reflection", "self", "Found one old order there; unsure whether all of them are.", "task-2040")],
        steps=[(85.5, "approve", {}), (29, "sweep", {"task": "archive"})],
    ),
    lesson(
        "sb_hours_old",
        agent=SUPPORT,
        day=78.5,
        task="task-2066",
        kind="fact",
        scope="initech/support-bot",
        signal="external",
        trigger="Telling customers the support hours",
        content="Support is staffed 9:00-17:00 CET, Monday to Friday.",
        conditions=["support hours"],
        evidence=[
            ev("tool_output", "external", "GET /config/support-hours -> {\"weekdays\": \"09:00-17:00\"}", "task-2066")
        ],
        steps=[(78, "approve", {})],
    ),
    lesson(
        "sb_hours_new",
        agent=SUPPORT,
        day=22,
        task="task-2255",
        kind="fact",
        scope="initech/support-bot",
        signal="external",
        trigger="Telling customers the support hours",
        content="Support is staffed 8:00-20:00 CET on weekdays and 10:00-14:00 on Saturdays since the May rota "
        "change; read /config/support-hours rather than quoting from memory.",
        conditions=["support hours", "rota"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "GET /config/support-hours -> {\"weekdays\": \"08:00-20:00\", \"saturday\": \"10:00-14:00\"}",
                "task-2255",
            )
        ],
        steps=[
            (21, "approve", {}),
            (21, "sweep", {"task": "consolidation"}),
            (21, "supersedes", {"older": "sb_hours_old"}),
        ],
    ),
    lesson(
        "sb_german",
        agent=SUPPORT,
        day=6.2,
        task="task-2376",
        kind="human_correction",
        scope="initech/support-bot",
        signal="external",
        trigger="A customer writes in German",
        content="Reply with the de templates; do not machine-translate the English template, because the legal "
        "footer must be the approved German text.",
        conditions=["language", "german", "templates"],
        evidence=[
            ev(
                "user_statement",
                "external",
                "Support lead: \"Never translate the footer yourself, legal signed off the German version.\"",
                "task-2376",
            )
        ],
    ),
    lesson(
        "sb_invoice_copy",
        agent=SUPPORT,
        day=2.8,
        task="task-2399",
        kind="procedure",
        scope="initech/support-bot",
        signal="self",
        trigger="A customer asks for a copy of an invoice",
        content="Send the download link from GET /customers/{id}/invoices; never attach PDFs, the mail gateway "
        "strips attachments over 2 MB.",
        conditions=["invoice", "email"],
        evidence=[ev("reflection", "self", "A customer said my attachment never arrived.", "task-2399")],
    ),
    lesson(
        "sb_erasure",
        agent=SUPPORT,
        day=0.9,
        task="task-2414",
        kind="procedure",
        scope="initech/support-bot",
        signal="external",
        trigger="A customer asks to delete their account",
        content="Open a GDPR ticket tagged erasure and confirm the request by email; the bot must not delete "
        "anything itself.",
        boundary="Not for closing a single subscription, which the customer can do in the portal.",
        conditions=["gdpr", "erasure", "account deletion"],
        evidence=[
            ev("user_statement", "external", "DPO: \"Erasure requests always go through a ticket.\"", "task-2414")
        ],
    ),
    # --- skill promotions: procedures used often and well, with a rollback note ------------------------
    # One became a skill (nominated, 5 trials, approved by the lead); one waits in the queue with 3 of 5.
    lesson(
        "bc_reset_test_db",
        agent=BILLING,
        day=72,
        task="task-2081",
        kind="procedure",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Resetting the billing-api test database in the container",
        content="Stop the Celery worker with `supervisorctl stop worker`.\n"
        "Run `python manage.py reset_test_db --noinput` from /srv/app.\n"
        "Start the worker again and run `pytest tests/billing -x` once.\n"
        "Verify: `python manage.py showmigrations billing` lists every migration as applied.\n"
        "Rollback: `pg_restore --clean -d billing_test /srv/backups/billing_test.dump`, then start the worker.",
        boundary="Not on the shared staging database, which other agents use at the same time.",
        conditions=["test database", "container", "reset"],
        evidence=[
            ev(
                "test_result",
                "external",
                "tests/billing: 212 passed after reset_test_db (before: 37 errors, 'relation "
                "billing_invoice_v2 does not exist')",
                "task-2081",
            )
        ],
        steps=[
            (71, "approve", {"reason": "Same steps as the runbook; the rollback restores last night's dump."}),
            (66, "uses", {"n": 12, "every": 3, "utility": 0.9}),
            (28, "sweep", {"task": "skill_nomination"}),
            (26, "trials", {"outcomes": ["success"] * 5, "every": 1.5}),
            (17, "approve_skill", {"reason": "Five clean trial runs; the rollback was exercised in task-2290."}),
        ],
    ),
    lesson(
        "ba_release_tag",
        agent=BILLING,
        day=58,
        task="task-2132",
        kind="success_pattern",
        scope="acme/billing-api",
        signal="independent",
        trigger="Tagging a billing-api release",
        content="Run `make changelog` and commit CHANGELOG.md.\n"
        "Tag with `git tag -s vX.Y.Z` and push the tag; CI builds the image from it.\n"
        "Verify: the release job in CI is green and the image tag exists in the registry.\n"
        "Rollback: `git push --delete origin vX.Y.Z` and `git tag -d vX.Y.Z`; CI never deploys an untagged image.",
        boundary="Not for hotfix branches, which are tagged by the release manager.",
        conditions=["release", "git tag", "changelog"],
        evidence=[
            ev("review", "independent", "Release checklist review: the agent's order matches RELEASE.md.", "task-2132")
        ],
        steps=[
            (57, "approve", {}),
            (50, "uses", {"n": 11, "every": 4, "utility": 0.86}),
            (3, "sweep", {"task": "skill_nomination"}),
            (2, "trials", {"outcomes": ["success"] * 3, "every": 0.5}),
        ],
    ),
    # --- for the conflicts and consolidation queues: what the detecting sweeps find ----------------
    lesson(
        "ba_rebase_review",
        agent=BILLING,
        day=41,
        task="task-2170",
        kind="success_pattern",
        scope="acme/billing-api",
        signal="self",
        trigger="Updating a feature branch before review in billing-api",
        content="Always rebase the feature branch onto main before asking for review, so the diff shows "
        "only your change.",
        conditions=["git", "review"],
        evidence=[ev("review", "independent", "Reviewer: 'much easier to read after the rebase'.", "task-2170")],
        steps=[(40, "approve", {})],
    ),
    lesson(
        "bc_no_rebase_shared",
        agent=FRONTEND,
        day=7,
        task="task-2331",
        kind="failure_lesson",
        scope="acme/billing-api/container",
        signal="external",
        trigger="Updating a shared feature branch before review",
        content="Never rebase a feature branch that others have pulled; merge main into it instead, or "
        "their next pull rewrites history.",
        conditions=["git", "shared branch"],
        evidence=[
            ev(
                "tool_output",
                "external",
                "hint: Updates were rejected because the tip of your current branch is behind its remote counterpart",
                "task-2331",
            )
        ],
        steps=[(6, "approve", {}), (1, "sweep", {"task": "conflicts"})],
    ),
    lesson(
        "web_nvm_first",
        agent=WEB,
        day=33,
        task="task-2210",
        kind="failure_lesson",
        scope="acme/web",
        signal="external",
        trigger="Installing dependencies for the web frontend",
        content="Use the Node version pinned in .nvmrc (`nvm use`) before `npm ci`; the lockfile was "
        "generated with Node 20 and npm ci fails on Node 22.",
        evidence=[
            ev("tool_output", "external", "npm ERR! code EBADENGINE ... required: { node: '20.x' }", "task-2210")
        ],
        steps=[(32, "approve", {})],
    ),
    lesson(
        "web_nvm_again",
        agent=FRONTEND,
        day=5,
        task="task-2344",
        kind="failure_lesson",
        scope="acme/web",
        signal="external",
        trigger="Installing dependencies of the web frontend",
        content="Run `nvm use` to get the Node version pinned in .nvmrc before `npm ci`: the lockfile was "
        "generated with Node 20 and `npm ci` fails on Node 22.",
        evidence=[ev("tool_output", "external", "npm ERR! code EBADENGINE", "task-2344")],
        steps=[(4, "approve", {}), (1, "sweep", {"task": "consolidation"})],
    ),
]


def _expanded(steps):
    """A lesson's steps with `uses` and `trials` spread into one step per use or trial run, `every` days
    apart, so that each happens at its own moment of the replay (a nomination sees only the uses before it)."""
    for day, action, params in steps:
        if action == "uses":
            for n in range(params["n"]):
                yield (
                    day - params["every"] * n,
                    "use",
                    {"outcome": "success", "utility": params["utility"], "task": f"task-{3000 + n}"},
                )
        elif action == "trials":
            for n, outcome in enumerate(params["outcomes"]):
                yield day - params["every"] * n, "trial", {"outcome": outcome, "task": f"task-{3100 + n}"}
        else:
            yield day, action, params


def _moment(now, days_ago, lesson_index, step_index):
    # A steady per-lesson offset spreads the work over the day; one minute per step keeps a lesson's own
    # steps in order when they share a day.
    jitter = zlib.crc32(str(lesson_index).encode()) % 300
    return now - datetime.timedelta(days=days_ago, minutes=jitter) + datetime.timedelta(minutes=step_index)


def timeline(now):
    """Every submission ("submit") and step of LESSONS as (moment, lesson, action, params), in time order."""
    items = []
    for i, spec in enumerate(LESSONS):
        items.append((_moment(now, spec["day"], i, 0), i, 0, spec, "submit", {}))
        previous = spec["day"]
        for j, (day, action, params) in enumerate(_expanded(spec["steps"]), start=1):
            if day > previous:
                raise ValueError(f"demo lesson {spec['key']}: step {action} comes before the one before it")
            previous = day
            items.append((_moment(now, day, i, j), i, j, spec, action, params))
    items.sort(key=lambda item: item[:3])
    return [(at, spec, action, params) for at, _, _, spec, action, params in items]
