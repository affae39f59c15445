"""The candidates queue's card, built in Python: the only renderer of it. A page's 50 cards are the queue's
hot path, and rendered through a template they cost about a millisecond each (URL reversals, a variable
lookup per field, nested blocks), several times the page's queries (benchmarks/queue_bench.py, `make bench`).

`candidate_cards` builds a page of cards in one go; `candidate_card` builds one card (a decision's answer,
the card's own page) with what a single card can also show: why a decision was refused, "Undone", the
edit or reject panel reopened with what was typed and its field errors. The card keeps the frame every
queue card has (partials/card_frame.html): the article, its header, the refused box and the actions."""

from __future__ import annotations

from dataclasses import dataclass, field

from django import template
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.template.defaultfilters import floatformat, join, linebreaksbr, truncatechars
from django.urls import reverse
from django.utils.html import conditional_escape as esc
from django.utils.safestring import mark_safe

from curation.templatetags.lesson_fields import lesson_fields

register = template.Library()

_MARK = 987654321  # an id no URL pattern holds elsewhere, to cut a reversed URL around
_URL_NAMES = (
    "entry",
    "candidate-approve",
    "candidate-defer",
    "candidate-edit",
    "candidate-reject",
    "candidate-merge",
    "candidate-impact",
)


def _around_id(name: str) -> tuple[str, str]:
    """What comes before and after the id in the URL `name` reverses to, from one reversal."""
    before, _, after = reverse(name, args=[_MARK]).partition(str(_MARK))
    return before, after


@dataclass(frozen=True)
class _Shared:
    """What every card of one response has in common, worked out once."""

    csrf: str  # the hidden CSRF input, or nothing
    next: str  # where a decision returns to (escaped)
    prefix: str  # the queue's dom prefix (escaped)
    can_review: bool
    urls: dict
    viewer_id: int | None  # the reader: their own first approval waits for someone else
    # A single card's state (a page's cards have none): why a decision was refused, whether an undo just
    # reopened it, the panel to reopen with what was typed in it (`form`) and the errors by field.
    refused: object = None
    undone: bool = False
    oob: bool = False  # swapped in out of band (a bulk's undo reopens each card of the bulk)
    open_panel: str = ""
    form: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)

    @classmethod
    def from_context(cls, context, **state) -> "_Shared":
        csrf = str(context.get("csrf_token") or "")
        return cls(
            csrf=(
                f'<input type="hidden" name="csrfmiddlewaretoken" value="{esc(csrf)}">'
                if csrf and csrf != "NOTPROVIDED"
                else ""
            ),
            next=esc(context["request"].get_full_path()),
            prefix=esc(context["queue"].dom_prefix),
            can_review=bool(context["can"]["review"]),
            viewer_id=getattr(context["request"].user, "pk", None),
            urls={name: _around_id(f"curation:{name}") for name in _URL_NAMES},
            **state,
        )


@register.simple_tag(takes_context=True)
def candidate_cards(context, items) -> str:
    """The page's cards, one after another."""
    shared = _Shared.from_context(context)
    return mark_safe("\n".join(_card(item, shared) for item in items))


@register.simple_tag(takes_context=True)
def candidate_card(context, item) -> str:
    """One card, with the state the context gives it: `refused`, `undone`, `oob_card`, `open_panel`, `form`,
    `errors`."""
    shared = _Shared.from_context(
        context,
        refused=context.get("refused"),
        undone=bool(context.get("undone")),
        oob=bool(context.get("oob_card")),
        open_panel=context.get("open_panel") or "",
        form=context.get("form") or {},
        errors=context.get("errors") or {},
    )
    return mark_safe(_card(item, shared))


def _url(shared, name: str, pk) -> str:
    before, after = shared.urls[name]
    return f"{before}{pk}{after}"


def _errors(shared, name: str, indent: str = "        ") -> str:
    """The field's errors under it, as a line of its own; nothing when it has none."""
    messages = shared.errors.get(name)
    if not messages:
        return ""
    return f'\n{indent}<p class="field-error" role="alert">{join(messages, " ", autoescape=True)}</p>'


