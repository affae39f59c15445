"""The README's curl session, run as printed against a live server with the demo data."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from curation.models import Entry, Event, SkillTrial
from curation.services import approve_candidate
from curation.services.releases import publish_version

README = Path(__file__).resolve().parents[2] / "README.md"


def block(name: str) -> str:
    match = re.search(rf"<!-- curl-session:{name} -->\s*```sh\n(.*?)```", README.read_text(), re.S)
    assert match, f"README has no curl-session:{name} block"
    return match.group(1)


def run(script: str, env: dict) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_readme_curl_session_works_as_printed(live_server, transactional_db, tmp_path):

    token = re.search(r"TOKEN=(\S+)", block("env")).group(1)
    call_command("seed_demo", "--agent-token", token, stdout=open("/dev/null", "w"))
    env = {"MA": live_server.url, "TOKEN": token}

    answer, _, follow = run(block("submit"), env).partition("\ncandidate #")
    submitted = json.loads(answer)
    assert submitted["status"] == "pending" and submitted["confidence"] == 0.85
    entry = Entry.objects.get(pk=submitted["id"])
    # The line to follow names this candidate and its page on this server, whatever its id and port.
    assert follow.strip() == f"{entry.pk}: open {live_server.url}/review/candidates/{entry.pk}/ and press Approve"

    # "Approve it in the browser": the reviewer's approval, through the same service the button calls
    reviewer = get_user_model().objects.get(username="reviewer")
    approve_candidate(entry.pk, actor=reviewer, expected_version=entry.version)
    # "...and publish it on the releases page": agents read the published version
    publish_version(
        actor=get_user_model().objects.get(username="lead"), summary="the README's lesson", acknowledge=True
    )

    output = run(block("use"), env)
    retrieval = json.loads(output[: output.index("}{") + 1] if "}{" in output else output.splitlines()[0])
    assert entry.pk in [e["id"] for e in retrieval["entries"]]
    assert "When rotating the billing-api webhook signing key" in retrieval["context"]
    feedback = json.loads(output[output.rindex('{"recorded"') :])
    assert feedback["recorded"] is True
    entry.refresh_from_db()
    assert 0.85 < entry.confidence < 0.90  # "a little above 0.85": one success is little evidence of a lift
    assert Event.objects.filter(entry=entry, action="outcome_success").exists()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_readme_skills_session_works_as_printed(live_server, transactional_db):

    token = re.search(r"TOKEN=(\S+)", block("env")).group(1)
    call_command("seed_demo", "--agent-token", token, stdout=open("/dev/null", "w"))
    output = run(block("skills"), {"MA": live_server.url, "TOKEN": token})
    listing, _, trial = output.partition("}{")
    skills = json.loads(listing + "}")["skills"]
    assert [s["slug"] for s in skills] == ["resetting-the-billing-api-test-database-in-the-container"]
    assert skills[0]["skill_md"].startswith('---\nname: "resetting-the-billing-api-test-database-in-the-container"')
    answer = json.loads("{" + trial)
    assert answer["recorded"] is True and answer["trials"]["summary"] == "4 of 5 trials succeeded"
    assert SkillTrial.objects.filter(task_ref="task-4242", token__name="demo-agent").exists()
