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
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"],
    }
