"""`python manage.py seed_demo`: a realistic demo data set for the console.

The lessons of curation/demo/lessons.py are replayed in time order over the last ~90 days through the
services and the sweeps the product itself uses, each as of its moment, so every entry has the history
the console would have written: decisions, outcomes reported by agents, archives, rechecks, proposals.

Idempotent: once entries whose source_task starts with "demo:" exist, no entry is added again;
users are get_or_create'd and keep their password unless --password is given.
"""

from __future__ import annotations

import datetime
import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Count, Q

from curation import services
from curation.rules import clock, config
from curation.demo.lessons import AGENT_TOKEN_SCOPES, DEMO_TASK_PREFIX, timeline
from curation.rules.access import EVERY_SCOPE
from curation.models import (
    AgentToken,
    Conflict,
    ConsolidationProposal,
    Entry,
    Event,
    Evidence,
    ScopeGrant,
    SimilarEntry,
    SkillProposal,
    Status,
)
from curation.services.consolidation import accept_proposal
from curation.sweeps import run_sweep
from curation.services.skills import approve_skill, record_skill_trial
from curation.selectors.tokens import hash_key
from curation.services.releases import publish_version
from curation.services.tokens import create_agent_token
from curation.services.usage import record_feedback, record_retrieval

DEFAULT_PASSWORD = "memoryadmin"
DEMO_AGENT_TOKEN_NAME = "demo-agent"
DEMO_AGENT_SCOPES = ("acme", "globex", "initech")

# (username, group, scope prefixes the user is limited to)
# Every scope is a grant of its own: a person without grants sees nothing.
DEMO_USERS = (
    ("reviewer", "reviewer", (EVERY_SCOPE,)),
    ("lead", "lead", (EVERY_SCOPE,)),
    ("auditor", "auditor", (EVERY_SCOPE,)),
    ("reviewer-billing", "reviewer", ("acme/billing-api",)),
)


def _acted_on(task: str, entry: Entry, at) -> bool:
    """Whether the sweep `task` run as of `at` acted on `entry`: opened a queue item for it, or changed it."""
    if task == "consolidation":
        return entry.consolidation_proposals.filter(created_at=at).exists()
    if task == "conflicts":
        return Conflict.objects.filter(Q(entry_a=entry) | Q(entry_b=entry), created_at=at).exists()
    if task == "skill_nomination":
        return SkillProposal.objects.filter(nominated_entry=entry, created_at=at).exists()
    return entry.events.filter(created_at=at, actor__isnull=True).exists()


