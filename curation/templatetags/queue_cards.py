"""The candidates queue's page of full cards, built in Python: the 50 cards of a page are the queue's hot path,
and rendered through partials/card.html they cost about a millisecond each (URL reversals, a variable
lookup per field, nested blocks), several times the page's queries.

Each card is what partials/card.html renders for a card that is neither refused nor being edited (the
only state a page lists), the same markup to the character but for white space between tags;
tests/views/test_candidates.py renders both for the same entries and compares them, so a change to one
that is not made to the other fails there. A single card (a decision's answer, a refused card, the card's
own page) still renders card.html."""

from __future__ import annotations

from django import template
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.template.defaultfilters import floatformat, join, linebreaksbr, truncatechars
from django.urls import reverse
from django.utils.html import conditional_escape as esc
from django.utils.safestring import mark_safe

register = template.Library()

_MARK = 987654321  # an id no URL pattern holds elsewhere, to cut a reversed URL around


def _around_id(name: str) -> tuple[str, str]:
    """What comes before and after the id in the URL `name` reverses to, from one reversal."""
    before, _, after = reverse(name, args=[_MARK]).partition(str(_MARK))
    return before, after


@register.simple_tag(takes_context=True)
def candidate_cards(context, items) -> str:
    """The page's cards, one after another, as partials/card.html would render each."""
    request = context["request"]
    can_review = bool(context["can"]["review"])
    csrf = str(context.get("csrf_token") or "")
    hidden_csrf = (f'<input type="hidden" name="csrfmiddlewaretoken" value="{esc(csrf)}">'
                   if csrf and csrf != "NOTPROVIDED" else "")
    next_path = esc(request.get_full_path())
    prefix = esc(context["queue"].dom_prefix)
    urls = {name: _around_id(f"curation:{name}") for name in (
        "entry", "candidate-approve", "candidate-defer", "candidate-edit", "candidate-reject", "candidate-merge")}
    shared = {"csrf": hidden_csrf, "next": next_path, "prefix": prefix, "can_review": can_review, "urls": urls}
    return mark_safe("\n".join(_card(item, shared) for item in items))


def _url(shared, name: str, pk) -> str:
    before, after = shared["urls"][name]
    return f"{before}{pk}{after}"


def _card(item, shared) -> str:
    pk, prefix = item.pk, shared["prefix"]
    entry_url = _url(shared, "entry", pk)
    actions = ""
    if shared["can_review"] and item.queued_at:
        actions = (f'  <div class="actions" hx-target="#{prefix}-{pk}" hx-swap="outerHTML" '
                   f'hx-include="#queue-filters">\n{_decisions(item, shared)}\n  </div>\n')
    return (
        f'<article class="card" id="{prefix}-{pk}" data-card tabindex="-1"\n'
        f'         data-entry-url="{entry_url}" aria-labelledby="{prefix}-{pk}-title">\n'
        f'  <header class="card-head">\n{_head(item, shared, entry_url)}\n  </header>\n'
        f'{_body(item, shared)}\n{actions}</article>\n'
    )


def _head(item, shared, entry_url: str) -> str:
    pk = item.pk
    parts = []
    if shared["can_review"] and item.queued_at:
        parts.append(f'<input type="checkbox" name="selected" value="{pk}:{esc(item.version)}" form="bulk-form" '
                     f'data-select aria-label="select #{pk}">')
    parts.append(f'<a id="{shared["prefix"]}-{pk}-title" class="id" href="{entry_url}">#{pk}</a>')
    parts.append(f'<span class="badge kind">{esc(item.get_kind_display())}</span>')
    parts.append(f'<code class="scope" title="applies to this scope and everything below it">{esc(item.scope)}</code>')
    parts.append(f'<span class="badge signal signal-{esc(item.signal)}" title="where the verdict came from">'
                 f'{esc(item.signal)}</span>')
    parts.append(f'<span class="confidence" title="base {floatformat(item.base_confidence, 2)}">'
                 f'confidence {floatformat(item.confidence, 2)}</span>')
    if item.queue_reason and item.queue_reason != "new":
        parts.append(f'<span class="badge reason">{esc(item.get_queue_reason_display())}</span>')
    if item.status != "pending":
        parts.append(f'<span class="badge status-{esc(item.status)}">{esc(item.status)}</span>')
    if item.first_approval_by_id:
        who = esc(item.first_approval_by.username)
        said = (f"approved by {who}, rejected by another" if item.queue_reason == "needs_lead"
                else f"1 of 2 approvals · {who}")
        parts.append(f'<span class="badge approvals" title="this scope needs two reviewers\' approval">{said}</span>')
    flags = "".join(f'<span class="badge flag" title="the raw text was never stored">⚑ {esc(_key(flag, "kind"))}: '
                    f'{esc(_key(flag, "detail"))}</span>' for flag in item.flags or ())
    if flags:
        parts.append(flags)
    task = f" · {esc(item.source_task)}" if item.source_task else ""
    parts.append(f'<span class="age">{esc(naturaltime(item.created_at))} · {esc(item.created_by_label)}{task}</span>')
    return "\n".join(f"    {part}" for part in parts)


def _key(flag, name: str):
    """`flag.kind` as the template reads it: the key of a dict, nothing when it has none."""
    return flag.get(name, "") if isinstance(flag, dict) else ""


