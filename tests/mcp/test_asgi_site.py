"""The production entry point (memoryadmin.asgi, as gunicorn's uvicorn workers and `make demo` serve it)
answers the console and the API as the WSGI server did, beside /mcp."""

import httpx
import pytest

from tests.factories import PASSWORD, api_candidate, make_user
from tests.live import token_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reviewer_logs_in_through_the_asgi_server(asgi_server):
    make_user("rita", "reviewer")
    with httpx.Client(base_url=asgi_server) as browser:
        form = browser.get("/accounts/login/")
        assert form.status_code == 200 and "csrftoken" in browser.cookies
        signed_in = browser.post(
            "/accounts/login/",
            data={"username": "rita", "password": PASSWORD, "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
            headers={"Referer": f"{asgi_server}/accounts/login/"},
        )
        assert signed_in.status_code == 302 and "sessionid" in browser.cookies
        queue = browser.get("/review/candidates/")
        assert queue.status_code == 200 and "candidates" in queue.text.lower()
        assert browser.get("/static/curation/app.css").status_code == 200


def test_the_api_answers_bodies_and_query_strings_through_the_asgi_server(asgi_server):
    headers = {"Authorization": f"Bearer {token_key('asgi-agent', ['acme'])}"}
    created = httpx.post(f"{asgi_server}/api/v1/candidates", headers=headers, json=api_candidate(scope="acme/web"))
    assert created.status_code == 201 and created.json()["status"] == "pending"
    refused = httpx.get(f"{asgi_server}/api/v1/skills?scope=globex", headers=headers)
    assert refused.status_code == 403 and "globex" in refused.json()["error"]
