"""Every curation setting, declared once: where it is set, its type and range, its default and what it means.

Code reads a setting through its declaration, `config.DECAY_FACTOR.value`, never `settings.CURATION`: the
value is looked up in django.conf.settings at the call (so `override_settings` and the replay's overrides
take effect: they replace the dict, which is how a setting is changed, never by writing into it), checked
against the declaration and returned with its type; a value out of range raises `SettingError` naming the
setting. A deployment sets a key in settings.py's `CURATION` (or
`CURATION_RELEASES`, `CURATION_EVALUATION`, `CURATION_ADMISSION`) or, for the few that name a variable, in
the environment; a key set nowhere is its default here. `problems()` lists every value out of range and every
key that is not a setting, and the app refuses to start while there is one (CurationConfig.ready).
"""

from __future__ import annotations

import math
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Collection, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.test.utils import override_settings

from curation.rules import admission
from curation.rules.access import clean_scope

T = TypeVar("T")
_UNSET = object()


class SettingError(ImproperlyConfigured, ValueError):
    """A setting holds a value it may not take; the message names the setting and what it may be."""


class _Refused(Exception):
    """A value a kind refuses: `where` is the part of the setting (a key of a mapping), `expected` the words."""

    def __init__(self, expected: str, value, where: str = ""):
        super().__init__(expected)
        self.expected, self.value, self.where = expected, value, where


# --- kinds: what a setting's value may be -----------------------------------------------------------------


class Kind(Generic[T]):
    expected = ""  # in words, for the message: "a number in (0, 1]"
    scalar = True  # an immutable value, which a setting may hand out again; a container is checked (copied) per read

    def check(self, value) -> T:
        """The value as code reads it; _Refused when it is not one this kind allows."""
        raise NotImplementedError

    def parse(self, text: str):
        """The value an environment variable's text stands for (checked afterwards)."""
        return text.strip()


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    if high is None:
        return f"{'>' if low_open else '>='} {low:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