def _body(item, shared) -> str:
    boundary = esc(item.boundary) if item.boundary else \
        '<em class="missing">no boundary given: when does this not hold?</em>'
    lesson = [
        f'    <dt>When</dt><dd class="trigger">{esc(item.trigger)}</dd>',
        f'    <dt>Do</dt><dd class="content">{linebreaksbr(item.content, autoescape=True)}</dd>',
        f'    <dt>Not when</dt><dd class="boundary">{boundary}</dd>',
    ]
    if item.conditions:
        chips = "".join(f'<span class="chip">{esc(c)}</span>' for c in item.conditions)
        lesson.append(f"    <dt>Keywords</dt><dd>{chips}</dd>")
    if item.recheck_when:
        lesson.append(f"    <dt>Recheck when</dt><dd>{esc(item.recheck_when)}</dd>")
    evidence = item.card_evidence
    quotes = "\n".join(
        f'      <blockquote class="ev ev-{esc(ev.polarity)}"><span class="badge signal signal-{esc(ev.signal)}">'
        f'{esc(ev.signal)}</span> <span class="badge">{esc(ev.get_kind_display())}</span> '
        f'{"<strong>contradicts</strong> " if ev.polarity == "contradicts" else ""}'
        f'{esc(truncatechars(ev.excerpt, 400))}{f" <small>({esc(ev.task_ref)})</small>" if ev.task_ref else ""}'
        f'</blockquote>' for ev in evidence
    ) or '      <p class="missing">No evidence: the agent\'s own say-so only.</p>'
    why = getattr(item, "queued_why", "")
    body = ((f'  <p class="queued-why">Why it is back: {esc(why)}</p>\n' if why else "")
            + '  <dl class="lesson">\n' + "\n".join(lesson) + "\n  </dl>\n\n"
            f'  <section class="evidence">\n    <h3>Evidence ({len(evidence)})</h3>\n{quotes}\n  </section>\n')
    links = item.card_similar
    if links:
        body += ('\n  <section class="similar">\n    <h3>Similar active entries</h3>\n    <ul>'
                 + "".join(_similar(item, link, shared) for link in links) + "</ul>\n  </section>\n")
    return body


def _similar(item, link, shared) -> str:
    other = link.similar
    line = (f'<li><a href="{_url(shared, "entry", other.pk)}">#{other.pk}</a> <code>{esc(other.scope)}</code> '
            f'{esc(truncatechars(other.trigger, 90))} <small>({floatformat(link.score, 2)} alike)</small>')
    if shared["can_review"] and item.status == "pending" and other.status == "active":
        merge = _url(shared, "candidate-merge", item.pk)
        line += (
            f'\n        <form method="post" class="inline" action="{merge}" hx-post="{merge}" '
            f'hx-target="#card-{item.pk}" hx-swap="outerHTML" hx-include="#queue-filters">\n'
            f'          {shared["csrf"]}<input type="hidden" name="version" value="{esc(item.version)}">'
            f'<input type="hidden" name="target" value="{other.pk}">'
            f'<input type="hidden" name="next" value="{shared["next"]}">\n'
            f'          <button type="submit" data-action="merge" title="copy this candidate\'s evidence to '
            f'#{other.pk} and close the candidate">Merge into #{other.pk}</button>\n        </form>\n      '
        )
    return line + "</li>"


def _decisions(item, shared) -> str:
    pk = item.pk
    version = esc(item.version)
    fields = (f'{shared["csrf"]}<input type="hidden" name="version" value="{version}">'
              f'<input type="hidden" name="next" value="{shared["next"]}">')
    approve, defer, edit, reject = (_url(shared, f"candidate-{name}", pk)
                                    for name in ("approve", "defer", "edit", "reject"))
    second = item.first_approval_by_id and item.queue_reason != "needs_lead"
    retiring = item.status == "active"
    return (
        f'    <form method="post" action="{approve}" hx-post="{approve}">\n      {fields}\n'
        f'      <button type="submit" class="primary" data-action="approve">'
        f'{"Approve, 2 of 2" if second else "Approve"} <kbd>a</kbd></button>\n    </form>\n'
        f'    <form method="post" action="{defer}" hx-post="{defer}">\n      {fields}\n'
        f'      <button type="submit" data-action="defer">Defer <kbd>d</kbd></button>\n    </form>\n\n'
        f'    <details data-panel="edit" >\n      <summary>Edit, then approve <kbd>e</kbd></summary>\n'
        f'      <form method="post" class="edit" action="{edit}" hx-post="{edit}">\n        {fields}\n'
        f'        <label>Scope <input name="scope" value="{esc(item.scope)}" required></label>\n'
        f'        <label>When (trigger) <textarea name="trigger" rows="2" maxlength="500" required>'
        f'{esc(item.trigger)}</textarea></label>\n'
        f'        <label>Do (content) <textarea name="content" rows="4" maxlength="4000" required>'
        f'{esc(item.content)}</textarea></label>\n'
        f'        <label>Not when (boundary) <textarea name="boundary" rows="2">{esc(item.boundary)}</textarea></label>\n'
        f'        <label>Keywords (comma separated) <input name="conditions" '
        f'value="{join(item.conditions, ", ", autoescape=True)}"></label>\n'
        f'        <label>Note (optional) <input name="note" placeholder="why you changed it"></label>\n'
        f'        <button type="submit" class="primary" data-action="save">Save and approve <kbd>Ctrl+Enter</kbd>'
        f'</button>\n      </form>\n    </details>\n\n'
        f'    <details data-panel="reject" >\n      <summary>{"Retire" if retiring else "Reject"} <kbd>r</kbd></summary>\n'
        f'      <form method="post" class="reject" action="{reject}" hx-post="{reject}">\n        {fields}\n'
        f'        <label>Reason <input name="reason" value="" placeholder="e.g. too broad: only true in the staging '
        f'container" size="50"></label>\n'
        f'        <button type="submit" class="danger" data-action="reject">'
        f'{"Retire (no longer served)" if retiring else "Reject"}</button>\n      </form>\n    </details>'
    )