class Replay:
    """The steps of the demo lessons, one at a time in time order, each as of its own moment."""

    def __init__(self, lead, now):
        self.lead, self.now = lead, now
        self.entries: dict[str, Entry] = {}
        self.tokens: dict[str, AgentToken] = {}
        self.sweeps = 0  # background sweep runs replayed

    def token(self, agent: str) -> AgentToken:
        """The agent's token for its retrievals, outcomes and trial runs (made on first use; its secret is
        never shown: make demo prints the demo-agent token for the README's session)."""
        if agent not in self.tokens:
            name = agent.removeprefix("agent:").replace("@", "-")
            self.tokens[agent] = create_agent_token(name=name, scopes=AGENT_TOKEN_SCOPES[agent])[0]
        return self.tokens[agent]

    def submit(self, spec, at) -> None:
        data = dict(spec["data"])
        if spec["review_by_days"] is not None:
            data["review_by"] = (self.now + datetime.timedelta(days=spec["review_by_days"])).date()
        evidence = [{**e, "observed_at": at - datetime.timedelta(minutes=25)} for e in spec["evidence"]]
        self.entries[spec["key"]] = services.create_candidate(
            data=data, evidence=evidence, actor_label=spec["agent"], at=at
        )

    def step(self, spec, action: str, params: dict, at) -> None:
        entry = Entry.objects.get(pk=self.entries[spec["key"]].pk)
        reason = (params.get("reason") or "").format(**{k: f"#{e.pk}" for k, e in self.entries.items()})
        decision = {"actor": self.lead, "expected_version": entry.version, "at": at}
        if action == "approve":
            services.approve_candidate(entry.pk, reason=reason, **decision)
        elif action == "edit_approve":
            services.edit_and_approve(entry.pk, changes=params["changes"], reason=reason, **decision)
        elif action == "reject":  # an active entry back in the queue for a recheck is retired
            services.reject_candidate(entry.pk, reason=reason, **decision)
        elif action == "defer":
            services.defer_candidate(entry.pk, reason=reason, hours=params["hours"], **decision)
        elif action == "evidence":
            by = params.get("by", spec["agent"])
            data = {**params["evidence"], "observed_at": at - datetime.timedelta(minutes=10)}
            who = {"actor": self.lead} if by == "lead" else {"actor_label": by}
            services.add_evidence(entry.pk, data=data, at=at, **who)
        elif action == "use":  # a retrieval by the agent, and the outcome it reported 40 minutes later
            token = self.token(spec["agent"])
            retrieval = record_retrieval(
                token=token, scope=entry.scope, query=entry.trigger, task_ref=params["task"], entries=[entry], at=at
            )
            record_feedback(
                token=token,
                retrieval_id=str(retrieval.pk),
                outcome=params["outcome"],
                utility=params.get("utility"),
                at=at + datetime.timedelta(minutes=40),
            )
        elif action == "sweep":
            self.sweep(spec["key"], entry, params["task"], at)
        elif action == "supersedes":
            self.supersede(entry, self.entries[params["older"]], reason, at)
        elif action == "trial":
            record_skill_trial(
                token=self.token(spec["agent"]),
                at=at,
                slug=SkillProposal.objects.get(nominated_entry=entry).slug,
                data={"outcome": params["outcome"], "task_ref": params["task"], "notes": "ran the skill as written"},
            )
        elif action == "approve_skill":
            proposal = SkillProposal.objects.get(nominated_entry=entry)
            approve_skill(proposal.pk, actor=self.lead, expected_version=proposal.version, note=reason, at=at)
        else:
            raise CommandError(f"demo lesson {spec['key']}: unknown step {action!r}")

    def sweep(self, key: str, entry: Entry, task: str, at) -> None:
        # `full`: the detecting sweeps otherwise read only what changed since their last run by the wall
        # clock, and a replay of the past wrote everything "before" it.
        _, sweep = run_sweep(task, as_of=at, triggered_by="demo", full=True)
        self.sweeps += 1
        if sweep.changed != 1 or not _acted_on(task, entry, at):
            raise CommandError(
                f"demo lesson {key}: the {task} sweep as of {at:%Y-%m-%d %H:%M} changed "
                f"{sweep.changed} rows; the demo expects it to act on this entry alone. " + "; ".join(sweep.samples)
            )

    def supersede(self, newer: Entry, older: Entry, note: str, at) -> None:
        """The lead accepts the consolidation proposal to replace `older` by `newer`."""
        proposal = newer.consolidation_proposals.get(state=ConsolidationProposal.State.OPEN)
        members = set(proposal.entries.values_list("id", flat=True))
        if (
            proposal.kind != ConsolidationProposal.Kind.SUPERSEDE
            or members != {newer.pk, older.pk}
            or proposal.target_id != newer.pk
        ):
            raise CommandError(f"consolidation #{proposal.pk} is not #{newer.pk} replacing #{older.pk}")
        accept_proposal(proposal.pk, actor=self.lead, note=note, at=at)


