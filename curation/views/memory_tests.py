"""The leads' page of memory tests: the tests of their scopes with each one's latest run, the form that creates
one, and a test's own page (edit, retire, its history). Leads only; a test outside the lead's scopes answers
as an unknown one (404). Without JavaScript every form posts and the page comes back."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from curation.rules import config, memory_tests as rules
from curation.models import MemoryTest
from curation.rules.permissions import MANAGE_MEMORY_TESTS, require
from curation.selectors import memory_tests as reads
from curation.services.memory_tests import change_memory_test, create_memory_test, retire_memory_test

REFUSAL = "Only a lead keeps memory tests."
FIELDS = ("scope", "name", "query", "k", "budget_tokens", "expectations")


def _form(source) -> dict:
    return {name: source.get(name, "").strip() for name in FIELDS}


def _as_form(test: MemoryTest) -> dict:
    return {
        "scope": test.scope,
        "name": test.name,
        "query": test.query,
        "k": test.k,
        "budget_tokens": test.budget_tokens,
        "expectations": "\n".join(rules.expectation_line(e) for e in test.expectations),
    }


def _list_page(request, form=None, errors=None, status=200):
    tests = reads.tests_for(request.user)
    runs = reads.last_runs(tests)
    return render(
        request,
        "curation/memory_tests.html",
        {
            "tests": [(t, [rules.expectation_line(e) for e in t.expectations], runs.get(t.pk)) for t in tests],
            "form": form or {"k": config.RETRIEVE_LIMIT.value, "budget_tokens": 500},
            "errors": errors or {},
            "syntax": rules.SYNTAX_HELP,
        },
        status=status,
    )


def _test_or_404(request, test_id: int) -> MemoryTest:
    try:
        return reads.test_for(request.user, test_id)
    except MemoryTest.DoesNotExist:
        raise Http404("No such memory test in your scopes.") from None


def _detail_page(request, test, form=None, errors=None, status=200):
    return render(
        request,
        "curation/memory_test.html",
        {
            "test": test,
            "form": form or _as_form(test),
            "errors": errors or {},
            "history": reads.history_of(test),
            "syntax": rules.SYNTAX_HELP,
        },
        status=status,
    )


@require_GET
@require(MANAGE_MEMORY_TESTS, REFUSAL)
def test_list(request):
    return _list_page(request)


@require_POST
@require(MANAGE_MEMORY_TESTS, REFUSAL)
def create(request):
    form = _form(request.POST)
    try:
        test = create_memory_test(data=form, actor=request.user)
    except ValidationError as exc:
        return _list_page(request, form, exc.message_dict, status=422)
    except PermissionDenied as exc:  # a scope outside the lead's
        return _list_page(request, form, {"scope": [str(exc)]}, status=403)
    messages.success(request, f"Memory test #{test.pk} created: it runs at every publish of {test.scope}.")
    return redirect("curation:memory-tests")


@require_GET
@require(MANAGE_MEMORY_TESTS, REFUSAL)
def detail(request, test_id: int):
    return _detail_page(request, _test_or_404(request, test_id))


def _version(request) -> int:
    try:
        return int(request.POST.get("version", ""))
    except ValueError:
        return -1  # refused as stale by the service


@require_POST
@require(MANAGE_MEMORY_TESTS, REFUSAL)
def edit(request, test_id: int):
    test = _test_or_404(request, test_id)
    form = _form(request.POST)
    try:
        change_memory_test(test.pk, data=form, actor=request.user, expected_version=_version(request))
    except ValidationError as exc:
        return _detail_page(request, test, form, exc.message_dict, status=422)
    except PermissionDenied as exc:  # moved to a scope outside the lead's
        return _detail_page(request, test, form, {"scope": [str(exc)]}, status=403)
    messages.success(request, f"Memory test #{test.pk} saved.")
    return redirect("curation:memory-test", test_id=test.pk)


@require_POST
@require(MANAGE_MEMORY_TESTS, REFUSAL)
def retire(request, test_id: int):
    test = _test_or_404(request, test_id)
    try:
        retire_memory_test(
            test.pk, actor=request.user, expected_version=_version(request), reason=request.POST.get("reason", "")
        )
    except ValidationError as exc:
        return _detail_page(request, test, errors=exc.message_dict, status=422)
    messages.success(request, f"Memory test #{test.pk} retired: it no longer runs.")
    return redirect("curation:memory-tests")
