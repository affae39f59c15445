"""The PostgreSQL connection options: JIT off, added to whatever options DATABASE_URL gives."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def options_for(url: str) -> dict:
    code = (
        "import json, django.conf; from django.conf import settings; "
        "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {})))"
    )
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "url, expected",
    [
        ("postgres://postgres@127.0.0.1:5432/x", "-c jit=off"),
        (
            "postgres://postgres@127.0.0.1:5432/x?options=-c%20statement_timeout%3D5000",
            "-c statement_timeout=5000 -c jit=off",
        ),
    ],
)
def test_jit_is_off_and_given_options_are_kept(url, expected):
    assert options_for(url)["options"] == expected
