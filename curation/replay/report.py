"""The replay's report as pure functions: the table beside the paper's numbers, the paper's claims checked
seed by seed, the JSON with every figure, and an SVG plot of the running success rate per policy."""

from __future__ import annotations

import html
import json

from . import stats
from .policies import PAPER, PAPER_STEPS, ROWS

PLOT_POINTS = 200
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
)


def by_policy(runs: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for run in sorted(runs, key=lambda r: (ROWS.index(r["policy"]) if r["policy"] in ROWS else 99, r["seed"])):
        grouped.setdefault(run["policy"], []).append(run)
    return grouped


def summary(runs: list[dict]) -> dict[str, dict]:
    """Per policy: success rate and memory size, mean and sd over seeds; the inheritance slope; the paper's."""
    rows = {}
    for policy, group in by_policy(runs).items():
        rates = [r["success_rate"] for r in group]
        sizes = [r["memory_size"] for r in group]
        slopes = [r["inheritance_slope"] for r in group if r["inheritance_slope"] is not None]
        steps = [r["median_step_ms"] for r in group if r.get("median_step_ms") is not None]
        paper = PAPER.get(policy)
        rows[policy] = {
            "seeds": [r["seed"] for r in group],
            "success_mean": round(stats.mean(rates), 2),
            "success_sd": round(stats.sd(rates), 2),
            "memory_mean": round(stats.mean(sizes), 1),
            "memory_sd": round(stats.sd(sizes), 1),
            "inheritance_slope": round(stats.mean(slopes), 3) if slopes else None,
            "median_step_ms": round(stats.mean(steps), 2) if steps else None,
            "paper_success": paper[0] if paper else None,
            "paper_memory": paper[1] if paper else None,
            "recheck": recheck_totals(group),
        }
    return rows


def _share(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def recheck_totals(group: list[dict]) -> dict:
    """The recheck cards an outcome sent, against the world's truth, summed over the runs: precision (% of
    the lessons sent that are wrong) and recall (% of the wrong lessons retrieved 5 or more times sent)."""
    figures = [r["recheck"] for r in group if r.get("recheck")]
    total = {key: sum(f[key] for f in figures) for key in (figures[0] if figures else {})}
    if not total:
        return {}
    return {
        **total,
        "precision": _share(total["sent_wrong"], total["sent"]),
        "recall": _share(total["wrong_retrieved_often_sent"], total["wrong_retrieved_often"]),
        "per_seed": {
            r["seed"]: {
                "precision": _share(r["recheck"]["sent_wrong"], r["recheck"]["sent"]),
                "recall": _share(r["recheck"]["wrong_retrieved_often_sent"], r["recheck"]["wrong_retrieved_often"]),
            }
            for r in group
            if r.get("recheck")
        },
    }


def checks(runs: list[dict]) -> list[dict]:
    """The paper's shape, seed by seed, for the policies present: each claim with whether it held in every
    seed and the per-seed figures."""
    per_seed: dict[int, dict[str, dict]] = {}
    for run in runs:
        per_seed.setdefault(run["seed"], {})[run["policy"]] = run
    claims = []

    def claim(name, needs, test):
        seeds = {s: p for s, p in per_seed.items() if all(n in p for n in needs)}
        if not seeds:
            return
        held = {s: bool(test(p)) for s, p in sorted(seeds.items())}
        claims.append({"claim": name, "held_in_every_seed": all(held.values()), "per_seed": held})

    sr = lambda p, n: p[n]["success_rate"]  # noqa: E731
    size = lambda p, n: p[n]["memory_size"]  # noqa: E731
    claim("strict − addall >= 5 points", ("strict", "addall"), lambda p: sr(p, "strict") - sr(p, "addall") >= 5)
    claim("strict > fixed", ("strict", "fixed"), lambda p: sr(p, "strict") > sr(p, "fixed"))
    ladder = ("addall", "c1", "c2", "c3", "strict")
    claim(
        "addall → c1 → c2 → c3 → strict: no step worse than −1 point",
        ladder,
        lambda p: all(sr(p, b) - sr(p, a) >= -1 for a, b in zip(ladder, ladder[1:])),
    )
    for base in ("c1", "strict"):
        claim(
            f"{base}+periodic: memory <= half of {base}, at a cost of 0-3 points",
            (base, f"{base}+periodic"),
            lambda p, b=base: (
                size(p, f"{b}+periodic") <= size(p, b) / 2 and 0 <= sr(p, b) - sr(p, f"{b}+periodic") <= 3
            ),
        )
        claim(
            f"{base}+history: success within ±2 points of {base}, smaller memory",
            (base, f"{base}+history"),
            lambda p, b=base: abs(sr(p, f"{b}+history") - sr(p, b)) <= 2 and size(p, f"{b}+history") < size(p, b),
        )
        claim(
            f"{base}+combined: the smallest memory of {base}'s deletion rows",
            (f"{base}+periodic", f"{base}+history", f"{base}+combined"),
            lambda p, b=base: size(p, f"{b}+combined") <= min(size(p, f"{b}+periodic"), size(p, f"{b}+history")),
        )
    return claims


def table(rows: dict[str, dict], rules: str, steps: int, sweep_every: int = 1) -> str:
    cadence = "" if sweep_every == 1 else f", deletion sweeps every {sweep_every} steps"
    lines = [
        f"RegAgent replay through memoryadmin ({rules} rules, {steps} steps{cadence})",
        "",
        "| policy | success % (mean ± sd) | paper | memory (mean ± sd) | paper | error-inheritance slope | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for policy, row in rows.items():
        paper_sr = f"{row['paper_success']:.2f}" if row["paper_success"] is not None else "—"
        paper_mem = str(row["paper_memory"]) if row["paper_memory"] is not None else "—"
        slope = f"{row['inheritance_slope']:.3f}" if row["inheritance_slope"] is not None else "—"
        lines.append(
            f"| {policy} | {row['success_mean']:.2f} ± {row['success_sd']:.2f} | {paper_sr} | "
            f"{row['memory_mean']:.0f} ± {row['memory_sd']:.0f} | {paper_mem} | {slope} | {len(row['seeds'])} |"
        )
    if steps != PAPER_STEPS:
        lines += [
            "",
            f"The paper's columns are its {PAPER_STEPS:,}-step figures; this run has {steps:,} steps, so its memory "
            "sizes (and the deletion rows, whose windows are hundreds of steps) are not comparable with them.",
        ]
    return "\n".join(lines) + "\n"


def seed_table(runs: list[dict]) -> str:
    """Success % / final memory of every run, a column per seed: the paired figures the claims compare."""
    seeds = sorted({r["seed"] for r in runs})
    lines = ["| policy | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---" * (len(seeds) + 1) + "|"]
    for policy, group in by_policy(runs).items():
        of_seed = {r["seed"]: r for r in group}
        cells = [
            f"{of_seed[s]['success_rate']:.2f} / {of_seed[s]['memory_size']:,}" if s in of_seed else "—" for s in seeds
        ]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _percent(value) -> str:
    return "—" if value is None else f"{value:.1f}%"


def recheck_table(rows: dict[str, dict]) -> str:
    """Per policy: the lessons outcomes sent to a person for a recheck, and how many of them were wrong."""
    lines = [
        "| policy | sent for a recheck | of them wrong | precision | wrong lessons retrieved ≥ 5 times | "
        "of them sent | recall |",
        "|---|---|---|---|---|---|---|",
    ]
    for policy, row in rows.items():
        r = row.get("recheck")
        if r:
            lines.append(
                f"| {policy} | {r['sent']:,} | {r['sent_wrong']:,} | {_percent(r['precision'])} | "
                f"{r['wrong_retrieved_often']:,} | {r['wrong_retrieved_often_sent']:,} | "
                f"{_percent(r['recall'])} |"
            )
    return "\n".join(lines) + "\n"


def side_by_side(reports: list[dict]) -> str:
    """The rule sets' reports (report.json each) in one table: success % and memory per policy and rule
    set, the paper's claims under each, the recheck cards' precision and recall, and product strict
    against paper strict seed by seed."""
    names = [data["rules"] for data in reports]
    policies = [p for p in ROWS if any(p in data["summary"] for data in reports)]
    lines = [
        "| policy | " + " | ".join(f"{name}: success % / memory" for name in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for policy in policies:
        cells = []
        for data in reports:
            row = data["summary"].get(policy)
            cells.append(
                f"{row['success_mean']:.2f} ± {row['success_sd']:.2f} / {row['memory_mean']:,.0f}" if row else "—"
            )
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The paper's claims, under each rule set (held in every seed?):",
        "",
        "| claim | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    claims = list(dict.fromkeys(c["claim"] for data in reports for c in data["checks"]))
    for claim in claims:
        cells = []
        for data in reports:
            found = next((c for c in data["checks"] if c["claim"] == claim), None)
            cells.append(
                "—"
                if found is None
                else "held"
                if found["held_in_every_seed"]
                else "NOT: " + ", ".join(f"seed {s}" for s, v in found["per_seed"].items() if not v)
            )
        lines.append(f"| {claim} | " + " | ".join(cells) + " |")
    by_name = {data["rules"]: data for data in reports}
    if "paper" in by_name:
        paper = {r["seed"]: r for r in by_name["paper"]["runs"] if r["policy"] == "strict"}
        for name in names:
            if name == "paper":
                continue
            other = {r["seed"]: r for r in by_name[name]["runs"] if r["policy"] == "strict"}
            seeds = sorted(set(paper) & set(other))
            if seeds:
                gaps = {s: round(other[s]["success_rate"] - paper[s]["success_rate"], 2) for s in seeds}
                held = all(abs(g) <= 2 for g in gaps.values())
                lines.append(
                    f"| {name} strict within 2 points of paper strict | "
                    + " | ".join(
                        ("held" if held else "NOT") + f" ({', '.join(f'seed {s}: {g:+.2f}' for s, g in gaps.items())})"
                        if n == name
                        else ""
                        for n in names
                    )
                    + " |"
                )
    lines += [
        "",
        "Recheck cards sent by outcomes, against the world's truth (a lesson is wrong when its error "
        "is over 1.0): precision / recall (sent of the wrong lessons retrieved ≥ 5 times):",
        "",
        "| policy | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for policy in policies:
        cells = []
        for data in reports:
            r = (data["summary"].get(policy) or {}).get("recheck")
            cells.append(
                f"{_percent(r['precision'])} of {r['sent']:,} / {_percent(r['recall'])} of "
                f"{r['wrong_retrieved_often']:,}"
                if r
                else "—"
            )
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def checks_text(claims: list[dict]) -> str:
    return "".join(
        f"- {'held' if c['held_in_every_seed'] else 'DID NOT HOLD'}: {c['claim']} "
        f"(per seed: {', '.join(f'{s}: {v}' for s, v in c['per_seed'].items())})\n"
        for c in claims
    )


def _mean_curve(group: list[dict]) -> list[float]:
    curves = [r["running_success"] for r in group if r["running_success"]]
    length = min(len(c) for c in curves)
    return [stats.mean(c[i] for c in curves) for i in range(length)]


def svg(runs: list[dict], *, width: int = 760, height: int = 420) -> str:
    """The running success rate over the steps, one line per policy (mean over its seeds)."""
    left, right, top, bottom = 50, 170, 20, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.0%}</text>')
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
    steps = 0
    for index, (policy, group) in enumerate(by_policy(runs).items()):
        curve = _mean_curve(group)
        if not curve:
            continue
        steps = max(steps, len(curve))
        stride = max(1, len(curve) // PLOT_POINTS)
        points = [(i, curve[i]) for i in range(0, len(curve), stride)] + [(len(curve) - 1, curve[-1])]
        colour = COLOURS[index % len(COLOURS)]
        path = " ".join(
            f"{left + plot_w * i / max(1, len(curve) - 1):.1f},{top + plot_h * (1 - v):.1f}" for i, v in points
        )
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>')
        legend_y = top + 14 * index + 10
        parts.append(
            f'<line x1="{left + plot_w + 10}" x2="{left + plot_w + 30}" y1="{legend_y - 4}" '
            f'y2="{legend_y - 4}" stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{left + plot_w + 34}" y="{legend_y}">{html.escape(policy)} ({curve[-1]:.1%})</text>')
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">step (task) 1 … {steps}; '
        'running success rate, mean over seeds</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def report_files(runs: list[dict], *, rules: str, steps: int, meta: dict) -> dict[str, str]:
    """{file name: text}: report.md (table, each seed's figures and checks), report.json (every figure),
    running_success.svg."""
    rows = summary(runs)
    claims = checks(runs)
    text = (
        table(rows, rules, steps, meta.get("sweep_every", 1))
        + "\nSeed by seed (success % / final memory):\n\n"
        + seed_table(runs)
        + "\nThe paper's shape:\n\n"
        + (checks_text(claims) or "- (too few policies)\n")
        + "\nRecheck cards sent by outcomes, against the world's truth (a lesson is wrong when its error is "
        "over 1.0):\n\n" + recheck_table(rows)
    )
    data = {
        "meta": meta,
        "rules": rules,
        "steps": steps,
        "summary": rows,
        "checks": claims,
        "runs": [{k: v for k, v in r.items() if k != "running_success"} for r in runs],
        "running_success": {f"{r['policy']}/s{r['seed']}": r["running_success"] for r in runs},
    }
    return {"report.md": text, "report.json": json.dumps(data, indent=1) + "\n", "running_success.svg": svg(runs)}
