"""Is memory helping? The reads of holdout evaluation: which arm a task lands in, and the learning report
(the dashboard's and the evaluation API's figures), from the outcome tallies in a fixed number of
queries whatever the number of retrievals: each is one aggregate over at most 90 days of tally rows."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate

from curation.rules import access, clock, evaluation, lift
from curation.rules.config import (
    LESSON_MIN_RETRIEVALS,
    LESSONS_SHOWN,
    MIN_TASKS_PER_ARM,
    RECURRING_MIN_FAILURES,
)
from curation.rules.evaluation import HOLDOUT, MEMORY, RULES_ONLY, Comparison, Rate
from curation.models import Entry, Kind, LessonTally, OutcomeTally

from .scope_policies import holdout_fractions

WINDOWS = (7, 30, 90)
CHART_WEEKS = 13


def arm_for(scope: str, task_ref: str) -> str:
    """The arm a read of `scope` for task `task_ref` is served from (evaluation.assign_arm)."""
    if not task_ref:
        return MEMORY  # no query: without a task reference every read gets memory
    prefix, fraction, rules_only = evaluation.holdout_setting(scope, holdout_fractions())
    return evaluation.assign_arm(prefix, task_ref, fraction, rules_only)


# --- a lesson's lift ------------------------------------------------------------------------------------


def lift_counts(
    entry_ids, scope: str, *, since: datetime.date
) -> tuple[dict[int, tuple[int, int]], tuple[int, int], tuple[int, int]]:
    """The tallies a lesson's lift is estimated from, since `since`, in two aggregates: the tasks charged to
    each entry and their successes, and the scope's holdout and served tasks (tasks, successes)."""
    lessons = {
        row["entry_id"]: (row["t"] or 0, row["s"] or 0)
        for row in LessonTally.objects.filter(entry_id__in=list(entry_ids), day__gte=since)
        .values("entry_id")
        .annotate(t=Sum("charged_tasks"), s=Sum("charged_successes"))
        .order_by()
    }
    arms = {
        row["arm"]: (row["t"] or 0, row["s"] or 0)
        for row in OutcomeTally.objects.filter(scope=scope, day__gte=since)
        .values("arm")
        .annotate(t=Sum("tasks"), s=Sum("successes"))
        .order_by()
    }
    holdout = arms.get(HOLDOUT, (0, 0))
    served = [arms.get(MEMORY, (0, 0)), arms.get(RULES_ONLY, (0, 0))]
    return lessons, holdout, (sum(a[0] for a in served), sum(a[1] for a in served))


# --- the learning report ---------------------------------------------------------------------------------


@dataclass
class ScopeRow:
    scope: str
    depth: int
    rolled_up: bool  # figures of the scope and every scope below it
    windows: dict[int, Comparison]
    rules: dict[int, Comparison]  # people's rules only against the holdout


@dataclass
class Lesson:
    entry_id: int
    scope: str
    tasks: int  # tasks charged to it (lift.py)
    successes: int
    baseline: Rate  # comparable tasks without it (lift.baseline)
    difference: tuple[float, float, float] | None
    lift: lift.Lift | None = None  # the outcome rule's estimate and verdict
    # Read for the lessons shown only (_describe).
    trigger: str = ""
    status: str = ""
    version: int = 0
    queued: bool = False

    @property
    def rate(self) -> Rate:
        return Rate(self.successes, self.tasks)

    def as_json(self) -> dict:
        interval = self.rate.interval
        d = self.difference
        return {
            "entry_id": self.entry_id,
            "scope": self.scope,
            "trigger": self.trigger,
            "tasks": self.tasks,
            "success_rate": round(self.rate.value, 4),
            "ci95": [round(x, 4) for x in interval],
            "holdout_rate": round(self.baseline.value, 4) if self.baseline.tasks else None,
            "difference_points": round(d[0] * 100, 2) if d else None,
            "difference_ci95": [round(d[1] * 100, 2), round(d[2] * 100, 2)] if d else None,
            **(self.lift.as_json() if self.lift else {}),
        }

    @property
    def verdict(self) -> str:
        return lift.VERDICT_WORDS[self.lift.verdict] if self.lift else ""


