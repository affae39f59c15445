"""The latest replay report (manage.py replay writes one folder per run under settings.REPLAY_REPORT_DIR):
what the dashboard shows of it and the files it links."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

REPORT_FILES = {
    "report.md": "text/plain; charset=utf-8",
    "report.json": "application/json",
    "running_success.svg": "image/svg+xml",
}


def latest_replay_folder() -> Path | None:
    """The newest folder holding a complete report (a report.json), or None."""
    root = Path(settings.REPLAY_REPORT_DIR)
    if not root.is_dir():
        return None
    reports = [p.parent for p in root.glob("*/report.json")] + ([root] if (root / "report.json").exists() else [])
    return max(reports, key=lambda p: ((p / "report.json").stat().st_mtime, p.name), default=None)


def latest_replay() -> dict | None:
    """The latest report's meta and summary rows, for the dashboard."""
    folder = latest_replay_folder()
    if folder is None:
        return None
    try:
        data = json.loads((folder / "report.json").read_text())
    except (OSError, ValueError):
        return None
    return {
        "folder": folder.name,
        "meta": data.get("meta", {}),
        "rules": data.get("rules"),
        "steps": data.get("steps"),
        "rows": [{"policy": policy, **row} for policy, row in data.get("summary", {}).items()],
        "checks": data.get("checks", []),
    }


def latest_replay_file(name: str) -> bytes | None:
    folder = latest_replay_folder()
    if name not in REPORT_FILES or folder is None or not (folder / name).exists():
        return None
    return (folder / name).read_bytes()
