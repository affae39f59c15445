"""The browser layer drives Debian's /usr/bin/chromium (or $CHROMIUM) through Playwright."""

import os
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not CHROMIUM.exists():
        message = f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + ": browser tests are required in CI")
        pytest.skip(message)
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture(autouse=True)
def no_content_security_policy_violations(request):
    """Every browser test also proves the pages work under the Content-Security-Policy: Chromium reports
    each refused inline script, style or eval on the console, and any such report fails the test."""
    if "page" not in request.fixturenames:
        yield
        return
    page = request.getfixturevalue("page")
    refused = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    yield
    assert refused == []