@dataclass
class Failure:
    entry_id: int
    scope: str
    failures: int
    tasks: int
    trigger: str = ""

    def as_json(self) -> dict:
        return {
            "entry_id": self.entry_id,
            "scope": self.scope,
            "trigger": self.trigger,
            "failed_tasks": self.failures,
            "tasks": self.tasks,
        }


@dataclass
class Week:
    start: datetime.date
    memory: Rate
    holdout: Rate
    rules_only: Rate
    corrections: int = 0

    def as_json(self) -> dict:
        return {
            "week": self.start.isoformat(),
            "memory": _rate_json(self.memory),
            "holdout": _rate_json(self.holdout),
            "rules_only": _rate_json(self.rules_only),
            "human_corrections": self.corrections,
        }


def _rate_json(rate: Rate) -> dict:
    return {"tasks": rate.tasks, "success_rate": round(rate.value, 4) if rate.tasks else None}


@dataclass
class LearningReport:
    focus: str  # "" for everything the reader sees
    days: int  # the lessons' and failures' window
    total: dict[int, Comparison]
    rules_total: dict[int, Comparison]
    scopes: list[ScopeRow]
    weeks: list[Week]
    helps: list[Lesson]
    hurts: list[Lesson]
    failures: list[Failure]
    lesson_min: int
    lessons_compared: int = 0

    @property
    def has_rules_only(self) -> bool:
        """Were any tasks served people's rules only in the last 90 days? The page shows that arm then."""
        return bool(self.rules_total[max(WINDOWS)].memory.tasks)

    @property
    def shown_scopes(self) -> list[ScopeRow]:
        """The page's per-scope table: the focus and two levels below it (each scope links to its own)."""
        deepest = (self.focus.count("/") if self.focus else -1) + 2
        return [row for row in self.scopes if row.depth <= deepest]

    def as_json(self) -> dict:
        return {
            "scope": self.focus,
            "windows": {str(d): _windows_json(c, self.rules_total[d]) for d, c in self.total.items()},
            "scopes": [
                {
                    "scope": row.scope,
                    "rolled_up": row.rolled_up,
                    "windows": {str(d): _windows_json(c, row.rules[d]) for d, c in row.windows.items()},
                }
                for row in self.scopes
            ],
            "weekly": [week.as_json() for week in self.weeks],
            "lessons": {
                "days": self.days,
                "min_retrievals": self.lesson_min,
                "help": [lesson.as_json() for lesson in self.helps],
                "hurt": [lesson.as_json() for lesson in self.hurts],
            },
            "recurring_failures": [failure.as_json() for failure in self.failures],
        }


def _windows_json(comparison: Comparison, rules: Comparison) -> dict:
    return {**comparison.as_json(), "rules_only": rules.as_json("rules_only")}


def _window_sums() -> dict:
    today = clock.now().date()
    sums = {}
    for days in WINDOWS:
        since = Q(day__gte=today - datetime.timedelta(days=days - 1))
        sums[f"t{days}"] = Sum("tasks", filter=since)
        sums[f"s{days}"] = Sum("successes", filter=since)
    return sums


def _scope_filter(prefixes: list[str] | None, focus: str, column: str) -> Q:
    q = access.scope_q(prefixes, column)
    return q & access.under_scope(focus, column) if focus else q


def _zero_windows() -> dict[int, dict[str, list[int]]]:
    return {days: {MEMORY: [0, 0], HOLDOUT: [0, 0], RULES_ONLY: [0, 0]} for days in WINDOWS}


