"""The demo's background processes start quietly: no Celery start banners after the demo's summary (two
workers and beat printed some 70 lines), and warnings and errors still show."""

import runpy
from pathlib import Path

import pytest
from celery.bin.celery import celery as celery_main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["worker-interactive", "worker-sweeps", "beat"])
def test_the_demos_workers_and_beat_print_no_banner_and_log_warnings(name, tmp_path):
    command = runpy.run_path(str(ROOT / "scripts" / "demo.py"))["background_commands"](tmp_path)[name]
    assert command[1:3] == ["-m", "celery"]
    # A global option: read by the celery command itself, before the subcommand, or it is not read at all.
    assert celery_main.make_context("celery", command[3:]).params["quiet"] is True
    subcommand = name.split("-")[0]
    assert "--loglevel=warning" in command[command.index(subcommand) :]
