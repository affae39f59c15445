"""Figures of the learning dashboard: proportions as percentages, differences as signed points."""

from django import template

from curation import evaluation

register = template.Library()


@register.filter
def percent(value) -> str:
    """0.634 -> 63.4%."""
    return "—" if value is None else f"{value * 100:.1f}%"


@register.filter
def signed_points(value) -> str:
    """0.079 -> +7.9 (percentage points)."""
    return "—" if value is None else evaluation.points(value)
