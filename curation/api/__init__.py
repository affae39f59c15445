"""The agent API (DESIGN.md §5): JSON over HTTP under /api/v1/, bearer tokens, OpenAPI schema served."""
