"""How an entry's timeline shows a changed value: dates as dates (UTC, to the minute), "—" for none, lists
joined, confidences to two places; not the snapshot's raw ISO strings with microseconds."""

import datetime
import re

from django import template

register = template.Library()

ISO_MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


@register.filter
def timeline_value(value):
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, str) and ISO_MOMENT.match(value):
        try:
            moment = datetime.datetime.fromisoformat(value)
        except ValueError:
            return value
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.timezone.utc)
        return f"{moment:%Y-%m-%d %H:%M} UTC"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.2f}"
    return value
