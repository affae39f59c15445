"""Python's cyclic garbage collector, set once per process at start-up (ProjectConfig.ready): the web
workers, the Celery workers, commands and tests alike.

A request or a task allocates tens of thousands of short-lived objects (a batch of 500 candidates: model
instances, dicts of columns, values rendered for the database), almost none of them in a cycle, and each is
freed by its reference count. With the default first-generation threshold (700 allocations not yet freed)
the collector walks the young objects again and again while a batch is built: 60-80 ms of a 430 ms batch's
CPU in the ingest bench. At 10,000 it walks them a fourteenth as often; the cycles that exist are still
collected, a little later, and the memory they hold meanwhile is a few megabytes at most."""

import gc

YOUNG_THRESHOLD = 10_000


def tune() -> None:
    """The first generation's threshold raised; the older generations' left as Python sets them."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
