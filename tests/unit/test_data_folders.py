"""Importing the settings makes no folder; a process that starts (django.setup) makes the ones its settings
write into, so a fresh clone or a new MEMORYADMIN_DATA_DIR works."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, data_dir: Path, **env) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    environment.update(
        DJANGO_SETTINGS_MODULE="memoryadmin.settings", SECRET_KEY="k" * 60, MEMORYADMIN_DATA_DIR=str(data_dir), **env
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_importing_the_settings_makes_no_folder(tmp_path):
    data = tmp_path / "data"
    _python("from django.conf import settings; print(settings.DATABASES['default']['NAME'])", data)
    assert not data.exists()


def test_a_starting_process_makes_the_folders_of_the_embedded_default(tmp_path):
    data = tmp_path / "data"
    _python("import django; django.setup()", data)
    assert _tree(data) == ["broker", "broker/control", "broker/queue", "static"]
    _python("import django; django.setup(); from django.db import connection; connection.ensure_connection()", data)
    assert "memoryadmin.sqlite3" in _tree(data)  # the database opens in the folder made for it


def test_postgresql_and_redis_need_no_broker_folder(tmp_path):
    data = tmp_path / "data"
    _python(
        "import django; django.setup()",
        data,
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/unused",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/9",
    )
    assert _tree(data) == ["static"]  # beat's schedule file and the static files' root only
