"""`make demo`: migrate, load the demo data, then run the web server, a Celery worker and beat on the
embedded default (SQLite + filesystem broker). Ctrl-C stops all three."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


# The demo's agent token (scopes acme, globex, initech); the README's curl session uses it.
DEMO_AGENT_TOKEN = "demo-agent-token-0123456789"


def web_command(port: str) -> list[str]:
    """The ASGI entry point, as in production: Django, and the MCP server at /mcp. The client's address is the
    connection's: no forwarded header is trusted at the server (gunicorn.conf.py says why)."""
    return [
        PY,
        "-m",
        "uvicorn",
        "memoryadmin.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        port,
        "--no-proxy-headers",
    ]


# Quiet: no start banners (two workers and beat would print some 70 lines after the demo's summary), and
# warnings and errors only, which still show.
CELERY = [PY, "-m", "celery", "--quiet", "-A", "memoryadmin"]
WORKER = [*CELERY, "worker", "--loglevel=warning", "--concurrency=1"]


def background_commands(data: Path) -> dict[str, list[str]]:
    return {
        # one worker per queue (memoryadmin/settings.py): a lead's task never waits behind a nightly sweep
        "worker-interactive": [*WORKER, "-Q", "interactive", "--hostname", "interactive@%h"],
        "worker-sweeps": [*WORKER, "-Q", "sweeps,interactive", "--hostname", "sweeps@%h"],
        "beat": [*CELERY, "beat", "--loglevel=warning", "--schedule", str(data / "celerybeat-schedule")],
    }


def manage(*args):
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, check=True)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    port = os.environ.get("PORT", "8000")
    manage("migrate", "--verbosity", "0")
    manage("seed_demo", "--agent-token", DEMO_AGENT_TOKEN)
    data = Path(os.environ.get("MEMORYADMIN_DATA_DIR", ROOT / "data"))
    commands = {"web": web_command(port), **background_commands(data)}
    procs = {name: subprocess.Popen(cmd, cwd=ROOT) for name, cmd in commands.items()}

    from curation.management.commands.seed_demo import DEFAULT_PASSWORD

    print(
        f"\nmemoryadmin is running at http://127.0.0.1:{port}\n"
        f"  log in as reviewer, lead or auditor (reviewer-billing sees acme/billing-api only); "
        f"password: {DEFAULT_PASSWORD}\n"
        f"  agent API: http://127.0.0.1:{port}/api/v1/docs with 'Authorization: Bearer {DEMO_AGENT_TOKEN}'\n"
        f"  MCP server: http://127.0.0.1:{port}/mcp (Streamable HTTP, the same token); README: Connect your agent\n"
        "  web server, a Celery worker per queue (interactive, sweeps) and beat are running; Ctrl-C stops all of them.\n",
        flush=True,
    )

    def stop(*_):
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(0)))
    try:
        while True:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    print(f"{name} stopped (exit {proc.returncode}); stopping the rest.", file=sys.stderr)
                    stop()
                    return proc.returncode or 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nstopping…", flush=True)
        stop()
        return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    django.setup()
    sys.exit(main())