def learning_report(*, prefixes: list[str] | None, focus: str = "", days: int = 30) -> LearningReport:
    """The figures under `focus` (or everything) within `prefixes` (None: every scope): per scope rolled up
    to each prefix, the success rate per arm over 7, 30 and 90 days with the verdict, the weekly rates
    and human corrections, the lessons that help or hurt and the recurring failures over `days`."""
    min_tasks = MIN_TASKS_PER_ARM.value
    today = clock.now().date()
    oldest = today - datetime.timedelta(days=max(WINDOWS) - 1)

    # 1. Per scope and arm, the three windows at once.
    per_scope: dict[str, dict[int, dict[str, list[int]]]] = {}
    rows = (
        OutcomeTally.objects.filter(_scope_filter(prefixes, focus, "scope"), day__gte=oldest)
        .values("scope", "arm")
        .annotate(**_window_sums())
        .order_by()
    )
    for row in rows:
        windows = per_scope.get(row["scope"])
        if windows is None:
            windows = per_scope[row["scope"]] = _zero_windows()
        for d in WINDOWS:
            cell = windows[d].setdefault(row["arm"], [0, 0])
            cell[0] += row[f"s{d}"] or 0
            cell[1] += row[f"t{d}"] or 0
    rollups = _roll_up(per_scope, prefixes, focus)

    def comparisons(windows, treated=MEMORY) -> dict[int, Comparison]:
        words = evaluation.RULES_WORDS if treated == RULES_ONLY else evaluation.MEMORY_WORDS
        return {
            d: evaluation.compare(
                Rate(*windows[d][treated]), Rate(*windows[d][HOLDOUT]), min_tasks=min_tasks, words=words
            )
            for d in WINDOWS
        }

    total = _zero_windows()
    for windows in per_scope.values():
        _add(total, windows)
    scope_rows = [
        ScopeRow(scope, scope.count("/"), rolled_up, comparisons(windows), comparisons(windows, RULES_ONLY))
        for scope, (rolled_up, windows) in sorted(rollups.items())
    ]

    weeks = _weeks(prefixes, focus, today)
    rows = list(
        _lesson_rows(prefixes, focus, days).filter(
            tasks__gte=min(LESSON_MIN_RETRIEVALS.value, RECURRING_MIN_FAILURES.value)
        )
    )
    helps, hurts, compared = _lessons(rows, days, rollups, total)
    failures = _failures(rows)
    _describe([*helps, *hurts, *failures])
    return LearningReport(
        focus=focus,
        days=days,
        total=comparisons(total),
        rules_total=comparisons(total, RULES_ONLY),
        scopes=scope_rows,
        weeks=weeks,
        helps=helps,
        hurts=hurts,
        failures=failures,
        lesson_min=LESSON_MIN_RETRIEVALS.value,
        lessons_compared=compared,
    )


def _describe(items) -> None:
    """The trigger and state of the entries shown, in one query: the tallies are grouped by entry id and
    scope only, so the aggregate never carries the entries' text."""
    entries = (
        {
            row["id"]: row
            for row in Entry.objects.filter(pk__in={item.entry_id for item in items}).values(
                "id", "trigger", "status", "version", "queued_at"
            )
        }
        if items
        else {}
    )
    for item in items:
        entry = entries[item.entry_id]
        item.trigger = entry["trigger"]
        if isinstance(item, Lesson):
            item.status, item.version, item.queued = entry["status"], entry["version"], entry["queued_at"] is not None


def _add(into, windows) -> None:
    for d in WINDOWS:
        for arm in (MEMORY, HOLDOUT, RULES_ONLY):
            into[d][arm][0] += windows[d].get(arm, [0, 0])[0]
            into[d][arm][1] += windows[d].get(arm, [0, 0])[1]


def _roll_up(per_scope, prefixes, focus) -> dict[str, tuple[bool, dict]]:
    """Each scope with tallies, and each prefix above one (within the reader's scopes and the focus),
    with the sums of every scope it covers."""
    nodes: dict[str, tuple[bool, dict]] = {}
    for scope in per_scope:
        for ancestor in access.scope_ancestors(scope):
            if prefixes is not None and not access.covered_by_any(prefixes, ancestor):
                continue
            if focus and not access.scope_covers(focus, ancestor):
                continue
            rolled_up, windows = nodes[ancestor] if ancestor in nodes else (False, _zero_windows())
            _add(windows, per_scope[scope])
            nodes[ancestor] = (rolled_up or ancestor != scope, windows)
    return nodes