class Command(BaseCommand):
    help = "Load a realistic demo data set (users, ~80 entries in every state) through the services."

    def add_arguments(self, parser):
        parser.add_argument(
            "--password",
            default=None,
            help=f"Password for the demo users (default {DEFAULT_PASSWORD!r}; existing users "
            "keep theirs unless this is given).",
        )
        parser.add_argument(
            "--agent-token",
            default=None,
            metavar="T",
            help="Also create the agent token 'demo-agent' with secret T, covering every demo "
            "scope (at least 16 characters; kept if it already exists).",
        )

    def handle(self, *args, password=None, agent_token=None, **options):
        with transaction.atomic():
            logins = self.seed_users(password)
            if Entry.objects.filter(source_task__startswith=DEMO_TASK_PREFIX).exists():
                self.stdout.write("Demo entries already present; no entries added.")
            elif Entry.objects.exists():
                # The replay runs the real sweeps as of past moments: they would archive, queue and propose
                # on the entries already here too.
                raise CommandError(
                    f"seed_demo fills an empty database, and this one holds {Entry.objects.count()} entries of its "
                    "own; nothing was added. Point MEMORYADMIN_DATA_DIR (or DATABASE_URL) at an empty one."
                )
            else:
                # The timeline's stories (a failure sends an entry back for a recheck, a reviewer confirms it)
                # are told with the design notes' outcome rule; a handful of outcomes per lesson is too few
                # for the default rule's verdicts.
                with config.overriding(OUTCOME_RULE="steps"):
                    self.seed_entries()
                # Agents read the published version: the demo's lead publishes what the replay curated.
                publish_version(
                    actor=get_user_model().objects.get(username="lead"),
                    acknowledge=True,
                    summary="The demo's curated memory.",
                )
        if agent_token:
            self.seed_agent_token(agent_token)
        self.print_summary(logins)

    def seed_agent_token(self, key):
        if AgentToken.objects.filter(key_hash=hash_key(key)).exists():
            self.stdout.write("The demo agent token is already present.")
            return
        try:
            create_agent_token(name=DEMO_AGENT_TOKEN_NAME, scopes=DEMO_AGENT_SCOPES, key=key)
        except ValidationError as exc:
            raise CommandError("; ".join(" ".join(m) for m in exc.message_dict.values())) from None
        self.stdout.write(
            f"Agent token {DEMO_AGENT_TOKEN_NAME!r} for the agent API, scopes "
            f"{', '.join(DEMO_AGENT_SCOPES)}: Authorization: Bearer {key}"
        )

    def seed_users(self, password):
        User = get_user_model()
        logins = []
        for username, group_name, prefixes in DEMO_USERS:
            try:
                group = Group.objects.get(name=group_name)
            except Group.DoesNotExist:
                raise CommandError(f"Group {group_name!r} is missing: run `manage.py migrate` first.") from None
            user, created = User.objects.get_or_create(username=username)
            if created or password is not None:
                user.set_password(password if password is not None else DEFAULT_PASSWORD)
                user.save(update_fields=["password"])
                shown = password if password is not None else DEFAULT_PASSWORD
            else:
                shown = "(unchanged)"
            user.groups.add(group)
            for prefix in prefixes:
                ScopeGrant.objects.get_or_create(user=user, prefix=prefix)
            reach = ", ".join("all scopes" if prefix == EVERY_SCOPE else prefix for prefix in prefixes)
            logins.append((username, group_name, reach, shown))
        return logins

    def seed_entries(self):
        now = clock.now()
        # fresh: permissions not cached from before the group add
        replay = Replay(get_user_model().objects.get(username="lead"), now)
        # Each sweep run logs a line; replayed as of past moments they are the demo's own steps, said once below.
        runs_log = logging.getLogger("curation.sweeps.runs")
        level, runs_log.level = runs_log.level, logging.WARNING
        try:
            for at, spec, action, params in timeline(now):
                if action == "submit":
                    replay.submit(spec, at)
                else:
                    replay.step(spec, action, params, at)
        finally:
            runs_log.setLevel(level)
        self.stdout.write(
            self.style.SUCCESS(
                f"Added {len(replay.entries)} demo entries ({replay.sweeps} background sweep runs replayed as of their days)."
            )
        )

    def print_summary(self, logins):
        counts = dict(Entry.objects.values_list("status").annotate(n=Count("id")).order_by())
        self.stdout.write("Entries by state:")
        for status in Status:
            self.stdout.write(f"  {status.value:<11} {counts.get(status.value, 0):>4}")
        queued = Entry.objects.filter(queued_at__isnull=False).count()
        self.stdout.write(
            f"  in the queue {queued} (of which rechecks "
            f"{Entry.objects.filter(queue_reason__startswith='recheck').count()}); "
            f"evidence {Evidence.objects.count()}, events {Event.objects.count()}, "
            f"similar links {SimilarEntry.objects.count()}"
        )
        skills = dict(SkillProposal.objects.values_list("status").annotate(n=Count("id")).order_by())
        self.stdout.write(
            "Skills: "
            + ", ".join(f"{skills.get(s, 0)} {s}" for s in SkillProposal.Status.values)
            + " (the queue at /review/skills/, approved ones at /skills/)"
        )
        self.stdout.write("Logins:")
        for username, role, scopes, password in logins:
            self.stdout.write(f"  {username:<17} {role:<9} {scopes:<18} password: {password}")
