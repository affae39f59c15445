"""End to end: a lesson is learned, served, merged into a proposal; a user asks to forget it; a lead approves.
Then a paraphrase comes back and is refused, every sweep runs, and the whole database (every row of every
table, and on PostgreSQL pg_dump of it) and the captured logs hold the forgotten text nowhere."""

import logging
import shutil
import subprocess

import pytest
from django.db import connection
from django.urls import reverse

from curation.models import ConsolidationProposal, Entry, ForgetRequest, Status, TaskRun
from curation.services.tokens import create_agent_token
from curation.sweeps import run_sweep
from curation.sweeps.registry import TASK_NAMES
from tests.factories import Agent, api_candidate, client_for, database_dump, make_user

pytestmark = pytest.mark.django_db(transaction=True)

# Words that are only in the lesson to forget (and its duplicate and paraphrase).
FORGOTTEN = ("Okonkwo", "Marguerite", "vault-7731", "okonkwo")
LESSON = dict(
    scope="acme/payroll",
    trigger="Deploying the payroll service on Fridays",
    content="Always page Marguerite Okonkwo before deploying payroll: she holds vault-7731, the rollback keys.",
    boundary="Not when Marguerite Okonkwo is on leave.",
    conditions=["payroll", "okonkwo"],
    evidence=[
        {
            "kind": "user_statement",
            "signal": "external",
            "excerpt": "Marguerite Okonkwo said the vault-7731 keys are hers",
        }
    ],
)
DUPLICATE = dict(
    scope="acme/payroll",
    trigger="Deploying the payroll service on a Friday",
    content="Always page Marguerite Okonkwo before deploying payroll: she holds vault-7731, "
    "the rollback keys. Wait for her reply.",
)
PARAPHRASE = dict(
    scope="acme/payroll/eu",
    trigger="Friday deploys of the payroll service",
    content="Page Marguerite Okonkwo before any payroll deploy, since she keeps vault-7731 rollback keys.",
)


def pg_dump() -> str:
    settings = connection.settings_dict
    completed = subprocess.run(
        [
            "pg_dump",
            "--no-owner",
            "-h",
            settings["HOST"] or "127.0.0.1",
            "-p",
            str(settings["PORT"] or 5432),
            "-U",
            settings["USER"],
            settings["NAME"],
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PGPASSWORD": settings.get("PASSWORD") or "", "PATH": "/usr/bin:/bin"},
    )
    return completed.stdout


def test_a_forgotten_lesson_is_nowhere_after_every_sweep(caplog, capfd):
    caplog.set_level(logging.DEBUG)
    lead, reviewer = make_user("lena", "lead"), make_user("rita", "reviewer")
    token, key = create_agent_token(name="payroll-agent", scopes=["acme/payroll"])
    agent = Agent(key, token)
    lead_console = client_for(lead)

    # Learned: submitted with evidence, approved, published, served and reported on.
    ids = [agent.submit(**api_candidate(**lesson) | lesson).json()["id"] for lesson in (LESSON, DUPLICATE)]
    for pk in ids:
        entry = Entry.objects.get(pk=pk)
        client_for(reviewer).post(reverse("curation:candidate-approve", args=[pk]), {"version": entry.version})
    assert set(Entry.objects.filter(pk__in=ids).values_list("status", flat=True)) == {Status.ACTIVE}
    served = agent.retrieve(scope="acme/payroll", q="Marguerite Okonkwo vault-7731 payroll").json()
    assert served["entries"]
    agent.post("feedback", {"retrieval_id": served["retrieval_id"], "outcome": "success", "utility": 1.0})
    run_sweep("consolidation")
    assert ConsolidationProposal.objects.filter(entries__in=ids).exists()

    # Forgotten: the agent files for its user; the lead approves in the Forget queue, ticking the duplicate.
    filed = agent.post("forget-requests", {"entry_id": ids[0], "reason": "The user withdrew consent"}).json()
    decided = lead_console.post(reverse("curation:forget-approve", args=[filed["id"]]), {"duplicates": [ids[1]]})
    assert decided.status_code == 302 and ForgetRequest.objects.get(pk=filed["id"]).state == "approved"

    # Learned again? A paraphrase is held at ingest (answered as any candidate, its text never stored, its
    # evidence neither); then every sweep runs.
    again = agent.submit(**api_candidate(**PARAPHRASE))
    assert again.status_code == 201 and again.json()["status"] == "pending"
    assert Entry.objects.get(pk=again.json()["id"]).held_by_id == filed["id"]
    for task in TASK_NAMES:
        run, _ = run_sweep(task, triggered_by="test")
        assert run.state in (TaskRun.State.SUCCEEDED, TaskRun.State.SKIPPED), (task, run.error)
    assert not ConsolidationProposal.objects.filter(state="open").exclude(entries__in=ids).exists()

    places = {"database rows": database_dump(), "logs": caplog.text + "".join(capfd.readouterr())}
    if connection.vendor == "postgresql":
        if shutil.which("pg_dump") is None:
            pytest.skip("pg_dump is not installed: the rows were read above, the dump cannot be taken")
        places["pg_dump"] = pg_dump()
    for place, text in places.items():
        for word in FORGOTTEN:
            assert word not in text, f"{word!r} is still in the {place}"
    assert f"[forgotten: request #{filed['id']}]" in places["database rows"]
