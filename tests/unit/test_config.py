"""The typed config (curation/rules/config.py): every curation setting is declared once, read through its
declaration, and a value the app could not use stops it at start-up with the setting's name."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from curation.rules import config, lifecycle, lift
from curation.models import EventAction
from curation.sweeps import registry

ROOT = Path(__file__).resolve().parents[2]


def test_the_defaults_are_values_the_settings_may_take():
    for setting in config.SETTINGS.values():
        assert setting.kind.check(setting.default) == setting.default, setting.name
    assert config.problems(event_actions=EventAction.values) == []


def test_a_value_out_of_range_names_the_setting_and_what_it_may_be(settings):
    settings.CURATION = {**settings.CURATION, "DECAY_FACTOR": "x"}
    message = "CURATION['DECAY_FACTOR'] must be a number in (0, 1], not 'x'"
    with pytest.raises(config.SettingError) as raised:
        config.DECAY_FACTOR.value
    assert str(raised.value) == message
    assert isinstance(raised.value, ImproperlyConfigured) and isinstance(raised.value, ValueError)
    with pytest.raises(config.SettingError, match=r"DECAY_FACTOR"):
        lifecycle.rules()  # every reader of it refuses, not only the start-up check
    assert message in config.problems()


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("DECAY_FACTOR", 0, "CURATION['DECAY_FACTOR'] must be a number in (0, 1], not 0"),
        ("ARCHIVE_BELOW", 1.5, "CURATION['ARCHIVE_BELOW'] must be a number in [0, 1], not 1.5"),
        ("FLOOR", float("nan"), "CURATION['FLOOR'] must be a number in [0, 1], not nan"),
        ("QUEUE_PAGE_SIZE", 0, "CURATION['QUEUE_PAGE_SIZE'] must be a whole number >= 1, not 0"),
        ("SWEEP_BATCH_SIZE", 50.0, "CURATION['SWEEP_BATCH_SIZE'] must be a whole number >= 1, not 50.0"),
        ("API_RATE_LIMIT", True, "CURATION['API_RATE_LIMIT'] must be a whole number >= 0, not True"),
        ("RECHECK_ON_FAILURE", "yes", "CURATION['RECHECK_ON_FAILURE'] must be True or False, not 'yes'"),
        ("OUTCOME_RULE", "sometimes", "CURATION['OUTCOME_RULE'] must be one of 'lift', 'steps', not 'sometimes'"),
        ("DEFER_HOURS", 24 * 91, "CURATION['DEFER_HOURS'] must be a number in (0, 2160], not 2184"),
        ("SCOPE_CAPACITY", {"acme": -1}, "CURATION['SCOPE_CAPACITY']['acme'] must be a whole number >= 0, not -1"),
        (
            "SCOPE_CAPACITY",
            {"Acme Corp": 5},
            "CURATION['SCOPE_CAPACITY']['Acme Corp'] (its key) must be a scope "
            "prefix such as 'acme/billing-api', not 'Acme Corp'",
        ),
        (
            "TWO_REVIEWER_SCOPES",
            "acme",
            "CURATION['TWO_REVIEWER_SCOPES'] must be a list of scope prefixes such as ['acme/billing-api'], not 'acme'",
        ),
        (
            "DEFAULT_CONFIDENCE",
            {"self": 0.7, "external": 2},
            "CURATION['DEFAULT_CONFIDENCE']['external'] must be a number in [0, 1], not 2",
        ),
    ],
)
def test_each_kind_of_value_refused_says_why(settings, key, value, message):
    settings.CURATION = {**settings.CURATION, key: value}
    assert config.problems() == [message]


def test_a_key_that_is_not_a_setting_is_refused_rather_than_ignored(settings):
    settings.CURATION = {**settings.CURATION, "DECAY_FACTR": 0.9}
    settings.CURATION_EVALUATION = {"HOLDOUT_FRACTION": {"acme": 0.1}}
    assert config.problems() == [
        "CURATION['DECAY_FACTR'] is not a setting (curation/rules/config.py lists them)",
        "CURATION_EVALUATION['HOLDOUT_FRACTION'] is not a setting (curation/rules/config.py lists them)",
    ]


def test_the_other_dicts_are_checked_too(settings):
    settings.CURATION_ADMISSION = {"acme/ci": {"name": "ci-gate", "mode": "sometimes"}}
    settings.CURATION_RELEASES = {"AUTO_PUBLISH_ACTIONS": ["outcome_success", "approve_everything"]}
    settings.CURATION_EVALUATION = {"HOLDOUT_FRACTIONS": {"acme": 0.1}, "MIN_TASKS_PER_ARM": 0}
    assert config.problems(event_actions=EventAction.values) == [
        "CURATION_EVALUATION['MIN_TASKS_PER_ARM'] must be a whole number >= 1, not 0",
        "CURATION_ADMISSION['acme/ci'] must be a valid policy (mode: One of: manual, auto, all, none.), "
        "not {'name': 'ci-gate', 'mode': 'sometimes'}",
        "CURATION_RELEASES['AUTO_PUBLISH_ACTIONS'] must name event actions, not ['approve_everything']",
    ]


def test_a_setting_is_typed_and_read_at_each_call(settings):
    assert config.HOLDOUT_FRACTIONS.value == {}
    settings.CURATION_EVALUATION = {"HOLDOUT_FRACTIONS": {"acme": 0.25}}
    assert config.HOLDOUT_FRACTIONS.value == {"acme": 0.25}
    settings.CURATION_ADMISSION = {
        "acme/ci": {"name": "ci-gate", "mode": "auto", "evaluator": "ci", "threshold": "0.8"}
    }
    policy = config.CURATION_ADMISSION.value["acme/ci"]
    assert (policy.prefix, policy.mode, policy.evaluator, policy.threshold) == ("acme/ci", "auto", "ci", 0.8)


def test_the_environment_sets_the_few_that_name_a_variable(settings, monkeypatch):
    monkeypatch.setenv("MEMORYADMIN_API_RATE_LIMIT", "7")
    monkeypatch.setenv("TWO_REVIEWER_SCOPES", "acme/billing-api, globex")
    assert config.API_RATE_LIMIT.value == 7
    assert config.TWO_REVIEWER_SCOPES.value == ["acme/billing-api", "globex"]
    settings.CURATION = {**settings.CURATION, "API_RATE_LIMIT": 3}
    assert config.API_RATE_LIMIT.value == 3  # settings.py (or a test's override) wins over the environment
    monkeypatch.setenv("MEMORYADMIN_OUTCOME_RULE", "sometimes")
    with pytest.raises(ValueError) as raised:
        lift.lift_settings()
    assert str(raised.value) == (
        "MEMORYADMIN_OUTCOME_RULE (for CURATION['OUTCOME_RULE']) must be one of 'lift', 'steps', not 'sometimes'"
    )


def test_overriding_sets_known_settings_for_a_block_and_refuses_unknown_ones():
    with config.overriding(OUTCOME_RULE="steps", DECAY_FACTOR=1.0):
        assert (config.OUTCOME_RULE.value, config.DECAY_FACTOR.value) == ("steps", 1.0)
    assert (config.OUTCOME_RULE.value, config.DECAY_FACTOR.value) == ("lift", 0.95)
    with pytest.raises(config.SettingError, match=r"Not settings: CURATION\['DECAY_FACTR'\]"):
        config.overriding(DECAY_FACTR=1.0)


def _run_manage(*args, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    environment.update(DJANGO_SETTINGS_MODULE="memoryadmin.settings", SECRET_KEY="k" * 60, **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def test_a_bad_setting_stops_the_app_at_start_up_naming_it(tmp_path):
    result = _run_manage("check", MEMORYADMIN_DATA_DIR=str(tmp_path), MEMORYADMIN_API_RATE_LIMIT="lots")
    assert result.returncode != 0
    assert (
        "MEMORYADMIN_API_RATE_LIMIT (for CURATION['API_RATE_LIMIT']) must be a whole number >= 0, not 'lots'"
        in result.stderr
    )


def test_the_beat_schedule_is_the_registrys():
    """One list: every sweep of the registry, on the schedule its entry declares (README: Background curation),
    and beside them the flush of the agents' buffered reads, every 5 seconds."""
    scheduled = dict(django_settings.CELERY_BEAT_SCHEDULE)
    assert scheduled.pop("flush-retrievals") == {
        "task": "curation.retrievals.flush",
        "schedule": 5.0,
        "options": {"expires": 10},
    }
    assert scheduled == registry.beat_schedule()
    cron = {name.removeprefix("lifecycle-"): entry["schedule"] for name, entry in scheduled.items()}
    assert {name: (str(s._orig_minute), str(s._orig_hour)) for name, s in cron.items()} == {
        "decay": ("0", "2"),
        "archive": ("20", "2"),
        "revive": ("40", "*"),
        "unused": ("0", "3"),
        "low_utility": ("20", "3"),
        "skill_nomination": ("0", "4"),
        "review_due": ("0", "6"),
        "capacity": ("*/15", "*"),
        "auto_publish": ("50", "*"),
        "vacuum_purged": ("*/30", "*"),
        "partitions": ("30", "1"),
        "conflicts": ("10", "*"),
        "consolidation": ("40", "3"),
        "injection_scan": ("25", "*"),
    }
    expires = {name: entry["options"]["expires"] for name, entry in scheduled.items()}
    assert expires.pop("lifecycle-capacity") == 15 * 60 and set(expires.values()) == {3600}


