"""The lessons the ingest bench submits, in two corpora (benchmarks/ingest_bench.py --corpus).

`varied` (the default): lessons as many agents working on many systems write them. Ten domains (deploys,
databases, CI, front ends, payments, networking, security, data pipelines, mobile, observability), each with
its own tools, objects, actions, symptoms and fixes, said through several trigger and content phrasings, so
two lessons of different domains share almost no word and two of one domain share a few (a tool, a verb).
Deterministic for a seed. Near duplicates are planted: `paraphrase` rewords a known lesson (another opener,
one to three words swapped for synonyms or dropped, sometimes a clause added) and keeps the rewording only
when its word Jaccard with the original is at least PLANTED_MIN, so each planted pair is a near duplicate by
today's measure too: the bench knows which entry each one must be linked to.

`template`: the corpus the bench used first, one sentence template with four words drawn from one list of 48,
so that every pair of lessons is ~0.27 alike in words: each near-duplicate lookup then finds a hundred real
band candidates. Kept so that a figure on `varied` can be set beside the old one.
"""

from __future__ import annotations

import random
import re

TEMPLATE_WORDS = (
    "deploy migrate config container cache worker queue ledger invoice webhook signing key rotate "
    "restart drain lock retry timeout schema index backup restore release branch rebase merge test "
    "fixture mock session cookie header proxy nginx kubectl helm terraform docker image "
    "build lint format upgrade pin version rollback canary metrics alert log trace"
).split()

# The near-duplicate threshold's margin: a planted paraphrase is at least this alike its original in words.
PLANTED_MIN = 0.45

