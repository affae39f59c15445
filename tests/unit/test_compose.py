"""docker-compose.yml, the production shape: read with PyYAML, so no Docker engine and no database."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DJANGO_SERVICES = ("web", "worker-interactive", "worker-sweeps", "beat")
SECRETS = ("SECRET_KEY", "POSTGRES_PASSWORD", "OWNER_DB_PASSWORD", "APP_DB_PASSWORD")


@pytest.fixture(scope="module")
def services():
    return yaml.safe_load(COMPOSE.read_text())["services"]


def words(service) -> list[str]:
    """The command as words, whether written as a string or a list."""
    command = service.get("command", "")
    return " ".join(command).split() if isinstance(command, list) else command.split()


def test_the_services(services):
    assert set(services) == {
        "postgres",
        "redis",
        "migrate",
        "web",
        "worker-interactive",
        "worker-sweeps",
        "beat",
        "proxy",
    }


def test_django_services_share_one_definition(services):
    # The x-django anchor, merged: one image and one set of settings for all of them.
    web = services["web"]
    for name in DJANGO_SERVICES:
        assert services[name]["build"] == web["build"] == "."
        assert services[name]["environment"] == web["environment"]
    env = web["environment"]
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert env["DEBUG"] == "false"
    assert env["SECRET_KEY"] and env["ALLOWED_HOSTS"]


def test_web_worker_and_beat_connect_as_the_app_role_and_only_migrate_as_the_owner(services):
    for name in DJANGO_SERVICES:
        url = services[name]["environment"]["DATABASE_URL"]
        assert url.startswith("postgres://memoryadmin_app:"), name
        assert "migrate" not in words(services[name]), name
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    migrate = services["migrate"]
    assert migrate["environment"]["DATABASE_URL"].startswith("postgres://memoryadmin_owner:")
    assert migrate["environment"]["MEMORYADMIN_APP_DB_ROLE"] == "memoryadmin_app"
    assert words(migrate) == ["python", "manage.py", "migrate", "--noinput"]
    mounts = services["postgres"]["volumes"]
    assert "./deploy/postgres/create-roles.sh:/docker-entrypoint-initdb.d/10-create-roles.sh:ro" in mounts
    roles = (ROOT / "deploy/postgres/create-roles.sh").read_text()
    assert "CREATE ROLE memoryadmin_app LOGIN NOSUPERUSER" in roles


def test_every_secret_is_required_and_none_has_a_default(services):
    """`${NAME:?message}`: compose refuses to start while a secret is missing, and ships no placeholder."""
    text = COMPOSE.read_text()
    for name in SECRETS:
        assert f"${{{name}:?" in text, name
        assert f"${{{name}:-" not in text, name
    assert "insecure" not in text


def test_https_is_on_behind_the_proxy(services):
    env = services["web"]["environment"]
    assert {
        k: env[k] for k in ("SECURE_SSL_REDIRECT", "SECURE_COOKIES", "HTTPS_PROXY_HEADER", "SECURE_HSTS_PRELOAD")
    } == {
        "SECURE_SSL_REDIRECT": "true",
        "SECURE_COOKIES": "true",
        "HTTPS_PROXY_HEADER": "true",
        "SECURE_HSTS_PRELOAD": "true",
    }
    assert int(env["SECURE_HSTS_SECONDS"]) >= 31536000
    # Only the proxy is reachable from outside: the web server trusts its X-Forwarded-Proto.
    assert [name for name, s in services.items() if s.get("ports")] == ["proxy"]
    assert "reverse_proxy web:8000" in (ROOT / "deploy/Caddyfile").read_text()


def test_commands(services):
    # One worker per queue; the sweeps' worker also takes the interactive queue, to take over a dead worker's task.
    for name, queues in (("worker-interactive", "interactive"), ("worker-sweeps", "sweeps,interactive")):
        command = words(services[name])
        assert {"celery", "worker"} <= set(command)
        assert command[command.index("-Q") + 1] == queues
    assert {"celery", "beat"} <= set(words(services["beat"]))
    web = words(services["web"])
    assert "gunicorn" in web


def test_the_web_server_and_the_image_use_the_shipped_gunicorn_configuration(services):
    # gunicorn.conf.py keeps query strings out of the access log (tests/unit/test_access_log.py)
    web = [word.strip('"') for word in words(services["web"])]
    # and names the app: memoryadmin.asgi (Django and /mcp) on uvicorn workers
    assert web[web.index("gunicorn") :] == ["gunicorn", "--config", "gunicorn.conf.py"]
    dockerfile = (ROOT / "Dockerfile").read_text().splitlines()
    assert [line for line in dockerfile if line.startswith("CMD")] == [
        'CMD ["gunicorn", "--config", "gunicorn.conf.py"]'
    ]
    assert "gunicorn.conf.py" not in (ROOT / ".dockerignore").read_text()


def test_exactly_one_beat(services):
    # Two beats would send every scheduled task twice.
    assert [name for name, s in services.items() if "beat" in words(s)] == ["beat"]


def test_infrastructure_has_healthchecks(services):
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "redis-cli ping" in " ".join(services["redis"]["healthcheck"]["test"])
    assert "http://localhost:8000/healthz/" in " ".join(services["web"]["healthcheck"]["test"])


def test_django_services_wait_for_healthy_infrastructure(services):
    for name in DJANGO_SERVICES:
        depends = services[name]["depends_on"]
        for infra in ("postgres", "redis"):
            assert depends[infra]["condition"] == "service_healthy", (name, infra)


def compose_command() -> list[str] | None:
    """Compose's own parser (`config` needs no engine): the docker plugin, or Debian's docker-compose."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_accepts_the_file_and_refuses_to_start_without_its_secrets():
    compose = compose_command()
    if compose is None:
        pytest.skip("no compose parser on this machine (docker compose plugin or docker-compose)")
    config = [*compose, "-f", str(COMPOSE), "config", "-q"]
    secrets = {name: "x" * 60 for name in SECRETS}
    result = subprocess.run(config, cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, **secrets})
    assert result.returncode == 0, result.stderr
    for missing in SECRETS:
        without = {k: v for k, v in {**os.environ, **secrets}.items() if k != missing}
        result = subprocess.run(config, cwd=ROOT, capture_output=True, text=True, timeout=60, env=without)
        assert result.returncode != 0 and f"set {missing} in .env" in result.stderr, missing