def _weeks(prefixes, focus, today) -> list[Week]:
    """The success rate per arm and the human corrections made, week by week (Monday to Sunday)."""
    first = evaluation.week_start(today) - datetime.timedelta(weeks=CHART_WEEKS - 1)
    weeks = {
        first + datetime.timedelta(weeks=i): Week(
            first + datetime.timedelta(weeks=i), Rate(0, 0), Rate(0, 0), Rate(0, 0)
        )
        for i in range(CHART_WEEKS)
    }
    sums: dict[tuple, list[int]] = {}
    for row in (
        OutcomeTally.objects.filter(_scope_filter(prefixes, focus, "scope"), day__gte=first)
        .values("day", "arm")
        .annotate(s=Sum("successes"), t=Sum("tasks"))
        .order_by()
    ):
        cell = sums.setdefault((evaluation.week_start(row["day"]), row["arm"]), [0, 0])
        cell[0] += row["s"]
        cell[1] += row["t"]
    for (start, arm), (s, t) in sums.items():
        if start in weeks:
            setattr(weeks[start], arm.replace("-", "_"), Rate(s, t))
    since = datetime.datetime.combine(first, datetime.time.min, tzinfo=datetime.timezone.utc)
    for row in (
        Entry.objects.filter(_scope_filter(prefixes, focus, "scope"), kind=Kind.HUMAN_CORRECTION, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        start = evaluation.week_start(row["day"])
        if start in weeks:
            weeks[start].corrections += row["n"]
    return list(weeks.values())


def _lesson_rows(prefixes, focus, days):
    since = clock.now().date() - datetime.timedelta(days=days - 1)
    return (
        LessonTally.objects.filter(_scope_filter(prefixes, focus, "entry__scope"), day__gte=since)
        .values("entry_id", "entry__scope")
        .annotate(
            tasks=Sum("tasks"),
            successes=Sum("successes"),
            charged=Sum("charged_tasks"),
            charged_successes=Sum("charged_successes"),
        )
        .order_by()
    )


def _lessons(rows, days, rollups, total) -> tuple[list[Lesson], list[Lesson], int]:
    """Entries charged with at least LESSON_MIN_RETRIEVALS tasks with an outcome, judged by the outcome
    rule's estimate of their lift (lift.estimate) against comparable tasks without them: the holdout arm
    under the entry's scope when it has LIFT_MIN_TASKS tasks, otherwise the scope's served tasks less the
    lesson's. Those that help most by the evidence first (the interval's lower end), those that harm most
    first (its upper end)."""
    window = days if days in WINDOWS else 90
    config_lift = lift.lift_settings()
    lesson_min = LESSON_MIN_RETRIEVALS.value
    lessons = []
    for row in rows:
        tasks, successes = row["charged"] or 0, row["charged_successes"] or 0
        if tasks < lesson_min:
            continue
        holdout, served = (0, 0), (0, 0)
        for ancestor in reversed(access.scope_ancestors(row["entry__scope"])):
            node = rollups.get(ancestor)
            if node and node[1][window][HOLDOUT][1]:
                holdout = tuple(reversed(node[1][window][HOLDOUT]))
                break
        if not holdout[0]:
            holdout = tuple(reversed(total[window][HOLDOUT]))
        node = rollups.get(row["entry__scope"])
        if node:
            served = tuple(
                a + b for a, b in zip(reversed(node[1][window][MEMORY]), reversed(node[1][window][RULES_ONLY]))
            )
        without = lift.baseline((tasks, successes), holdout, served, min_tasks=config_lift.min_tasks)
        baseline = Rate(without[1], without[0])
        rate = Rate(successes, tasks)
        lessons.append(
            Lesson(
                entry_id=row["entry_id"],
                scope=row["entry__scope"],
                tasks=tasks,
                successes=successes,
                baseline=baseline,
                difference=evaluation.difference_interval(rate, baseline),
                lift=lift.estimate(
                    tasks, successes, *without, prior_tasks=config_lift.prior_tasks, min_tasks=config_lift.min_tasks
                ),
            )
        )
    compared = [lesson for lesson in lessons if lesson.baseline.tasks]
    shown = LESSONS_SHOWN.value
    helps = sorted(
        (lesson for lesson in compared if lesson.lift.mean > 0), key=lambda lesson: (-lesson.lift.low, lesson.entry_id)
    )[:shown]
    hurts = sorted(
        (lesson for lesson in compared if lesson.lift.mean < 0), key=lambda lesson: (lesson.lift.high, lesson.entry_id)
    )[:shown]
    return helps, hurts, len(compared)


def _failures(rows) -> list[Failure]:
    """Entries that failed tasks kept retrieving: the most failed tasks first."""
    failing = sorted(((row["tasks"] - row["successes"], row) for row in rows), key=lambda f: (-f[0], f[1]["entry_id"]))
    return [
        Failure(row["entry_id"], row["entry__scope"], failures, row["tasks"])
        for failures, row in failing
        if failures >= RECURRING_MIN_FAILURES.value
    ][: LESSONS_SHOWN.value]