class Number(Kind[float]):
    """A finite number (an int or a float, never a bool) within bounds; returned as given, so 30 stays 30."""

    def __init__(self, low: float, high: float | None = None, *, low_open: bool = False, high_open: bool = False):
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.expected = f"a number {_interval(low, high, low_open, high_open)}"

    def check(self, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _Refused(self.expected, value)
        if value < self.low or (self.low_open and value == self.low):
            raise _Refused(self.expected, value)
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            raise _Refused(self.expected, value)
        return value

    def parse(self, text: str):
        try:
            return float(text)
        except ValueError:
            return text


class Whole(Kind[int]):
    """A whole number (an int, never a bool or a float) from `low` up."""

    def __init__(self, low: int):
        self.low = low
        self.expected = f"a whole number >= {low}"

    def check(self, value) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < self.low:
            raise _Refused(self.expected, value)
        return value

    def parse(self, text: str):
        try:
            return int(text)
        except ValueError:
            return text


class Flag(Kind[bool]):
    expected = "True or False"

    def parse(self, text: str):
        return {"true": True, "1": True, "on": True, "false": False, "0": False, "off": False}.get(text.lower(), text)

    def check(self, value) -> bool:
        if not isinstance(value, bool):
            raise _Refused(self.expected, value)
        return value


class OneOf(Kind[str]):
    def __init__(self, *choices: str):
        self.choices = choices
        self.expected = "one of " + ", ".join(repr(c) for c in choices)

    def check(self, value) -> str:
        if value not in self.choices:
            raise _Refused(self.expected, value)
        return value


def _scope_prefix(value, where: str = "") -> str:
    try:
        if clean_scope(value) == value:
            return value
    except ValidationError:
        pass
    raise _Refused("a scope prefix such as 'acme/billing-api'", value, where)


class Prefixes(Kind[list[str]]):
    """Scope prefixes; in the environment, comma-separated."""

    scalar = False
    expected = "a list of scope prefixes such as ['acme/billing-api']"

    def check(self, value) -> list[str]:
        if not isinstance(value, (list, tuple)):
            raise _Refused(self.expected, value)
        # "globex/" means globex, as the settings have always read it.
        return [
            _scope_prefix(item.rstrip("/") if isinstance(item, str) else item, f"[{i}]") for i, item in enumerate(value)
        ]

    def parse(self, text: str):
        return [part.strip() for part in text.split(",") if part.strip()]


class ByPrefix(Kind[dict[str, T]]):
    """A mapping of scope prefix -> a value of `each` (the longest prefix covering a scope governs it)."""

    scalar = False

    def __init__(self, each: Kind[T]):
        self.each = each
        self.expected = f"a dict of scope prefix -> {each.expected}"

    def check(self, value) -> dict[str, T]:
        if not isinstance(value, dict):
            raise _Refused(self.expected, value)
        checked = {}
        for prefix, item in value.items():
            _scope_prefix(prefix, f"[{prefix!r}] (its key)")
            try:
                checked[prefix] = self.each.check(item)
            except _Refused as refused:
                raise _Refused(refused.expected, refused.value, f"[{prefix!r}]{refused.where}") from None
        return checked


class Table(Kind[dict[str, T]]):
    """A mapping of some of `keys` (always `required`) -> a value of `each`."""

    scalar = False

    def __init__(self, keys: tuple[str, ...], required: tuple[str, ...], each: Kind[T]):
        self.keys, self.required, self.each = keys, required, each
        self.expected = (
            f"a dict of {' / '.join(repr(k) for k in keys)} -> {each.expected}, with "
            f"{' and '.join(repr(k) for k in required)}"
        )

    def check(self, value) -> dict[str, T]:
        if not isinstance(value, dict) or not set(self.required) <= set(value) or not set(value) <= set(self.keys):
            raise _Refused(self.expected, value)
        checked = {}
        for key, item in value.items():
            try:
                checked[key] = self.each.check(item)
            except _Refused as refused:
                raise _Refused(refused.expected, refused.value, f"[{key!r}]") from None
        return checked


class Names(Kind[list[str]]):
    """Names (non-empty strings); which names are allowed is checked where they are known (validate())."""

    scalar = False
    expected = "a list of names"

    def check(self, value) -> list[str]:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
            raise _Refused(self.expected, value)
        return list(value)


class AdmissionPolicies(Kind[dict[str, admission.Policy]]):
    """Scope prefix -> an admission policy's fields, as the Admission page takes them (admission.clean_policy)."""

    scalar = False
    expected = (
        "a dict of scope prefix -> {'name': ..., 'mode': 'manual' | 'auto' | 'all' | 'none', "
        "'evaluator': ..., 'threshold': ...}"
    )

    def check(self, value) -> dict[str, admission.Policy]:
        if not isinstance(value, dict):
            raise _Refused(self.expected, value)
        checked = {}
        for prefix, spec in value.items():
            if not isinstance(spec, dict):
                raise _Refused(self.expected, spec, f"[{prefix!r}]")
            try:
                checked[prefix] = admission.clean_policy({**spec, "prefix": prefix})
            except ValidationError as exc:
                words = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
                raise _Refused(f"a valid policy ({words})", spec, f"[{prefix!r}]") from None
        return checked


# --- settings -----------------------------------------------------------------------------------------------


@dataclass
class Setting(Generic[T]):
    group: str  # the settings.py name it is set in
    key: str | None  # its key in that dict; None when the setting is the whole of it (CURATION_ADMISSION)
    kind: Kind[T]
    default: T
    meaning: str
    env: str = ""  # the environment variable that sets it when settings.py does not
    # (the settings' dict it was read from, its checked value): confidence rules are read per entry, so a
    # scalar is checked again only when the dict is another one (override_settings replaces it).
    _checked: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.group}[{self.key!r}]" if self.key else self.group

    @property
    def value(self) -> T:
        """The value in force, checked; SettingError naming the setting when it is not one it may take."""
        group = raw = getattr(settings, self.group, _UNSET)
        checked = self._checked
        if checked is not None and checked[0] is group:
            return checked[1]
        if self.key is not None and raw is not _UNSET:
            if not isinstance(raw, dict):
                raise SettingError(f"{self.group} must be a dict of settings, not {raw!r}")
            raw = raw.get(self.key, _UNSET)
        source = self.name
        if raw is _UNSET and self.env and (text := os.environ.get(self.env, "").strip()):
            raw, source = self.kind.parse(text), f"{self.env} (for {self.name})"
        if raw is _UNSET:
            raw = self.default
        try:
            value = self.kind.check(raw)
        except _Refused as refused:
            raise SettingError(f"{source}{refused.where} must be {refused.expected}, not {refused.value!r}") from None
        if self.kind.scalar and not self.env:  # an environment variable is read at every call
            self._checked = (group, value)
        return value


