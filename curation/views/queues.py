"""One review queue, one shape: its page, its list fragment, a card, the decided card and the bulk form.

A queue is a subclass that names its selectors, its filter form and its card template (candidates.py,
conflicts.py, consolidation.py, skills.py); its decisions are short views that call one service through
`decide`. With htmx a decision answers with the card's fragment (and the queue count, out of band);
without JavaScript the same form posts and redirects back. Bad input answers 422 and a stale or refused
decision 409, both with the card and its message: htmx is configured (base.html) to swap them. A page,
a card and a decision answer differently with and without htmx, so each says `Vary: HX-Request`."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import Resolver404, path, resolve, reverse
from django.utils.http import urlencode
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from curation import selectors, services
from curation.rules.permissions import READ, REVIEW, require
from curation.selectors import BadCursor, Page
from curation.selectors.forgets import ForgetInProgress
from curation.services import InvalidTransition, StaleDecision
from curation.views.filters import QueueFilterForm, refusal_status

BULK_LIMIT = 200
# What a successful call of decide() adds to "decided in this session": an undo takes one back, a saved
# draft is no decision.
PROGRESS = {"undone": -1, "saved": 0}
FILTERS_KEPT = 1000  # the longest filter query remembered (QueuePreference.filters)
PAST = {"approve": "Approved", "reject": "Rejected", "accept": "Accepted", "dismiss": "Dismissed"}


def by_htmx(view):
    """The view answers a page or a fragment from one URL: caches keep the two apart."""
    return vary_on_headers("HX-Request")(view)


def decision(perm: str, message: str = ""):
    """A decision view: POST only, the role checked before the form is read, the answer varies with htmx."""

    def decorator(view):
        return require_POST(require(perm, message)(by_htmx(view)))

    return decorator


def reading(view):
    """A queue's page or card: GET, for every role that reads."""
    return require_GET(require(READ)(by_htmx(view)))


