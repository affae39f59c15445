from tests.live import asgi_server  # noqa: F401  (a fixture)
