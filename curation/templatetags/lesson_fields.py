"""The fields that edit a lesson's text (scope, when, do, not when, keywords), written once: the candidates'
card (queue_cards.py builds it in Python and calls `lesson_fields`), a merge proposal's edit panel and a
conflict's merge form (`{% lesson_edit_fields %}`). Each field's maxlength is the Entry field's max_length,
so the browser stops where the write path would refuse."""

from __future__ import annotations

from django import template
from django.template.defaultfilters import join
from django.utils.html import conditional_escape as esc
from django.utils.safestring import mark_safe

from curation.models import Entry

register = template.Library()

# The fields in the order a form shows them: name, label, rows (0: a one-line input), required.
FIELDS = (
    ("scope", "Scope", 0, True),
    ("trigger", "When (trigger)", 2, True),
    ("content", "Do (content)", 4, True),
    ("boundary", "Not when (boundary)", 2, False),
    ("conditions", "Keywords (comma separated)", 0, False),
)


def max_lengths() -> dict[str, int | None]:
    """Each field's max_length on Entry (None: no limit)."""
    return {name: getattr(Entry._meta.get_field(name), "max_length", None) for name, *_ in FIELDS}


def lesson_fields(
    values: dict, *, form=None, errors=None, prefix: str = "", labels=None, indent: str = "        "
) -> str:
    """The edit fields for the lessons' fields in `values` (name -> saved value; a field not in it is not
    shown; keywords as the text to edit). `form` is what was typed when a refused form is shown again, by
    input name (`prefix` + field); `errors` the refusal's messages by field; `labels` replaces a label."""
    form, errors, labels = form or {}, errors or {}, labels or {}
    limits = max_lengths()
    lines = []
    for name, label, rows, required in FIELDS:
        if name not in values:
            continue
        key = prefix + name
        value = esc(form[key] if key in form else values[name])
        attrs = f' maxlength="{limits[name]}"' if limits[name] else ""
        attrs += " required" if required else ""
        label = esc(labels.get(name, label))
        if rows:
            lines.append(f'<label>{label} <textarea name="{key}" rows="{rows}"{attrs}>{value}</textarea></label>')
        else:
            lines.append(f'<label>{label} <input name="{key}" value="{value}"{attrs}></label>')
        if errors.get(name):
            lines.append(f'<p class="field-error" role="alert">{join(errors[name], " ", autoescape=True)}</p>')
    return f"\n{indent}".join(lines)


@register.simple_tag(takes_context=True)
def lesson_edit_fields(context, prefix: str = "", content_label: str = "", **values) -> str:
    """`{% lesson_edit_fields trigger=... content=... %}`: the edit fields for the values given, with the
    context's `form` and `errors`; `prefix` names the inputs ("merge_" -> merge_trigger)."""
    labels = {"content": content_label} if content_label else {}
    return mark_safe(
        lesson_fields(values, form=context.get("form"), errors=context.get("errors"), prefix=prefix, labels=labels)
    )
