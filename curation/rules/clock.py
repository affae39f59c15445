"""The one clock. Every service, selector, sweep and model default asks `now()` for the time, so a replay or
`run_lifecycle --at` can run the product at a simulated time and every stamp (evidence, outcomes, retrievals,
sweep runs, Events) agrees with it. Outside `running_at` it is the wall clock."""

import contextlib
import contextvars
import datetime

from django.utils import timezone

_simulated: contextvars.ContextVar[datetime.datetime | None] = contextvars.ContextVar("memoryadmin_clock", default=None)


def now() -> datetime.datetime:
    """The time the product acts at: decisions, evidence, outcomes, retrievals, sweeps' as-of, Events."""
    return _simulated.get() or timezone.now()


def wall() -> datetime.datetime:
    """The real time, even in a replay: for what is about processes and requests, not about memory (a
    sweep run's start, end and lease, rate limits, idempotency windows, and the `updated_at` that
    detecting sweeps compare with their last run's start)."""
    return timezone.now()


@contextlib.contextmanager
def running_at(moment: datetime.datetime):
    """Within the block, `now()` is `moment` (aware, UTC if naive)."""
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, datetime.timezone.utc)
    token = _simulated.set(moment)
    try:
        yield moment
    finally:
        _simulated.reset(token)
