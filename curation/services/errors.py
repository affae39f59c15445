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
