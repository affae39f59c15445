"""Every process the project starts sets the garbage collector's first threshold (memoryadmin.collector)."""

import os
import subprocess
import sys
from pathlib import Path

from memoryadmin import collector

ROOT = Path(__file__).resolve().parents[2]


def test_a_process_started_by_the_project_collects_its_young_objects_at_the_raised_threshold():
    shown = (
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", "import gc; print(gc.get_threshold())"],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    young, older, oldest = (int(n) for n in shown.strip("()").split(","))
    assert young == collector.YOUNG_THRESHOLD == 10_000
    assert (older, oldest) == (10, 10)  # Python's own, left as they are