# Per domain, one line each: its tools; objects; actions (verb:-ing form); symptoms; fixes (split by ";").
_DOMAIN_TEXT = {
    "deploy": (
        "kubectl helm argocd terraform ansible pulumi nomad",
        "pod ingress configmap namespace replicaset daemonset secret volume node cluster",
        "roll out:rolling out, scale:scaling, drain:draining, cordon:cordoning, redeploy:redeploying, promote:promoting, apply:applying",
        "crashloops hangs evicts flaps times out stalls",
        "pin the chart version; wait for the readiness probe; check the pod disruption budget; apply the manifest to staging first; raise the memory limit; set maxUnavailable to one",
    ),
    "database": (
        "postgres mysql pgbouncer flyway alembic liquibase redis",
        "table index replica column partition sequence constraint tablespace vacuum slot",
        "migrate:migrating, reindex:reindexing, backfill:backfilling, truncate:truncating, failover:failing over, restore:restoring, alter:altering",
        "locks deadlocks bloats lags corrupts blocks",
        "take the advisory lock; create the index concurrently; batch the update by primary key; check replication lag; set a statement timeout; run analyze afterwards",
    ),
    "ci": (
        "jenkins github-actions gitlab buildkite bazel gradle tox",
        "pipeline runner artifact cache matrix workflow job step fixture snapshot",
        "rebuild:rebuilding, retry:retrying, bisect:bisecting, cache:caching, shard:sharding, rerun:rerunning, merge:merging",
        "flakes fails silently skips goes red leaks",
        "pin the runner image; clear the dependency cache; quarantine the flaky test; seed the random generator; run the job with a clean checkout; raise the step timeout",
    ),
    "frontend": (
        "webpack vite react storybook cypress playwright eslint",
        "component bundle stylesheet route hydration selector modal form viewport sourcemap",
        "render:rendering, hydrate:hydrating, bundle:bundling, lazy load:lazy loading, memoize:memoizing, debounce:debouncing, prefetch:prefetching",
        "flickers rerenders breaks layout blanks freezes mismatches",
        "wrap the callback in useCallback; split the chunk by route; wait for the network to idle; set an explicit key; move the fetch into the loader; use a stable selector",
    ),
    "payments": (
        "stripe adyen braintree ledger-service invoicer reconciler payout-job",
        "invoice refund charge payout webhook subscription coupon dispute ledger settlement",
        "refund:refunding, capture:capturing, void:voiding, reconcile:reconciling, settle:settling, retry:retrying, prorate:prorating",
        "double charges drifts rejects duplicates mismatches stalls",
        "send an idempotency key; verify the webhook signature; round in minor units; reconcile against the processor report; lock the customer row; record the currency explicitly",
    ),
    "network": (
        "nginx envoy haproxy cloudflare iptables wireguard coredns",
        "listener upstream certificate route dns record tunnel firewall rule socket",
        "reload:reloading, renew:renewing, resolve:resolving, route:routing, terminate:terminating, proxy:proxying, throttle:throttling",
        "resets drops packets loops refuses handshakes expires",
        "lower the record ttl beforehand; reload instead of restart; keep the old certificate chained; raise the keepalive timeout; pin the upstream address; test the config with a dry run",
    ),
    "security": (
        "vault sops trivy snyk opa keycloak certbot",
        "credential policy role token scanner audit vulnerability image permission grant",
        "rotate:rotating, revoke:revoking, scan:scanning, audit:auditing, escalate:escalating, encrypt:encrypting, grant:granting",
        "leaks overgrants expires blocks alerts noisily lapses",
        "scope the role to one namespace; stage the new key before revoking; pin the base image digest; review the policy diff; set a short lease; encrypt the file before committing",
    ),
    "data": (
        "airflow spark dbt kafka flink snowflake pandas",
        "dag partition topic offset schema model watermark checkpoint consumer shuffle",
        "backfill:backfilling, compact:compacting, replay:replaying, repartition:repartitioning, dedupe:deduping, checkpoint:checkpointing, join:joining",
        "skews spills lags duplicates drops rows oom kills",
        "salt the join key; commit offsets after the write; set the watermark explicitly; run the model incrementally; cap the shuffle partitions; dedupe on the event id",
    ),
    "mobile": (
        "xcode gradle fastlane testflight firebase crashlytics expo",
        "build provisioning profile bundle entitlement notification deeplink keystore simulator release",
        "sign:signing, archive:archiving, notarize:notarizing, publish:publishing, symbolicate:symbolicating, upload:uploading, bump:bumping",
        "rejects crashes on launch hangs drains battery loses tokens",
        "bump the build number; renew the provisioning profile; upload the dsym files; test on the oldest supported device; keep the keystore in the vault; request the permission lazily",
    ),
    "observability": (
        "prometheus grafana loki jaeger datadog pagerduty opentelemetry",
        "alert dashboard metric span label exporter scrape retention sampler pager",
        "page:paging, sample:sampling, scrape:scraping, relabel:relabeling, silence:silencing, aggregate:aggregating, instrument:instrumenting",
        "pages at night explodes cardinality misses spans floods gaps",
        "drop the high cardinality label; alert on the burn rate; raise the scrape interval; sample at the head; add a runbook link; silence during the maintenance window",
    ),
}
# domain: (tools, objects, actions (verb, -ing form), symptoms, fixes)
DOMAINS = {
    name: (
        tools.split(),
        objects.split(),
        [tuple(pair.split(":")) for pair in actions.split(", ")],
        symptoms.split(),
        fixes.split("; "),
    )
    for name, (tools, objects, actions, symptoms, fixes) in _DOMAIN_TEXT.items()
}
TRIGGERS = (
    "When {ing} the {obj} with {tool}",
    "While {ing} a {obj} on {tool}",
    "If {tool} {symptom} after you {verb} the {obj}",
    "Before you {verb} the {obj} in {tool}",
    "{tool} {symptom} during {ing} of the {obj}",
    "After {ing} the {obj} through {tool}",
)
CONTENTS = (
    "Never {verb} the {obj} while it {symptom}; {fix} first.",
    "Always {fix} before you {verb} the {obj}.",
    "Do not {verb} the {obj} directly: {fix}, then retry after {n} minutes.",
    "{fix} and {verb} the {obj} only once {tool} reports healthy.",
    "The {obj} {symptom} if you skip it, so {fix}; it took {n} attempts to notice.",
    "Prefer to {fix} rather than {verb} every {obj} by hand.",
)
# What a paraphrase may say instead: openers, synonyms, and words it may add.
OPENERS = {
    "when": ("whenever", "once"),
    "while": ("during", "whilst"),
    "if": ("whenever", "should"),
    "before": ("prior", "ahead"),
    "after": ("following", "once"),
    "never": ("avoid", "dont"),
    "always": ("consistently", "reliably"),
}
SYNONYMS = {
    "first": "beforehand",
    "directly": "straight",
    "retry": "try again",
    "reports": "shows",
    "healthy": "green",
    "skip": "omit",
    "notice": "spot",
    "prefer": "choose",
    "hand": "manually",
    "only": "just",
    "minutes": "mins",
    "attempts": "tries",
    "check": "verify",
    "raise": "increase",
    "set": "configure",
    "pin": "fix",
    "run": "execute",
}
ADDED = ("in staging too", "again this week", "as seen in production", "per the runbook", "on every release")


def _words(text: str) -> set[str]:
    from curation.rules.similarity import words

    return set(words(text))


