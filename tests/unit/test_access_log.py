"""The shipped web server's access log keeps paths, never query strings: what an agent or a reviewer
typed into a URL (a retrieval query, a console search) may hold secrets and e-mail addresses."""

import datetime
import runpy
from pathlib import Path
from types import SimpleNamespace

from gunicorn.config import Config
from gunicorn.glogging import Logger

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "gunicorn.conf.py"
SECRET_QUERY = "q=what+did+jane.doe%40example.com+say&task_ref=AKIAIOSFODNN7EXAMPLE"


def access_line(config: Config, environ: dict) -> str:
    logger = Logger(config)
    response = SimpleNamespace(status="200 OK", sent=512, headers=[])
    request = SimpleNamespace(headers=[("USER-AGENT", "agent/1.0")])
    atoms = logger.atoms_wrapper_class(logger.atoms(response, request, environ, datetime.timedelta(milliseconds=12)))
    return config.access_log_format % atoms


def shipped_config() -> Config:
    config = Config()
    for name, value in runpy.run_path(str(CONFIG)).items():
        if name in config.settings:
            config.set(name, value)
    return config


def test_the_access_log_names_the_path_without_the_query_string():
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": f"/api/v1/memory?{SECRET_QUERY}",
        "PATH_INFO": "/api/v1/memory",
        "QUERY_STRING": SECRET_QUERY,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "10.0.0.7",
        "HTTP_REFERER": f"https://memory.example.com/review/candidates/?{SECRET_QUERY}",
    }
    config = shipped_config()
    assert config.accesslog == "-"
    line = access_line(config, environ)
    assert '"GET /api/v1/memory HTTP/1.1" 200 512' in line and line.startswith("10.0.0.7 ")
    assert "jane.doe" not in line and "AKIA" not in line and "?" not in line
    # gunicorn's own default writes the query string: the shipped configuration is what removes it
    assert "AKIA" in access_line(Config(), environ)


def test_the_shipped_server_is_the_asgi_entry_point_on_uvicorn_workers():
    config = shipped_config()
    assert config.wsgi_app == "memoryadmin.asgi:application"
    assert config.worker_class_str == "uvicorn_worker.UvicornWorker"


def test_uvicorns_access_log_names_the_path_without_the_query_string():
    import logging

    import memoryadmin.asgi  # noqa: F401  (installs the filter on uvicorn's access logger)

    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("uvicorn.access")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        # uvicorn's own call (a query with a credential in it is redacted anyway: this one holds only what an
        # agent typed)
        logger.info(
            '%s - "%s %s HTTP/%s" %d', "10.0.0.7:5123", "GET", "/api/v1/memory?q=rotate+the+webhook+key&k=3", "1.1", 200
        )
    finally:
        logger.removeHandler(handler)
        logger.level = level
    assert lines == ['10.0.0.7:5123 - "GET /api/v1/memory HTTP/1.1" 200']
