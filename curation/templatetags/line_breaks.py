"""Where a long identifier may wrap on a narrow screen: after its underscores, never inside a word."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def breakable(name) -> str:
    """`skill_nomination` may wrap as `skill_` / `nomination` (a <wbr> after each underscore); copied, it
    is the same name."""
    return mark_safe(escape(str(name)).replace("_", "_<wbr>"))