def template_lesson(rng: random.Random, run: str, i: int, scope: str) -> dict:
    """The first corpus: one template, four of TEMPLATE_WORDS, two numbers and the run's marks."""
    w = rng.sample(TEMPLATE_WORDS, 4)
    part, unit = rng.randrange(500), rng.randrange(500)
    return {
        "scope": scope,
        "kind": "failure_lesson",
        "signal": "self",
        "trigger": f"When {w[0]}ing the part{part} {w[1]} (run {run}, item {i})",
        "content": f"Never {w[2]} the unit{unit} before the {w[3]} is drained; seen in task {run}-{i}.",
        "conditions": [w[0]],
        "source_task": f"bench-{run}-{i}",
        "evidence": [{"kind": "tool_output", "signal": "external", "excerpt": f"{w[1]} failed: exit 1"}],
    }


def template_paraphrase(rng: random.Random, known: dict) -> dict:
    """The first corpus's near duplicate: the opener of the trigger changed, the content's reworded."""
    trigger = known["trigger"].replace("When ", rng.choice(("Whenever ", "While ", "If ")), 1)
    content = known["content"].replace("Never ", rng.choice(("Do not ", "Don't ", "Never ever ")), 1)
    return {"scope": known["scope"], "trigger": trigger, "content": content}


def varied_lesson(rng: random.Random, run: str, i: int, scope: str) -> dict:
    """A lesson of one domain (the scope's favourite half the time: a service's agents mostly meet its own
    systems), in one of the trigger and content phrasings."""
    names = sorted(DOMAINS)
    favourite = names[sum(map(ord, scope)) % len(names)]
    domain = favourite if rng.random() < 0.5 else rng.choice(names)
    tools, objects, actions, symptoms, fixes = DOMAINS[domain]
    verb, ing = rng.choice(actions)
    obj = rng.choice(objects)
    values = {
        "tool": rng.choice(tools),
        "obj": obj,
        "verb": verb,
        "ing": ing,
        "symptom": rng.choice(symptoms),
        "fix": rng.choice(fixes),
        "n": rng.randrange(2, 60),
    }
    trigger = rng.choice(TRIGGERS).format(**values)
    content = rng.choice(CONTENTS).format(**values)
    return {
        "scope": scope,
        "kind": rng.choice(("failure_lesson", "failure_lesson", "procedure", "success_pattern")),
        "signal": rng.choice(("self", "self", "independent")),
        "trigger": trigger[0].upper() + trigger[1:] + f" ({obj}-{rng.randrange(1, 9999)})",
        "content": content[0].upper() + content[1:],
        "conditions": [domain],
        "source_task": f"bench-{run}-{i}",
        "evidence": [
            {"kind": "tool_output", "signal": "external", "excerpt": f"{values['tool']} {values['symptom']}: exit 1"}
        ],
    }


_TOKEN = re.compile(r"[A-Za-z][A-Za-z-]*")


def _reword(rng: random.Random, text: str) -> str:
    """One sentence reworded: its opener replaced, one to three words swapped for a synonym or dropped,
    sometimes a clause added."""
    tokens = _TOKEN.findall(text)
    if tokens and tokens[0].lower() in OPENERS:
        text = text.replace(tokens[0], rng.choice(OPENERS[tokens[0].lower()]).capitalize(), 1)
    changeable = [t for t in dict.fromkeys(_TOKEN.findall(text)) if len(t) > 3]
    for word in rng.sample(changeable, min(len(changeable), rng.randint(1, 3))):
        swap = SYNONYMS.get(word.lower())
        text = re.sub(rf"\b{re.escape(word)}\b", swap if swap else ("" if rng.random() < 0.5 else word), text, 1)
    if rng.random() < 0.4:
        text = text.rstrip(".") + f", {rng.choice(ADDED)}."
    return " ".join(text.split())


def varied_paraphrase(rng: random.Random, known: dict) -> dict:
    """A known lesson said again by another agent: its trigger and content reworded (_reword), kept when
    at least PLANTED_MIN alike the original in words (else reworded afresh, then the lightest rewording)."""
    original = _words(f"{known['trigger']} {known['content']}")
    for _ in range(8):
        trigger, content = _reword(rng, known["trigger"]), _reword(rng, known["content"])
        mine = _words(f"{trigger} {content}")
        if len(mine & original) / len(mine | original) >= PLANTED_MIN:
            break
    else:
        trigger, content = known["trigger"], _reword(rng, known["content"])
    return {"scope": known["scope"], "trigger": trigger, "content": content}


CORPORA = {
    "varied": (varied_lesson, varied_paraphrase),
    "template": (template_lesson, template_paraphrase),
}
