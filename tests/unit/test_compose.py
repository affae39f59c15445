"""docker-compose.yml, the production shape: read with PyYAML, so no Docker engine and no database."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DJANGO_SERVICES = ("web", "worker", "beat")


@pytest.fixture(scope="module")
def services():
    return yaml.safe_load(COMPOSE.read_text())["services"]


def words(service) -> list[str]:
    """The command as words, whether written as a string or a list."""
    command = service.get("command", "")
    return " ".join(command).split() if isinstance(command, list) else command.split()


def test_the_five_services(services):
    assert set(services) == {"postgres", "redis", "web", "worker", "beat"}


def test_django_services_share_one_definition(services):
    # The x-django anchor, merged: one image and one set of settings for all three.
    web = services["web"]
    for name in DJANGO_SERVICES:
        assert services[name]["build"] == web["build"] == "."
        assert services[name]["environment"] == web["environment"]
    env = web["environment"]
    assert env["DATABASE_URL"] == "postgres://postgres:postgres@postgres:5432/memoryadmin"
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert env["DEBUG"] == "false"
    assert env["SECRET_KEY"] and env["ALLOWED_HOSTS"]


def test_commands(services):
    assert {"celery", "worker"} <= set(words(services["worker"]))
    assert {"celery", "beat"} <= set(words(services["beat"]))
    web = words(services["web"])
    assert "gunicorn" in web
    assert "migrate" in web


def test_the_web_server_and_the_image_use_the_shipped_gunicorn_configuration(services):
    # gunicorn.conf.py keeps query strings out of the access log (tests/unit/test_access_log.py)
    web = [word.strip('"') for word in words(services["web"])]
    # and names the app: memoryadmin.asgi (Django and /mcp) on uvicorn workers
    assert web[web.index("gunicorn"):] == ["gunicorn", "--config", "gunicorn.conf.py"]
    dockerfile = (ROOT / "Dockerfile").read_text().splitlines()
    assert [line for line in dockerfile if line.startswith("CMD")] == [
        'CMD ["gunicorn", "--config", "gunicorn.conf.py"]']
    assert "gunicorn.conf.py" not in (ROOT / ".dockerignore").read_text()


def test_exactly_one_beat(services):
    # Two beats would send every scheduled task twice.
    assert [name for name, s in services.items() if "beat" in words(s)] == ["beat"]


def test_infrastructure_has_healthchecks(services):
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "redis-cli ping" in " ".join(services["redis"]["healthcheck"]["test"])
    assert "/accounts/login/" in " ".join(services["web"]["healthcheck"]["test"])


def test_django_services_wait_for_healthy_infrastructure(services):
    for name in DJANGO_SERVICES:
        depends = services[name]["depends_on"]
        for infra in ("postgres", "redis"):
            assert depends[infra]["condition"] == "service_healthy", (name, infra)


def test_docker_compose_accepts_the_file():
    """Compose's own parser (`config` needs no engine), where this machine has the client."""
    if shutil.which("docker") is None:
        pytest.skip("the docker client is not installed")
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("the docker client has no compose plugin (`docker compose version` fails)")
    result = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "-q"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
