class DecisionError(Exception):
    """A decision that cannot be applied; the message is shown to the reviewer as is."""


class InvalidTransition(DecisionError):
    pass


class StaleDecision(DecisionError):
    """Someone else changed the entry after the reviewer loaded it. Nothing was written."""

    def __init__(self, entry, changes):
        self.entry = entry
        self.changes = list(changes)
        who = ", ".join(sorted({f"{e.actor_label} ({e.action})" for e in self.changes})) or "someone"
        super().__init__(f"This entry changed since you loaded it: {who}. Nothing of yours was saved.")


class GateNotMet(InvalidTransition):
    """A decision whose gate does not pass yet (a skill without its successful trials); `reasons` say why."""

    def __init__(self, message: str, reasons):
        self.reasons = list(reasons)
        super().__init__(f"{message}: {'; '.join(self.reasons)}.")


class StaleProposal(DecisionError):
    """Someone else changed the skill proposal after the user loaded it. Nothing was written."""

    def __init__(self, proposal, changes):
        self.proposal = proposal
        self.changes = list(changes)
        who = ", ".join(sorted({f"{e.actor_label} ({e.action})" for e in self.changes})) or "someone"
        super().__init__(f"This skill proposal changed since you loaded it: {who}. Nothing of yours was saved.")


class ConcurrentChange(Exception):
    """A sweep's batch changed between reading and writing it; nothing of the batch was written."""