def _card(item, shared) -> str:
    pk, prefix = item.pk, shared.prefix
    entry_url = _url(shared, "entry", pk)
    actions = ""
    if shared.can_review and item.queued_at:
        actions = (
            f'  <div class="actions" hx-target="#{prefix}-{pk}" hx-swap="outerHTML" '
            f'hx-include="#queue-filters">\n{_decisions(item, shared)}{_errors(shared, "version", "    ")}'
            f'\n  </div>\n'
        )
    undone = f'  <p class="undone" role="status">Undone: #{pk} is back in the queue.</p>\n' if shared.undone else ""
    oob = ' hx-swap-oob="true"' if shared.oob else ""
    return (
        f'<article class="card{" has-conflict" if shared.refused else ""}" id="{prefix}-{pk}" data-card '
        f'tabindex="-1"{oob}\n         data-entry-url="{entry_url}" aria-labelledby="{prefix}-{pk}-title">\n'
        f'  <header class="card-head">\n{_head(item, shared, entry_url)}\n  </header>\n'
        f'{undone}{_refused(item, shared, entry_url)}{_body(item, shared)}\n{actions}</article>\n'
    )


def _refused(item, shared, entry_url: str) -> str:
    """Why the decision was refused: what changed since the card was loaded, and what to do now."""
    if not shared.refused:
        return ""
    changes = getattr(shared.refused, "changes", None)
    changed = ""
    if changes:
        changed = (
            "    <ul>"
            + "".join(
                f'<li>{esc(ev.actor_label)} — {esc(ev.action)} {esc(naturaltime(ev.created_at))}'
                f'{f": “{esc(ev.reason)}”" if ev.reason else ""}</li>'
                for ev in changes
            )
            + "</ul>\n"
        )
    waiting = " and still waiting: decide again on what you see below" if item.queued_at else ""
    return (
        f'  <div class="conflict" role="alert">\n    <p><strong>{esc(shared.refused)}</strong></p>\n{changed}'
        f'    <p>It is now <strong>{esc(item.status)}</strong>{waiting}. <a href="{entry_url}">Its history</a></p>\n'
        f'  </div>\n'
    )


def _head(item, shared, entry_url: str) -> str:
    pk = item.pk
    parts = []
    if shared.can_review and item.queued_at:
        parts.append(
            f'<input type="checkbox" name="selected" value="{pk}:{esc(item.version)}" form="bulk-form" '
            f'data-select aria-label="select #{pk}">'
        )
    parts.append(f'<a id="{shared.prefix}-{pk}-title" class="id" href="{entry_url}">#{pk}</a>')
    parts.append(f'<span class="badge kind">{esc(item.get_kind_display())}</span>')
    parts.append(f'<code class="scope" title="applies to this scope and everything below it">{esc(item.scope)}</code>')
    parts.append(
        f'<span class="badge signal signal-{esc(item.signal)}" title="where the verdict came from">'
        f'{esc(item.signal)}</span>'
    )
    parts.append(
        f'<span class="confidence" title="base {floatformat(item.base_confidence, 2)}">'
        f'confidence {floatformat(item.confidence, 2)}</span>'
    )
    parts.append(
        f'<span class="badge trust trust-{esc(item.get_trust_display())}" title="provenance trust">'
        f"trust {esc(item.get_trust_display())}</span>"
    )
    if item.queue_reason and item.queue_reason != "new":
        parts.append(f'<span class="badge reason">{esc(item.get_queue_reason_display())}</span>')
    if item.status != "pending":
        parts.append(f'<span class="badge status-{esc(item.status)}">{esc(item.status)}</span>')
    if item.first_approval_by_id:
        who = esc(item.first_approval_by.username)
        said = (
            f"approved by {who}, rejected by another"
            if item.queue_reason == "needs_lead"
            else "1 of 2 approvals · yours: waiting for a second reviewer"
            if _yours(item, shared)
            else f"1 of 2 approvals · {who}"
        )
        parts.append(f'<span class="badge approvals" title="this scope needs two reviewers\' approval">{said}</span>')
    flags = "".join(
        f'<span class="badge flag" title="{_FLAG_TITLES.get(_key(flag, "kind"), _REDACTED_TITLE)}">'
        f'⚑ {esc(_key(flag, "kind"))}: {esc(_key(flag, "detail"))}</span>'
        for flag in item.flags or ()
    )
    if item.quarantined:
        said = "only a lead approves it" if item.status == "pending" else "withheld from agents until a lead decides"
        parts.append(f'<span class="badge flag quarantined">possible injection: {said}</span>')
    if flags:
        parts.append(flags)
    task = f" · {esc(item.source_task)}" if item.source_task else ""
    parts.append(f'<span class="age">{esc(naturaltime(item.created_at))} · {esc(item.created_by_label)}{task}</span>')
    return "\n".join(f"    {part}" for part in parts)


