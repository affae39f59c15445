"""A skill outside a token's scopes answers exactly like one that does not exist, for every verb."""

import pytest

from tests.factories import nominated

pytestmark = pytest.mark.django_db

TRIAL = {"outcome": "success", "task_ref": "task-1", "notes": ""}


def test_every_verb_on_a_skill_outside_the_token_answers_like_an_unknown_one(agent):
    hidden = nominated(scope="acme/web", trigger="Running the web migrations in the container")
    for verb in ("get", "post", "put", "delete", "patch"):
        for path, body in (
            (f"skills/{hidden.slug}", None),
            (f"skills/{hidden.slug}/trials", TRIAL),
            (f"skills/{hidden.slug}/trials", {"outcome": "maybe"}),
        ):
            unknown_path = path.replace(hidden.slug, "no-such-skill")
            if verb == "get":
                answer, expected = agent.get(path), agent.get(unknown_path)
            elif verb == "post":
                answer, expected = agent.post(path, body or {}), agent.post(unknown_path, body or {})
            else:
                client, headers = agent.client, agent.headers()
                answer = getattr(client, verb)(f"/api/v1/{path}", **headers)
                expected = getattr(client, verb)(f"/api/v1/{unknown_path}", **headers)
            assert (answer.status_code, answer.json()) == (expected.status_code, expected.json()), (verb, path)
    assert agent.post(f"skills/{hidden.slug}/trials", TRIAL).status_code == 404
    assert hidden.slug not in agent.get("skills").content.decode()
    assert not hidden.trials.exists()
