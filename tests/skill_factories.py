"""Rows for the skill promotion tests: entries with a usage history that passes (or just misses) the
promotion gates, nominated proposals, and trial reports."""

import datetime

from curation.models import Entry, Event, SkillProposal
from curation.services import skills
from curation.sweeps import run_sweep
from curation.services.tokens import create_agent_token
from curation.similarity import fingerprint
from tests.maintenance_factories import AS_OF, days_before, make_entry

MIGRATE = dict(
    kind="procedure",
    scope="acme/billing-api/container",
    trigger="Running migrations in the billing-api container",
    content="Run `python manage.py migrate` from /srv/app, not from /workspace.\n"
            "Check `python manage.py showmigrations` lists every migration as applied.\n"
            "Rollback: `python manage.py migrate billing <previous>` from /srv/app, then restart the worker.",
    boundary="Not on the host checkout, where `make migrate` sets the directory.",
    conditions=["container", "migrations"],
)


def record_uses(entry: Entry, outcomes, *, end: datetime.datetime = AS_OF) -> None:
    """Outcome Events as services/usage.py writes them, oldest first, one hour apart, the last at `end`."""
    outcomes = list(outcomes)
    Event.objects.bulk_create(
        Event(entry=entry, entry_label=entry.label, actor_label="agent:ci", action=f"outcome_{outcome}",
              entry_version=entry.version, created_at=end - datetime.timedelta(hours=len(outcomes) - 1 - i))
        for i, outcome in enumerate(outcomes)
    )


def ready_entry(*, hits: int = 12, utility: float = 0.9, outcomes=None, **fields) -> Entry:
    """An active procedure that passes every nomination gate unless a field says otherwise: `hits` uses,
    all successful (or `outcomes`, oldest first), at `utility` on average."""
    outcomes = list(outcomes) if outcomes is not None else ["success"] * hits
    values = {**MIGRATE, "hit_count": hits, "utility_n": hits, "utility_sum": utility * hits,
              "last_verified_at": days_before(1), "trigger": MIGRATE["trigger"]}
    values.update(fields)
    values.setdefault("fingerprint", fingerprint(values["trigger"], values["content"]))
    entry = make_entry(**values)
    record_uses(entry, outcomes)
    return entry


def nominate(at: datetime.datetime = AS_OF):
    run, sweep = run_sweep("skill_nomination", as_of=at)
    return sweep


def nominated(**fields) -> SkillProposal:
    entry = ready_entry(**fields)
    nominate()
    return SkillProposal.objects.get(nominated_entry=entry)


def agent_token(name: str = "skill-agent", scopes=("acme/billing-api",)):
    token, _ = create_agent_token(name=name, scopes=list(scopes))
    return token


def report(proposal: SkillProposal, outcomes=("success",) * 5, *, token=None, prefix: str = "task"):
    token = token or agent_token(f"trial-agent-{proposal.pk}-{prefix}", scopes=[proposal.scope])
    return [skills.record_skill_trial(token=token, slug=proposal.slug,
                                      data={"outcome": o, "task_ref": f"{prefix}-{i}", "notes": ""})
            for i, o in enumerate(outcomes)]
