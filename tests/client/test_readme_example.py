"""README's "Connect your agent" Python example, run as written against a live memoryadmin."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from curation.models import Entry, Feedback, Status
from curation.services import approve_candidate, create_candidate
from tests.factories import candidate_data, publish_pending
from tests.live import token_key

pytestmark = pytest.mark.django_db(transaction=True)

README = Path(__file__).resolve().parents[2] / "README.md"


def python_example() -> str:
    match = re.search(r"<!-- python-example -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert match, "README has no <!-- python-example --> block"
    return match.group(1)


def test_the_example_is_about_fifteen_lines():
    assert len(python_example().strip().splitlines()) <= 15


def test_the_readme_python_example_runs(live_server, lead, monkeypatch):
    reviewed = create_candidate(
        data=candidate_data(
            scope="acme/billing-api",
            trigger="Rotating a webhook signing key in the billing api",
            content="Roll the webhook signing key out in two steps: add the new key, then retire the old one.",
        ),
        evidence=[],
        actor_label="agent:ci",
    )
    approve_candidate(reviewed.pk, actor=lead, expected_version=reviewed.version)
    publish_pending()  # agents read the published version
    monkeypatch.setenv("MEMORYADMIN_URL", live_server.url)
    monkeypatch.setenv("MEMORYADMIN_TOKEN", token_key("readme-agent", ["acme"]))

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(python_example(), "README.md:python-example", "exec"), {"__name__": "__readme__"})

    submitted = Entry.objects.get(trigger="Rotating the billing-api webhook signing key")
    assert submitted.status == Status.PENDING
    assert "add the new key, then retire the old one" in printed.getvalue()
    assert f"lesson {submitted.pk} pending" in printed.getvalue()
    feedback = Feedback.objects.get()
    assert feedback.outcome == "success" and list(feedback.used_entry_ids) == [reviewed.pk]
