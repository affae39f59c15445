"""The suite, by layer:

unit/       pure rules and formats (lifecycle, contradiction, redaction, SKILL.md, settings, compose)
services/   one decision at a time through curation.services, with its Event; commands that replay them
sweeps/     the background sweeps (curation.sweeps): rules against their SQL, runs, locks, the worker
selectors/  reads and their query plans
views/      the console's pages and fragments through the test client
api/        the agent API, with its own client (factories.Agent)
browser/    real Chromium through Playwright (marker `browser`)

Data comes from factories.py only; conftest.py holds the fixtures every layer shares, and a layer's own
fixtures live in its conftest.py."""
