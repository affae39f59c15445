class DecisionError(Exception):
    """A decision that cannot be applied; the message is shown to the reviewer as is."""


class InvalidTransition(DecisionError):
    pass


class Stale(DecisionError):
    """Someone else changed what the user loaded; nothing was written. `changes` are the Events since
    the version the user saw, so the message can say who did what."""

    what = "This item"

    def __init__(self, subject, changes):
        self.subject = subject
        self.changes = list(changes)
        who = ", ".join(sorted({f"{e.actor_label} ({e.action})" for e in self.changes})) or "someone"
        super().__init__(f"{self.what} changed since you loaded it: {who}. Nothing of yours was saved.")


class StaleDecision(Stale):
    """An entry changed after the reviewer loaded it."""

    what = "This entry"

    @property
    def entry(self):
        return self.subject


class GateNotMet(InvalidTransition):
    """A decision whose gate does not pass yet (a skill without its successful trials); `reasons` say why."""

    def __init__(self, message: str, reasons):
        self.reasons = list(reasons)
        super().__init__(f"{message}: {'; '.join(self.reasons)}.")


class StaleProposal(Stale):
    """A skill proposal changed after the user loaded it."""

    what = "This skill proposal"

    @property
    def proposal(self):
        return self.subject


class ConcurrentChange(Exception):
    """A sweep's batch changed between reading and writing it; nothing of the batch was written."""


class Forgotten(InvalidTransition):
    """A lesson that repeats a forgotten one (its tombstone): refused by the write path wherever a lesson is
    written or made live (a decision in a queue shows it as a refused decision, on its card). The answer names the forget request and its day, never the
    forgotten text."""

    def __init__(self, request_id: int, forgotten_on):
        self.request_id, self.forgotten_on = request_id, forgotten_on
        super().__init__(
            f"This repeats a lesson forgotten by forget request #{request_id} on {forgotten_on:%Y-%m-%d}: "
            "it is not learned, approved or published again."
        )

    def as_json(self) -> dict:
        return {
            "status": "forgotten",
            "request_id": self.request_id,
            "forgotten_on": self.forgotten_on.isoformat(),
            "error": str(self),
        }