def _evidence_found(ev) -> str:
    """A piece the injection detector marked: what it found (agents reading the entry get a placeholder)."""
    if not ev.injection_found:
        return ""
    return (
        '<span class="badge flag quarantined" title="withheld from agents reading the entry">'
        f"possible injection: {esc(', '.join(ev.injection_found))}</span> "
    )


_REDACTED_TITLE = "the raw text was never stored"
_FLAG_TITLES = {"injection": "text that may instruct the agent beyond the lesson: only a lead approves it"}


def _key(flag, name: str):
    """`flag.kind` as the template reads it: the key of a dict, nothing when it has none."""
    return flag.get(name, "") if isinstance(flag, dict) else ""


def _body(item, shared) -> str:
    boundary = (
        esc(item.boundary) if item.boundary else '<em class="missing">no boundary given: when does this not hold?</em>'
    )
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
    quotes = (
        "\n".join(
            f'      <blockquote class="ev ev-{esc(ev.polarity)}"><span class="badge signal signal-{esc(ev.signal)}">'
            f'{esc(ev.signal)}</span> <span class="badge">{esc(ev.get_kind_display())}</span> '
            f'<span class="badge trust trust-{esc(ev.get_trust_display())}" title="{esc(ev.get_source_display())}">'
            f"trust {esc(ev.get_trust_display())}</span> "
            f'{"<strong>contradicts</strong> " if ev.polarity == "contradicts" else ""}'
            f"{_evidence_found(ev)}"
            f'{esc(truncatechars(ev.excerpt, 400))}{f" <small>({esc(ev.task_ref)})</small>" if ev.task_ref else ""}'
            f'</blockquote>'
            for ev in evidence
        )
        or '      <p class="missing">No evidence: the agent\'s own say-so only.</p>'
    )
    why = getattr(item, "queued_why", "")
    trust_why = getattr(item, "trust_why", "")
    body = (
        (f'  <p class="queued-why">Why it is back: {esc(why)}</p>\n' if why else "")
        + (f'  <p class="trust-why">Trust {esc(trust_why)}</p>\n' if trust_why else "")
        + '  <dl class="lesson">\n'
        + "\n".join(lesson)
        + "\n  </dl>\n\n"
        f'  <section class="evidence">\n    <h3>Evidence ({len(evidence)})</h3>\n{quotes}\n  </section>\n'
    )
    links = item.card_similar
    if links:
        body += (
            '\n  <section class="similar">\n    <h3>Similar active entries</h3>\n    <ul>'
            + "".join(_similar(item, link, shared) for link in links)
            + "</ul>\n  </section>\n"
        )
    if shared.can_review and item.status == "pending":
        # Replaying the scope's retrievals costs more than the whole page: the card asks for it once in view.
        impact = _url(shared, "candidate-impact", item.pk)
        body += (
            '\n  <section class="impact">\n    <h3>If approved</h3>\n'
            f'    <div hx-get="{impact}" hx-trigger="revealed" hx-swap="innerHTML" aria-live="polite" data-background>'
            f'<p class="hint">Impact being computed… <a href="{impact}">what approving it would change</a></p></div>\n'
            "  </section>\n"
        )
    return body