SETTINGS: dict[str, Setting] = {}
# The dicts in settings.py whose keys are settings (CURATION_ADMISSION is one setting: its keys are prefixes).
GROUPS = ("CURATION", "CURATION_RELEASES", "CURATION_EVALUATION")


def _declare(group: str, key: str | None, kind: Kind[T], default: T, meaning: str, env: str = "") -> Setting[T]:
    setting = Setting(group, key, kind, default, meaning, env)
    SETTINGS[setting.name] = setting
    return setting


def _curation(key: str, kind: Kind[T], default: T, meaning: str, env: str = "") -> Setting[T]:
    return _declare("CURATION", key, kind, default, meaning, env)


UNIT = Number(0, 1)
OUTCOME_RULES = ("lift", "steps")

# Confidence (lifecycle.py).
SELF_SIGNAL_CAP = _curation(
    "SELF_SIGNAL_CAP", UNIT, 0.85, "self-made lessons cannot pass this confidence without external evidence"
)
HUMAN_CORRECTION_CONFIDENCE = _curation(
    "HUMAN_CORRECTION_CONFIDENCE", UNIT, 0.95, "the confidence a human correction starts at"
)
CEILING = _curation("CEILING", UNIT, 0.95, "no confidence goes above this")
FLOOR = _curation("FLOOR", UNIT, 0.05, "no confidence goes below this")
DEFAULT_CONFIDENCE = _curation(
    "DEFAULT_CONFIDENCE",
    Table(("self", "independent", "external"), ("self",), UNIT),
    {"self": 0.7, "independent": 0.8, "external": 0.85},
    "the confidence a new lesson starts at by its signal, when it proposes none ('self' for any other)",
)
SUCCESS_STEP = _curation("SUCCESS_STEP", UNIT, 0.05, "steps rule: confidence added when a task that used it succeeds")
FAILURE_STEP = _curation("FAILURE_STEP", UNIT, 0.2, "steps rule: confidence taken when a task that used it fails")
DECAY_FACTOR = _curation(
    "DECAY_FACTOR",
    Number(0, 1, low_open=True),
    0.95,
    "confidence is multiplied by this per DECAY_PERIOD_DAYS without verification (1: no decay)",
)
DECAY_PERIOD_DAYS = _curation("DECAY_PERIOD_DAYS", Number(0, low_open=True), 30, "the period of DECAY_FACTOR")
ARCHIVE_BELOW = _curation("ARCHIVE_BELOW", UNIT, 0.3, "an active entry decayed below this is archived")
RETRIEVE_AT_LEAST = _curation("RETRIEVE_AT_LEAST", UNIT, 0.5, "agents are served entries at or above this only")
RETRIEVE_LIMIT = _curation("RETRIEVE_LIMIT", Whole(1), 5, "entries a retrieval returns when it asks no k")
# Review queues.
DEFER_HOURS = _curation(
    "DEFER_HOURS",
    Number(0, 24 * 90, low_open=True),
    24,
    "how long a deferred candidate stays off the queue's front when the reviewer names no time",
)
QUEUE_PAGE_SIZE = _curation("QUEUE_PAGE_SIZE", Whole(1), 50, "cards on one page of a queue")
QUEUE_COUNT_CAP = _curation(
    "QUEUE_COUNT_CAP",
    Whole(1),
    1000,
    "counts stop here ('more than 1,000 waiting'), so a count costs the same at any queue size",
)
TWO_REVIEWER_SCOPES = _curation(
    "TWO_REVIEWER_SCOPES",
    Prefixes(),
    [],
    "scope prefixes whose candidates need two reviewers' approval (a lead's Review rules page overrides per "
    "prefix; the longest matching prefix wins)",
    env="TWO_REVIEWER_SCOPES",
)
SIMILAR_THRESHOLD = _curation(
    "SIMILAR_THRESHOLD", UNIT, 0.35, "word similarity at which a card lists another entry as similar"
)
# Background policies (the sweeps).
UNUSED_WINDOW_DAYS = _curation(
    "UNUSED_WINDOW_DAYS", Number(0, low_open=True), 30, "periodic deletion: entries older than this window W ..."
)
UNUSED_MAX_RETRIEVALS = _curation(
    "UNUSED_MAX_RETRIEVALS", Whole(0), 0, "... and retrieved at most this often (alpha) within W are archived"
)
UNUSED_SPARES_VERIFIED = _curation(
    "UNUSED_SPARES_VERIFIED", Flag(), True, "periodic deletion spares an entry verified (a success) within W"
)
LOW_UTILITY_MIN_RETRIEVALS = _curation(
    "LOW_UTILITY_MIN_RETRIEVALS", Whole(0), 3, "history-based deletion: entries retrieved at least this often (n) ..."
)
LOW_UTILITY_BELOW = _curation("LOW_UTILITY_BELOW", UNIT, 0.4, "... with an average utility below this (beta)")
SCOPE_CAPACITY = _curation(
    "SCOPE_CAPACITY",
    ByPrefix(Whole(0)),
    {},
    "active entries allowed per scope prefix ({'acme/billing-api': 200}); none: no budget",
)
CAPACITY_SPARES_UNRETRIEVED = _curation(
    "CAPACITY_SPARES_UNRETRIEVED", Flag(), False, "capacity never displaces an entry no agent has retrieved yet"
)
SWEEP_BATCH_SIZE = _curation("SWEEP_BATCH_SIZE", Whole(1), 5000, "rows a sweep handles per transaction")
SWEEP_LEASE_SECONDS = _curation(
    "SWEEP_LEASE_SECONDS", Whole(1), 300, "a run with no heartbeat (one per batch) for this long holds no lock"
)
DETECTION_SLICE_SECONDS = _curation(
    "DETECTION_SLICE_SECONDS",
    Whole(0),
    300,
    "a detecting sweep's run stops at the first batch boundary after this long and the next resumes there "
    "(well inside the worker's soft time limit)",
    env="MEMORYADMIN_DETECTION_SLICE_SECONDS",
)
DETECTION_PARTNERS_PER_ENTRY = _curation(
    "DETECTION_PARTNERS_PER_ENTRY",
    Whole(1),
    100,
    "partners one entry is compared with in a detecting sweep, most relevant first",
)
CONSOLIDATE_MERGE_AT = _curation(
    "CONSOLIDATE_MERGE_AT", UNIT, 0.6, "similarity at which two entries are proposed for a merge"
)
CONSOLIDATE_SUPERSEDE_TRIGGER_AT = _curation(
    "CONSOLIDATE_SUPERSEDE_TRIGGER_AT",
    UNIT,
    0.6,
    "trigger similarity at which a newer entry is proposed to replace an older one",
)
# Skill promotion: nominated with at least SKILL_MIN_HITS hits, an average utility of SKILL_MIN_AVG_UTILITY, no
# failure among the last SKILL_RECENT_WINDOW uses, a rollback note and no open conflict; approved by a lead after
# SKILL_TRIALS_REQUIRED successful trial runs of the current draft.
SKILL_MIN_HITS = _curation("SKILL_MIN_HITS", Whole(0), 10, "hits a lesson needs to be nominated as a skill")
SKILL_MIN_AVG_UTILITY = _curation("SKILL_MIN_AVG_UTILITY", UNIT, 0.8, "average utility it needs")
SKILL_RECENT_WINDOW = _curation("SKILL_RECENT_WINDOW", Whole(0), 10, "its latest uses that must hold no failure")
SKILL_TRIALS_REQUIRED = _curation(
    "SKILL_TRIALS_REQUIRED", Whole(0), 5, "successful trial runs of the current draft before a lead may approve it"
)
# The agent API.
INJECTION_KNOWN_HOSTS = _curation(
    "INJECTION_KNOWN_HOSTS",
    Names(),
    [
        "github.com",
        "docs.python.org",
        "docs.djangoproject.com",
        "pypi.org",
        "developer.mozilla.org",
        "www.postgresql.org",
        "kubernetes.io",
    ],
    "hosts (and the names below them) a lesson may link to without being flagged as a possible injection; "
    "example names and private addresses always may (list the team's own hosts here)",
)
API_MAX_BODY_BYTES = _curation("API_MAX_BODY_BYTES", Whole(1), 1024 * 1024, "the largest request body accepted")
API_BATCH_MAX = _curation("API_BATCH_MAX", Whole(1), 500, "candidates in one batch submission, at most")
API_RETRIEVE_MAX_K = _curation("API_RETRIEVE_MAX_K", Whole(1), 20, "the largest k a retrieval may ask for")
RETRIEVAL_CACHE_SECONDS = _curation(
    "RETRIEVAL_CACHE_SECONDS",
    Whole(0),
    300,
    "how long an unasked retrieval answer stays cached (a publish invalidates it anyway); 0: no cache",
    env="MEMORYADMIN_RETRIEVAL_CACHE_SECONDS",
)
BUFFER_RETRIEVALS = _curation(
    "BUFFER_RETRIEVALS",
    Flag(),
    True,
    "on PostgreSQL with Redis, agents' retrieval records and counters wait in Redis and the worker writes them "
    "in batches every few seconds; off: each read writes its own at once",
    env="MEMORYADMIN_BUFFER_RETRIEVALS",
)
API_RATE_LIMIT = _curation(
    "API_RATE_LIMIT", Whole(0), 600, "requests per token per minute; 0: no limit", env="MEMORYADMIN_API_RATE_LIMIT"
)
API_BAD_TOKEN_LIMIT = _curation(
    "API_BAD_TOKEN_LIMIT",
    Whole(0),
    30,
    "requests with an unknown token per client address per minute; 0: no limit",
    env="MEMORYADMIN_API_BAD_TOKEN_LIMIT",
)
IDEMPOTENCY_KEEP_HOURS = _curation(
    "IDEMPOTENCY_KEEP_HOURS",
    Number(0, low_open=True),
    24,
    "how long a submission's answer is kept for a retry with its Idempotency-Key",
)
EMBEDDING_DIMENSIONS = _curation(
    "EMBEDDING_DIMENSIONS",
    ByPrefix(Whole(1)),
    {},
    "the embedding dimension of a scope prefix ({'acme': 1536}); elsewhere the first embedding of a scope "
    "tree fixes it",
)
# How a task's outcome moves the confidence of the lessons it used (lift.py).
OUTCOME_RULE = _curation(
    "OUTCOME_RULE",
    OneOf(*OUTCOME_RULES),
    "lift",
    "'lift' judges each lesson against the baseline; 'steps' adds SUCCESS_STEP on a success and takes "
    "FAILURE_STEP on a failure from every lesson used (it balances at 80% success)",
    env="MEMORYADMIN_OUTCOME_RULE",
)
LIFT_PRIOR_TASKS = _curation(
    "LIFT_PRIOR_TASKS",
    Number(0),
    20,
    "pseudo-tasks at the baseline's rate, so a handful of outcomes moves a lesson little",
)
LIFT_GAIN = _curation(
    "LIFT_GAIN", Number(0), 1.0, "confidence moved per unit of estimated lift (times the lesson's share)"
)
LIFT_MIN_TASKS = _curation("LIFT_MIN_TASKS", Whole(0), 10, "tasks with a lesson before its lift gets a verdict")
LIFT_WINDOW_DAYS = _curation("LIFT_WINDOW_DAYS", Whole(1), 90, "the days of outcomes a lift is estimated from")
RECHECK_ON_FAILURE = _curation(
    "RECHECK_ON_FAILURE", Flag(), True, "steps rule: a failed task sends the active entries it used back for a recheck"
)