def _is_settings(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "settings") or (
        isinstance(node, ast.Attribute) and node.attr == "settings"
    )


def _reads_of_curation_settings(path: Path) -> list[str]:
    """settings.CURATION..., and getattr(settings, "CURATION...")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("CURATION")
            and _is_settings(node.value)
            and isinstance(node.ctx, ast.Load)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and _is_settings(node.args[0])
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("CURATION")
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_only_the_config_module_reads_the_curation_settings():
    """settings.CURATION* is read in one place, where each value is checked; anywhere else a typo or an
    out-of-range value would be used as it is."""
    paths = [
        p
        for folder in ("curation", "benchmarks")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if "migrations" not in p.parts and p != ROOT / "curation" / "rules" / "config.py"
    ]
    assert [read for path in paths for read in _reads_of_curation_settings(path)] == []


def test_the_confidence_rules_follow_a_changed_setting_at_once(settings):
    """lifecycle.rules() is kept while CURATION is the same dict (an agent's read asks for it ten times):
    a new CURATION, as override_settings and config.overriding make, is read on the next call."""
    first = lifecycle.rules()
    assert lifecycle.rules() is first
    with config.overriding(DECAY_FACTOR=0.5, DEFAULT_CONFIDENCE={"self": 0.4, "independent": 0.6, "external": 0.7}):
        assert lifecycle.rules().decay_factor == 0.5
        assert lifecycle.rules().default_confidence["self"] == 0.4
    settings.CURATION = {**settings.CURATION, "CEILING": 0.9}
    assert lifecycle.rules().ceiling == 0.9 and lifecycle.rules().decay_factor == first.decay_factor