def _similar(item, link, shared) -> str:
    other = link.similar
    line = (
        f'<li><a href="{_url(shared, "entry", other.pk)}">#{other.pk}</a> <code>{esc(other.scope)}</code> '
        f'{esc(truncatechars(other.trigger, 90))} <small>({floatformat(link.score, 2)} alike)</small>'
    )
    if shared.can_review and item.status == "pending" and other.status == "active":
        merge = _url(shared, "candidate-merge", item.pk)
        line += (
            f'\n        <form method="post" class="inline" action="{merge}" hx-post="{merge}" '
            f'hx-target="#card-{item.pk}" hx-swap="outerHTML" hx-include="#queue-filters">\n'
            f'          {shared.csrf}<input type="hidden" name="version" value="{esc(item.version)}">'
            f'<input type="hidden" name="target" value="{other.pk}">'
            f'<input type="hidden" name="next" value="{shared.next}">\n'
            f'          <button type="submit" data-action="merge" title="copy this candidate\'s evidence to '
            f'#{other.pk} and close the candidate">Merge into #{other.pk}</button>\n        </form>\n      '
        )
    return line + "</li>"


def _yours(item, shared) -> bool:
    """The reader gave this candidate its first approval: only another reviewer can give the second."""
    return (
        bool(item.first_approval_by_id)
        and item.first_approval_by_id == shared.viewer_id
        and item.queue_reason != "needs_lead"
    )


def _open(shared, panel: str) -> str:
    return " open" if shared.open_panel == panel else ""


def _decisions(item, shared) -> str:
    pk = item.pk
    version = esc(item.version)
    fields = (
        f'{shared.csrf}<input type="hidden" name="version" value="{version}">'
        f'<input type="hidden" name="next" value="{shared.next}">'
    )
    approve, defer, edit, reject = (
        _url(shared, f"candidate-{name}", pk) for name in ("approve", "defer", "edit", "reject")
    )
    second = item.first_approval_by_id and item.queue_reason != "needs_lead"
    retiring = item.status == "active"
    edit_fields = lesson_fields(
        {
            "scope": item.scope,
            "trigger": item.trigger,
            "content": item.content,
            "boundary": item.boundary,
            "conditions": join(item.conditions, ", ", autoescape=True),
        },
        form=shared.form,
        errors=shared.errors,
    )
    approve_button = (
        '      <button type="button" class="primary" disabled title="you gave it its first approval">'
        'Waiting for a second reviewer</button>'
        if _yours(item, shared)
        else f'      <button type="submit" class="primary" data-action="approve">'
        f'{"Approve, 2 of 2" if second else "Approve"} <kbd>a</kbd></button>'
    )
    return (
        f'    <form method="post" action="{approve}" hx-post="{approve}">\n      {fields}\n'
        f'{approve_button}\n    </form>\n'
        f'    <form method="post" action="{defer}" hx-post="{defer}">\n      {fields}\n'
        f'      <button type="submit" data-action="defer">Defer <kbd>d</kbd></button>\n    </form>\n\n'
        f'    <details data-panel="edit"{_open(shared, "edit")}>\n      <summary>Edit, then approve <kbd>e</kbd></summary>\n'
        f'      <form method="post" class="edit" action="{edit}" hx-post="{edit}">\n        {fields}\n'
        f'        {edit_fields}\n'
        f'        <label>Note (optional) <input name="note" placeholder="why you changed it"></label>\n'
        f'        <button type="submit" class="primary" data-action="save">Save and approve <kbd>Ctrl+Enter</kbd>'
        f'</button>\n      </form>\n    </details>\n\n'
        f'    <details data-panel="reject"{_open(shared, "reject")}>\n'
        f'      <summary>{"Retire" if retiring else "Reject"} <kbd>r</kbd></summary>\n'
        f'      <form method="post" class="reject" action="{reject}" hx-post="{reject}">\n        {fields}\n'
        f'        <label>Reason <input name="reason" value="{esc(shared.form.get("reason") or "")}" '
        f'placeholder="e.g. too broad: only true in the staging container" size="50"></label>'
        f'{_errors(shared, "reason")}\n'
        f'        <button type="submit" class="danger" data-action="reject">'
        f'{"Retire (no longer served)" if retiring else "Reject"}</button>\n      </form>\n    </details>'
    )
