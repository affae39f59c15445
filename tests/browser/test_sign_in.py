"""Signing in, in real Chromium, under the Content-Security-Policy (the browser conftest fails any test
whose pages break it): a wrong password says so, and the fifth in a row locks the name for a while."""

import pytest
from playwright.sync_api import expect

from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_repeated_wrong_passwords_lock_the_sign_in(live_server, page, settings):
    make_user("rita", "reviewer")
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("User name").fill("rita")
        page.get_by_label("Password").fill(f"wrong-{attempt}")
        page.get_by_role("button", name="Log in").click()
        if attempt < settings.AXES_FAILURE_LIMIT - 1:
            expect(page.get_by_role("alert")).to_have_text("That user name and password do not match.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign-in locked for a while")
    expect(page.get_by_role("alert")).to_contain_text("Try again in 15 minutes.")