# Published memory versions.
FAILED_OUTCOME_DAYS = _declare(
    "CURATION_RELEASES",
    "FAILED_OUTCOME_DAYS",
    Whole(0),
    14,
    "a failed task outcome this recent is a pre-publish warning",
)
AUTO_PUBLISH_ACTIONS = _declare(
    "CURATION_RELEASES",
    "AUTO_PUBLISH_ACTIONS",
    Names(),
    ["outcome_success", "add_evidence", "revive"],
    "auto-publish releases a pending entry alone only when every unreleased Event of it is one of these "
    "event actions and no pre-publish check warns about it",
)

# Holdout evaluation and the learning dashboard.
HOLDOUT_FRACTIONS = _declare(
    "CURATION_EVALUATION",
    "HOLDOUT_FRACTIONS",
    ByPrefix(UNIT),
    {},
    "scope prefix -> share of tasks answered with no memory (the longest covering prefix wins; the Holdout "
    "page overrides it)",
)
RULES_ONLY_FRACTIONS = _declare(
    "CURATION_EVALUATION",
    "RULES_ONLY_FRACTIONS",
    ByPrefix(UNIT),
    {},
    "the same, for the share served people's rules only",
)
MIN_TASKS_PER_ARM = _declare(
    "CURATION_EVALUATION",
    "MIN_TASKS_PER_ARM",
    Whole(1),
    30,
    "below this in either arm the verdict is 'not enough tasks yet'",
)
LESSON_MIN_RETRIEVALS = _declare(
    "CURATION_EVALUATION",
    "LESSON_MIN_RETRIEVALS",
    Whole(1),
    20,
    "lessons that help or hurt: tasks that retrieved it, at least",
)
RECURRING_MIN_FAILURES = _declare(
    "CURATION_EVALUATION",
    "RECURRING_MIN_FAILURES",
    Whole(1),
    3,
    "recurring failures: failed tasks that retrieved the entry, at least",
)
LESSONS_SHOWN = _declare(
    "CURATION_EVALUATION", "LESSONS_SHOWN", Whole(1), 10, "lessons listed each way on the learning dashboard"
)

