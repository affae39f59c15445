"""The agent API: JSON over HTTP under /api/v1/, bearer tokens, OpenAPI schema served."""
