"""README's MCP SDK example runs as written, against the ASGI site (Django and /mcp) on a live port."""

import concurrent.futures
import contextlib
import io
import re
from pathlib import Path

from curation.models import Retrieval
from curation.services import approve_candidate, create_candidate
from tests.factories import candidate_data, publish_pending
from tests.live import token_key

README = Path(__file__).resolve().parents[2] / "README.md"


def mcp_example() -> str:
    match = re.search(r"<!-- mcp-python-example -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert match, "README has no <!-- mcp-python-example --> block"
    return match.group(1)


def test_the_readme_mcp_example_runs(asgi_server, lead, monkeypatch):
    reviewed = create_candidate(
        data=candidate_data(
            scope="acme/billing-api",
            trigger="Rotating a webhook signing key in the billing api",
            content="Roll the webhook key out in two steps: add the new key, then retire the old one.",
        ),
        evidence=[],
        actor_label="agent:ci",
    )
    approve_candidate(reviewed.pk, actor=lead, expected_version=reviewed.version)
    publish_pending()
    monkeypatch.setenv("MEMORYADMIN_URL", asgi_server)
    monkeypatch.setenv("MEMORYADMIN_TOKEN", token_key("readme-mcp-agent", ["acme"]))

    def run() -> str:  # in a thread of its own: its asyncio.run needs no loop running where it starts
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(mcp_example(), "README.md:mcp-python-example", "exec"), {"__name__": "__readme__"})
        return printed.getvalue()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        printed = pool.submit(run).result(timeout=60)
    assert "add the new key, then retire the old one" in printed
    assert Retrieval.objects.filter(token__name="readme-mcp-agent").count() == 1