# Admission policies per scope prefix; a lead's row on the Admission page replaces the one of the same prefix.
CURATION_ADMISSION = _declare(
    "CURATION_ADMISSION",
    None,
    AdmissionPolicies(),
    {},
    "scope prefix -> admission policy ({'acme/ci': {'name': 'ci-gate', 'mode': 'auto', 'evaluator': 'ci', "
    "'threshold': 0.8}}); modes: manual (people decide), auto, all, none",
)


# --- checking them all ----------------------------------------------------------------------------------------


def problems(*, event_actions: Collection[str] | None = None) -> list[str]:
    """Every setting in force that is out of range, and every key of the settings' dicts that is not a setting
    (a typo would otherwise leave its default in force unnoticed). `event_actions`: the actions
    AUTO_PUBLISH_ACTIONS may name (models.EventAction's, which this module does not import)."""
    found = []
    for group in GROUPS:
        given = getattr(settings, group, {})
        if isinstance(given, dict):
            declared = {s.key for s in SETTINGS.values() if s.group == group}
            found += [
                f"{group}[{key!r}] is not a setting (curation/rules/config.py lists them)"
                for key in given
                if key not in declared
            ]
    for setting in SETTINGS.values():
        try:
            setting.value
        except SettingError as exc:
            found.append(str(exc))
    if event_actions is not None and not any(p.startswith(AUTO_PUBLISH_ACTIONS.name) for p in found):
        unknown = [a for a in AUTO_PUBLISH_ACTIONS.value if a not in event_actions]
        if unknown:
            found.append(f"{AUTO_PUBLISH_ACTIONS.name} must name event actions, not {unknown!r}")
    return list(dict.fromkeys(found))


def validate(*, event_actions: Collection[str] | None = None) -> None:
    """SettingError listing every problem (one a line), or nothing."""
    if found := problems(event_actions=event_actions):
        raise SettingError("Curation settings that cannot be used:\n  " + "\n  ".join(found))


def curation_in_force() -> dict | None:
    """settings.CURATION as it is now: what is derived from its values may be kept while this is the same
    object (override_settings and overriding() replace it; none of them reads it in place)."""
    return getattr(settings, "CURATION", None)


def overriding(**values: Any) -> AbstractContextManager:
    """CURATION with `values` set, for a block (the replay's rules, the demo's outcome rule); an unknown key is
    refused rather than silently ignored."""
    if unknown := [key for key in values if f"CURATION[{key!r}]" not in SETTINGS]:
        raise SettingError(f"Not settings: {', '.join(f'CURATION[{key!r}]' for key in unknown)}")
    return override_settings(CURATION={**getattr(settings, "CURATION", {}), **values})
