"""Figures of the learning dashboard: proportions as percentages, differences as signed points."""

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.html import format_html

from curation.rules import evaluation

register = template.Library()


@register.filter
def percent(value) -> str:
    """0.634 -> 63.4%."""
    return "—" if value is None else f"{value * 100:.1f}%"


@register.filter
def rate_cell(rate) -> str:
    """An arm's success rate, its Wilson 95% interval and its tasks; a dash without tasks. A filter, not an
    include: the per-scope table has a few hundred of these."""
    if not rate.tasks:
        return "—"
    low, high = rate.interval
    return format_html(
        '<span class="rate">{}</span> <span class="ci">({}–{}) of {}</span>',
        percent(rate.value),
        percent(low),
        percent(high),
        intcomma(rate.tasks),
    )


@register.filter
def difference_cell(difference) -> str:
    """Memory's difference in points and its 95% interval; a dash when an arm has no tasks."""
    if not difference:
        return "—"
    return format_html('{} <span class="ci">({} to {})</span>', *(evaluation.points(x) for x in difference))


@register.filter
def lift_cell(lift) -> str:
    """A lesson's estimated lift in points and its 95% interval (lift.estimate); a dash without one."""
    if lift is None:
        return "—"
    return format_html(
        '{} <span class="ci">({} to {})</span>', *(evaluation.points(x) for x in (lift.mean, lift.low, lift.high))
    )
