"""The queues' filters as Django forms, one per queue. A form reads the GET parameters of the page (or
the filters an action carries along, hx-include), renders the filter bar, and gives the selector its
filters dataclass. A value out of range is an error, shown above the queue with a 400 (a scope that is not
one, 422)."""

from __future__ import annotations

from django import forms

from curation.rules import access
from curation.rules.lifecycle import SKILL_KINDS
from curation.rules.trust import Trust
from curation.models import ConsolidationProposal, ForgetRequest, Kind, Signal
from curation.selectors import ConflictFilters, ProposalFilters, QueueFilters, SkillFilters
from curation.selectors.forgets import ForgetFilters


class TruncatedText(forms.CharField):
    """Free text cut to a length instead of refused: a long scope or query still filters."""

    def __init__(self, length: int, **kwargs):
        self.length = length
        super().__init__(required=False, **kwargs)

    def to_python(self, value):
        return super().to_python(value)[: self.length]


class FlagInput(forms.CheckboxInput):
    """A checkbox with value="1" that hands the field the raw parameter (CheckboxInput would make "0" true)."""

    def __init__(self):
        super().__init__(check_test=lambda value: value in ("1", True))

    def format_value(self, value):
        return "1"

    def value_from_datadict(self, data, files, name):
        return data.get(name)


class Flag(forms.Field):
    """On only when the parameter is "1", as the checkbox sends it."""

    widget = FlagInput

    def __init__(self):
        super().__init__(required=False)

    def to_python(self, value):
        return value == "1"


def choice(choices, *, message: str = "") -> forms.ChoiceField:
    """A select of `choices` with an "any" option; another value is an error naming the choices."""
    message = message or f"one of {', '.join(value for value, _ in choices)}"
    return forms.ChoiceField(
        choices=[("", "any"), *choices], required=False, error_messages={"invalid_choice": message}
    )


def fraction(placeholder: str, label: str) -> forms.FloatField:
    """A confidence bound; `label` is its accessible name (two bounds share one visible label)."""
    message = "a number from 0 to 1"
    return forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        error_messages={"invalid": message, "min_value": message, "max_value": message},
        widget=forms.TextInput(attrs={"size": 4, "placeholder": placeholder, "aria-label": label}),
    )


class ScopeFilter(forms.CharField):
    """A scope prefix, held to the same rule as every scope that comes in (access.clean_scope)."""

    def __init__(self):
        # The placeholder says what to type, and cannot be taken for a filter already set. Not stripped:
        # spaces around a scope are refused with the rule, as everywhere a scope comes in.
        super().__init__(
            required=False, strip=False, widget=forms.TextInput(attrs={"placeholder": "any scope", "size": 18})
        )

    def clean(self, value):
        value = super().clean(value)
        return access.clean_scope(value) if value else value


def scope_field() -> ScopeFilter:
    return ScopeFilter()


def refusal_status(form: forms.Form) -> int:
    """A refused scope is a 422 wherever a scope comes in; another bad filter value is a 400."""
    return 422 if "scope" in form.errors else 400


class QueueFilterForm(forms.Form):
    """A queue's filter bar. `filters()` is the selector's filters (the defaults when the form is not valid).

    Its parameters have their own namespace ("f-scope", "f-reason"): a decision posts the filters along
    (hx-include) next to its own fields, and a reject's `reason` or an edit's `scope` must not read as a
    filter."""

    dataclass: type
    prefix = "f"

    def filters(self):
        if not self.is_valid():
            return self.dataclass()
        return self.dataclass(**self.cleaned_data)


TRUST_CHOICES = [(level.label, level.label) for level in Trust]


class CandidateFilterForm(QueueFilterForm):
    dataclass = QueueFilters
    scope = scope_field()
    kind = choice(Kind.choices)
    signal = choice(Signal.choices)
    reason = choice([("new", "new"), ("recheck", "recheck"), ("lead", "needs a lead")], message="new, recheck or lead")
    min_confidence = fraction("0", "Minimum confidence")
    max_confidence = fraction("1", "Maximum confidence")
    min_trust = choice(TRUST_CHOICES)
    max_trust = choice(TRUST_CHOICES)
    q = TruncatedText(
        200, widget=forms.TextInput(attrs={"type": "search", "placeholder": "words in trigger or content", "size": 22})
    )
    deferred = Flag()


class ConflictFilterForm(QueueFilterForm):
    dataclass = ConflictFilters
    DETECTORS = ("ingest", "sweep", "merge")
    scope = scope_field()
    kind = choice(Kind.choices)
    signal = choice(Signal.choices)
    max_confidence = fraction("1", "Maximum confidence")
    older_than_days = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=3650,
        error_messages={key: "a whole number of days (at most 3650)" for key in ("invalid", "min_value", "max_value")},
        widget=forms.TextInput(attrs={"size": 4, "placeholder": "0"}),
    )
    detected_by = choice([(d, d) for d in DETECTORS])
    min_trust = choice(TRUST_CHOICES)
    max_trust = choice(TRUST_CHOICES)


class ProposalFilterForm(QueueFilterForm):
    dataclass = ProposalFilters
    scope = scope_field()
    kind = choice(ConsolidationProposal.Kind.choices)
    min_trust = choice(TRUST_CHOICES)
    max_trust = choice(TRUST_CHOICES)


class SkillFilterForm(QueueFilterForm):
    dataclass = SkillFilters
    scope = scope_field()
    kind = choice([(k, Kind(k).label) for k in SKILL_KINDS])
    ready = Flag()


class ForgetFilterForm(QueueFilterForm):
    dataclass = ForgetFilters
    scope = scope_field()
    state = forms.ChoiceField(
        choices=ForgetRequest.State.choices,
        required=False,
        error_messages={"invalid_choice": "one of open, approved, declined, reopened"},
    )
