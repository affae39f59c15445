"""What `make load` runs (benchmarks/load/run.py starts it headless): 8 reviewers deciding candidates in the
console, and 32 agents retrieving, submitting lessons and reporting their tasks' outcomes through the API.

Reviewer j signs in as `load-reviewer-j` and reviews scope `load/team<j>`; agent i holds the token of
`load/team<i % 8>`. Each reviewer has a scope of its own, as a team would: two people deciding the same card
at the same moment is the console's concurrency tests' business, not a load figure. Names, passwords and
tokens are the ones run.py seeds (LOAD_PASSWORD, token_key)."""

import collections
import json
import os
import random
import re
import uuid

from locust import HttpUser, between, events, task

TEAMS = 8
PASSWORD = "load-reviewer-password-7c1d"
WORDS = (
    "deploy migrate config container cache worker queue ledger invoice webhook signing rotate restart "
    "drain lock retry timeout schema index backup restore release branch rebase merge fixture session "
    "cookie header proxy nginx kubectl helm terraform docker image build lint upgrade pin rollback canary "
    "metrics alert trace"
).split()
_CARD = re.compile(
    r'action="(/review/candidates/(\d+)/)approve/"[^>]*>\s*<input type="hidden" '
    r'name="csrfmiddlewaretoken" value="([^"]+)"><input type="hidden" name="version" value="(\d+)"'
)
_LOGIN_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


# Which server answered each retrieval (the Memory-Read-From header), written for run.py when locust stops.
READ_FROM: collections.Counter = collections.Counter()


@events.quitting.add_listener
def _write_read_counts(environment, **kwargs):
    if path := os.environ.get("LOAD_READS_FILE"):
        with open(path, "w") as handle:
            json.dump(dict(READ_FROM), handle)


def token_key(i: int) -> str:
    return f"load-agent-{i:02d}-{uuid.UUID(int=i * 7919 + 104729).hex}"


def query(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 3))


class Reviewer(HttpUser):
    fixed_count = 8
    wait_time = between(2, 6)  # reading a card takes a person a few seconds
    _next = iter(range(10**6))

    def on_start(self):
        self.number = next(Reviewer._next) % TEAMS
        page = self.client.get("/accounts/login/", name="GET /accounts/login/")
        csrf = _LOGIN_CSRF.search(page.text).group(1)
        with self.client.post(
            "/accounts/login/",
            name="POST /accounts/login/",
            allow_redirects=False,
            data={"username": f"load-reviewer-{self.number}", "password": PASSWORD, "csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{self.host}/accounts/login/"},
            catch_response=True,
        ) as answer:
            if answer.status_code != 302:
                answer.failure(f"sign-in answered {answer.status_code}")

    @task(5)
    def decide_a_candidate(self):
        page = self.client.get("/review/candidates/", name="GET /review/candidates/")
        cards = _CARD.findall(page.text)
        if not cards:
            return
        base, pk, csrf, version = random.choice(cards)
        headers = {"HX-Request": "true", "X-CSRFToken": csrf, "Referer": f"{self.host}/review/candidates/"}
        if random.random() < 0.75:
            self.client.post(
                f"{base}approve/",
                name="POST /review/candidates/[id]/approve/",
                data={"version": version},
                headers=headers,
            )
        else:
            self.client.post(
                f"{base}reject/",
                name="POST /review/candidates/[id]/reject/",
                data={"version": version, "reason": "too broad for this scope"},
                headers=headers,
            )

    @task(1)
    def look_at_the_dashboard(self):
        self.client.get("/", name="GET / (dashboard)")

    @task(1)
    def look_at_conflicts(self):
        self.client.get("/review/conflicts/", name="GET /review/conflicts/")


class Agent(HttpUser):
    fixed_count = 32
    wait_time = between(0.5, 2)
    _next = iter(range(10**6))

    def on_start(self):
        self.number = next(Agent._next) % 32
        self.rng = random.Random(self.number)
        self.scope = f"load/team{self.number % TEAMS}/svc{self.number}"
        self.client.headers["Authorization"] = f"Bearer {token_key(self.number)}"
        self.unreported: list[str] = []

    @task(6)
    def retrieve(self):
        answer = self.client.post(
            "/api/v1/memory/search",
            name="POST /api/v1/memory/search",
            json={"scope": self.scope, "q": query(self.rng), "k": 5},
        )
        if answer.status_code == 200:
            self.unreported.append(answer.json()["retrieval_id"])
            READ_FROM[answer.headers.get("Memory-Read-From", "primary")] += 1

    @task(3)
    def report_an_outcome(self):
        if not self.unreported:
            return
        retrieval = self.unreported.pop(0)
        self.client.post(
            "/api/v1/feedback",
            name="POST /api/v1/feedback",
            json={"retrieval_id": retrieval, "outcome": "success" if self.rng.random() < 0.8 else "failure"},
        )

    @task(2)
    def submit_a_lesson(self):
        w = self.rng.sample(WORDS, 4)
        n = uuid.uuid4().hex[:8]
        self.client.post(
            "/api/v1/candidates",
            name="POST /api/v1/candidates",
            json={
                "scope": self.scope,
                "kind": "failure_lesson",
                "signal": "self",
                "trigger": f"When {w[0]}ing the {w[1]} of job {n}",
                "content": f"Always {w[2]} the {w[3]} before retrying job {n}.",
                "boundary": "Not in the staging cluster.",
                "conditions": [w[0]],
                "evidence": [{"kind": "tool_output", "signal": "external", "excerpt": f"{w[1]} failed: exit 1"}],
            },
        )