class Queue:
    url_name: str  # the queue's page, e.g. "candidates"
    card_url_name: str  # one card on its own page, e.g. "candidate-card"
    page_template: str  # extends curation/queue.html
    card_template: str  # one card, in the frame of partials/card_frame.html; the item is `item`
    decided_template: str  # extends curation/partials/decided.html
    filter_form: type[QueueFilterForm]
    label: str  # the list's accessible name
    empty: str  # what the list says when nothing is waiting
    card_title: str  # "Conflict" for "Conflict #12"
    back_label: str  # the card page's link back
    item_noun: str  # what a bulk selection selects, e.g. "card"
    outcome_id: str  # the attribute of a bulk outcome that names its item
    dom_prefix: str  # a card's element id is "<dom_prefix>-<pk>"
    bulk_url_name: str = ""  # the bulk form's URL, when the queue has one
    bulk_undo_url_name: str = ""  # "Undo all" after a bulk action, when the queue's decisions can be taken back
    bulk_parts: int = 1  # the numbers a selected checkbox carries: the id, then its versions
    keys: tuple[tuple[str, str], ...] = ()  # the keyboard help: (keys, what they do)
    missing: tuple[type[Exception], ...]  # a card outside the user's scopes (or gone): 404
    not_found: str
    # 409, with the card and what refused it (a forget's approval being written: try again in a moment)
    refusals: tuple[type[Exception], ...] = (StaleDecision, InvalidTransition, ForgetInProgress)
    lines_template: str = ""  # the compact list, one line an item ("": the queue has no compact list)
    cards_template: str = ""  # a page's cards at once, by card_template's renderer ("": card_template for each)

    def urls(self, prefix: str, decisions: dict) -> list:
        """The queue's URLs under `prefix`: its page, its view switch (cards or compact list), its bulk form,
        a card, and each decision view at `<pk>/<name>/`, named like the card ("conflict-card" -> "conflict-keep")."""
        item = self.card_url_name.removesuffix("-card")
        patterns = [path(prefix, self.page, name=self.url_name)]
        if self.lines_template:
            patterns.append(path(f"{prefix}view/", self.switch_view, name=f"{self.url_name}-view"))
        if self.bulk_url_name:
            patterns.append(path(f"{prefix}bulk/", self.bulk, name=self.bulk_url_name))
        if self.bulk_undo_url_name:
            patterns.append(path(f"{prefix}bulk/undo/", self.bulk_undo, name=self.bulk_undo_url_name))
        patterns.append(path(f"{prefix}<int:pk>/", self.card, name=self.card_url_name))
        patterns += [path(f"{prefix}<int:pk>/{name}/", view, name=f"{item}-{name}") for name, view in decisions.items()]
        return patterns

    @property
    def page_url(self) -> str:
        return reverse(f"curation:{self.url_name}")

    @property
    def bulk_url(self) -> str:
        return reverse(f"curation:{self.bulk_url_name}") if self.bulk_url_name else ""

    # --- what each queue reads and says -------------------------------------------------------------

    # The selectors, each given as a staticmethod (so that it is not bound to the queue):
    read_list = None  # a page: (user, filters, *, cursor) -> Page
    read_count = None  # the count: (user, filters) -> (count, capped)
    read_one = None  # one card: (user, pk) -> the item
    read_lines = None  # a page of the compact list: (user, filters, *, cursor) -> Page
    count_noun = ""  # "12 waiting": what the count counts
    decided_text = ""  # the message after a decision without htmx; formatted with item, verb and Verb
    decided_attr = ""  # where the decided item is in a decision's outcome ("": the outcome itself)

    def filters_for(self, request, params):
        """The queue's filter form for this reader over `params`."""
        return self.filter_form(params)

    def read_page(self, request, filters, cursor: str) -> Page:
        return self.read_list(request.user, filters, cursor=cursor)

    def read_card(self, request, pk, *, form=None, errors=None):
        return self.read_one(request.user, pk)

    def context(self, request) -> dict:
        return {}

    def counted(self, filters) -> str:
        return self.count_noun

    def count_note(self, request, filters, count: int, capped: bool) -> str:
        """What the count adds in words (the candidates': how many wait for someone else)."""
        return ""

    def versions(self, request) -> dict:
        """The versions a decision was made on, as its service takes them; ValidationError when missing."""
        return {}

    def bulk_decide(self, request, items, action: str) -> list:
        raise NotImplementedError

    def undo_bulk(self, request, items) -> list:
        """Take back the decisions of a bulk action (items as the bulk form selected them, with the versions
        its decisions left): one outcome per item, as bulk_decide answers."""
        raise NotImplementedError

    # --- the page and its list ----------------------------------------------------------------------

    @method_decorator(reading)
    def page(self, request):
        """The queue as the reviewer left it: without filters in the URL, the filters they last used here
        (a redirect, so that the URL says them); with filters, those, remembered for the next visit."""
        preference = selectors.queue_preference(request.user, self.url_name)
        filters = self.filter_params(request.GET)
        if not filters and "after" not in request.GET and preference.filters and not request.htmx:
            request.session[f"restored:{self.url_name}"] = True  # the page says so, once, with a way back
            return redirect(f"{self.page_url}?{preference.filters}")
        response = self.render_page(
            request,
            request.GET,
            compact=preference.compact,
            restored=request.session.pop(f"restored:{self.url_name}", False),
        )
        remembered = urlencode([(name, value) for name, value in filters if value])
        if filters and response.status_code == 200 and len(remembered) <= FILTERS_KEPT:
            services.remember_queue(request.user, self.url_name, filters=remembered)
        return response

    def filter_params(self, params) -> list[tuple[str, str]]:
        """The filter form's parameters in `params` (each "f-<field>"), as (name, value) pairs."""
        names = {f"{QueueFilterForm.prefix}-{field}" for field in self.filter_form.base_fields}
        return [(name, value) for name, values in params.lists() if name in names for value in values]

    @method_decorator(require_POST)
    @method_decorator(require(READ))
    def switch_view(self, request):
        """Cards or the compact list: remembered per reviewer, then back to the queue with its filters."""
        services.remember_queue(request.user, self.url_name, compact=request.POST.get("view") == "compact")
        return redirect(self.back_url(request))

    def render_page(self, request, params, *, status=200, bulk_errors=(), compact=False, restored=False):
        form = self.filters_for(request, params)
        filters = form.filters()
        compact = compact and bool(self.lines_template)
        context = {
            **self.context(request),
            "queue": self,
            "filter_form": form,
            "filters": filters,
            "page": None,
            "restored_filters": restored,
            "bulk_errors": bulk_errors,
            "compact": compact,
            "decided_here": self.decided_here(request),
        }
        if not form.is_valid():
            return render(
                request, self.page_template, {**context, "filter_errors": form.errors}, status=refusal_status(form)
            )
        try:
            cursor = params.get("after", "")
            page = (
                self.read_lines(request.user, filters, cursor=cursor)
                if compact
                else self.read_page(request, filters, cursor)
            )
        except BadCursor as exc:
            return render(request, self.page_template, {**context, "filter_errors": {"after": [str(exc)]}}, status=400)
        query = params.copy()
        query.pop("after", None)
        context.update(
            page=page,
            filter_query=query.urlencode(),
            count_noun=self.counted(filters),
            count_note=self.count_note(request, filters, page.count, page.count_is_capped),
        )
        # Filtering and paging with htmx swap only the list; a full load (or a boosted one) gets the page.
        if request.htmx and not request.htmx.boosted and request.htmx.target == "queue":
            return render(request, "curation/partials/queue_list.html", {**context, "oob": True}, status=status)
        return render(request, self.page_template, context, status=status)

    # --- one card -----------------------------------------------------------------------------------

    @method_decorator(reading)
    def card(self, request, pk):
        """One card on its own page: where a no-JavaScript reviewer lands after a refused decision."""
        return self.card_response(request, pk)

    def card_response(self, request, pk, *, status=200, errors=None, refused=None, form=None, open_panel="", **extra):
        try:
            item = self.read_card(request, pk, form=form, errors=errors)
        except self.missing:
            raise Http404(self.not_found) from None
        context = {
            **self.context(request),
            "queue": self,
            "item": item,
            "errors": errors or {},
            "refused": refused,
            "form": form or {},
            "open_panel": open_panel,
            **extra,
        }
        template = self.card_template if request.htmx else "curation/card_page.html"
        return render(request, template, context, status=status)

    # --- a decision ---------------------------------------------------------------------------------

    def decide(self, request, pk, verb: str, act, *, panel: str = "", form=None, answer=None, **fields):
        """Run one decision, `act(pk, actor=..., <the versions>, **fields)` (a service), and answer: the
        decided card (or `answer(outcome)`), or the card again with what went wrong (`panel` reopened with
        what was typed, `form`)."""
        try:
            outcome = act(pk, actor=request.user, **self.versions(request), **fields)
        except self.missing:
            raise Http404(self.not_found) from None
        except self.refusals as exc:
            return self.card_response(request, pk, status=409, refused=exc)
        except ValidationError as exc:
            return self.card_response(request, pk, status=422, errors=exc.message_dict, form=form, open_panel=panel)
        self.count_decided(request, PROGRESS.get(verb, 1))
        if answer:
            return answer(outcome)
        item = getattr(outcome, self.decided_attr) if self.decided_attr else outcome
        verb = self.decided_verb(item, verb)
        if not request.htmx:
            messages.success(request, self.decided_text.format(item=item, verb=verb, Verb=verb.capitalize()))
            return redirect(self.back_url(request))
        return render(
            request,
            self.decided_template,
            {
                "queue": self,
                "outcome": outcome,
                "item": item,
                "verb": verb,
                "back": self.back_url(request),
                "cannot_undo": self.cannot_undo(item),
                **self.new_count(request),
                **self.decided_context(request),
            },
        )

    # --- progress: decided in this session, left under these filters ---------------------------------

    def decided_here(self, request) -> int:
        return request.session.get(f"decided:{self.url_name}", 0)

    def count_decided(self, request, n: int) -> None:
        request.session[f"decided:{self.url_name}"] = max(0, self.decided_here(request) + n)

    def decided_verb(self, item, verb: str) -> str:
        """What a decision did, in words, once it is done (a candidates' first approval is not "approved")."""
        return verb

    def decided_context(self, request) -> dict:
        """What a queue's decided card shows besides the item (its Undo: `undo_seconds`)."""
        return {}

    def cannot_undo(self, item) -> str:
        """Why the decided card offers no Undo, said on it ("": it offers one, when the queue has Undo)."""
        return ""

    def reopened(self, request, item):
        """After an undo with htmx: the card again, open for a decision, and the queue's new count."""
        return self.card_response(request, item.pk, undone=True, **self.new_count(request))

    def new_count(self, request) -> dict:
        """The queue's count under the filters a decision posted along, for the out-of-band swap."""
        filters = self.filters_for(request, request.POST).filters()
        count, capped = self.read_count(request.user, filters)
        return {
            "page": Page([], count=count, count_is_capped=capped, filters=filters),
            "count_noun": self.counted(filters),
            "count_note": self.count_note(request, filters, count, capped),
            "oob": True,
            "with_end": True,
            "decided_here": self.decided_here(request),
            "filter_query": urlencode(self.filter_params(request.POST)),
        }

    def back_url(self, request) -> str:
        """Back to where the reviewer was: the queue (with its filters) or a card page, never an action URL."""
        back = request.POST.get("next", "")
        if back.startswith("/") and not back.startswith("//"):
            try:
                view_name = resolve(back.split("?")[0]).view_name
            except Resolver404:
                view_name = ""
            if view_name in (f"curation:{self.url_name}", f"curation:{self.card_url_name}"):
                return back
        return self.page_url

    # --- the bulk form ------------------------------------------------------------------------------

    @method_decorator(decision(REVIEW))
    def bulk(self, request):
        """Decide the selected cards at once: a plain form post, answered by a redirect with what happened."""
        action = self.bulk_action(request)
        try:
            outcomes = self.bulk_decide(request, self.selected(request), action)
        except ValidationError as exc:
            return self.bulk_invalid(request, exc)
        done = sum(o.ok for o in outcomes)
        self.count_decided(request, done)
        summary = f"{PAST[action]} {done} of {len(outcomes)}."
        if request.htmx:
            rows = [self.bulk_row(o, self.bulk_decided_item(o) if o.ok else None) for o in outcomes]
            return self.bulk_answer(request, rows, summary, verb=PAST[action].lower(), undo_all=True)
        return self.bulk_done(request, outcomes, summary)

    @method_decorator(decision(REVIEW))
    def bulk_undo(self, request):
        """Undo all: take back the decisions of the bulk action just made (its answer's form lists them);
        each undone card is open again in place, and what changed since is listed as not undone."""
        try:
            outcomes = self.undo_bulk(request, self.selected(request))
        except ValidationError as exc:
            return self.bulk_invalid(request, exc)
        done = sum(o.ok for o in outcomes)
        self.count_decided(request, -done)
        summary = f"Undone {done} of {len(outcomes)}."
        if request.htmx:
            rows = [self.bulk_row(o, self.reopened_item(request, o) if o.ok else None) for o in outcomes]
            return self.bulk_answer(request, rows, summary, verb="undone", reopened=True)
        return self.bulk_done(request, outcomes, summary, not_changed="Not undone")

    def reopened_item(self, request, outcome):
        """An undone card as the queue shows it open (None: out of the reader's sight since, a plain line)."""
        try:
            return self.read_card(request, getattr(outcome, self.outcome_id))
        except self.missing:
            return None

    def bulk_invalid(self, request, exc: ValidationError):
        if request.htmx:
            return render(
                request, "curation/partials/bulk_result.html", {"queue": self, "errors": exc.messages}, status=422
            )
        return self.bulk_refused(request, exc)

    def bulk_done(self, request, outcomes: list, summary: str, *, not_changed: str = "Not changed"):
        """Without htmx: back to the queue, with what happened to each selected card."""
        refused = [o for o in outcomes if not o.ok]
        if refused:
            summary += f" {not_changed}: " + "; ".join(f"#{getattr(o, self.outcome_id)}: {o.message}" for o in refused)
        (messages.warning if refused else messages.success)(request, summary)
        return redirect(self.back_url(request))

    def bulk_row(self, outcome, item) -> dict:
        return {"id": getattr(outcome, self.outcome_id), "ok": outcome.ok, "message": outcome.message, "item": item}

    def bulk_answer(self, request, rows: list, summary: str, *, verb: str, undo_all=False, reopened=False):
        """With htmx, a bulk decision (or its undo) answers in place: each card swapped (out of band) for
        its decided card (or, undone, the open card again), what happened to each listed, the queue's new
        count, and after a decision the "Undo all" of the queues that have one."""
        return render(
            request,
            "curation/partials/bulk_result.html",
            {
                "queue": self,
                "summary": summary,
                "rows": rows,
                "verb": verb,
                "any_refused": any(not row["ok"] for row in rows),  # not `refused`: a card reads that as its own
                "reopened": reopened,
                "undo_all": undo_all and bool(self.bulk_undo_url_name) and any(row["item"] for row in rows),
                "back": self.back_url(request),
                **self.new_count(request),
                **self.decided_context(request),
            },
        )

    def bulk_decided_item(self, outcome):
        """The decided item of a bulk outcome, for the queue's decided card (None: a plain decided stub)."""
        return None

    def bulk_action(self, request) -> str:
        return request.POST.get("action", "")

    def selected(self, request) -> list[tuple[int, ...]]:
        """The selected checkboxes, each "id[:version...]"; at least one, at most BULK_LIMIT."""
        items = []
        for value in request.POST.getlist("selected"):
            parts = value.split(":")
            if len(parts) != self.bulk_parts or not all(p.isdigit() for p in parts):
                raise ValidationError({"selected": [f"A selected {self.item_noun} is malformed; reload the queue."]})
            items.append(tuple(int(p) for p in parts))
        if not items:
            raise ValidationError(
                {"selected": [f"Select at least one {self.item_noun} (x, or the checkbox on the card)."]}
            )
        if len(items) > BULK_LIMIT:
            raise ValidationError({"selected": [f"At most {BULK_LIMIT} {self.item_noun}s at once."]})
        return items

    def bulk_refused(self, request, exc: ValidationError):
        messages.error(request, " ".join(exc.messages))
        return redirect(self.back_url(request))
