import contextvars
import uuid

from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.http import HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError

from curation.rules.storable_text import text_problem, unstorable_parameters

# Shared by every Event one request writes, so an auditor can see what one click did.
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("current_request_id", default="")


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = uuid.uuid4().hex
        token = current_request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response["X-Request-Id"] = request_id
        return response


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class UnstorableInputMiddleware:
    """A NUL character in the path, a query parameter or a posted form field is answered 422, naming the
    field, before any view reads it: PostgreSQL would refuse it mid-request with a 500 (and SQLite would
    store text that PostgreSQL cannot take back). The agent API's JSON bodies are checked where they are
    parsed (api/http.py), with the same rule."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        errors = {"path": [problem]} if (problem := text_problem(request.path)) else {}
        errors.update(unstorable_parameters(request.GET))
        if request.method == "POST" and request.content_type in FORM_TYPES and not request.path.startswith("/api/"):
            try:
                errors.update(unstorable_parameters(request.POST))
            except MultiPartParserError:
                pass  # a broken form body: the view answers it as it did before
        if not errors:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"error": "Some parameters are not valid.", "errors": errors}, status=422)
        lines = "\n".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        return HttpResponse(
            f"Some fields are not valid.\n{lines}\n", status=422, content_type="text/plain; charset=utf-8"
        )


# HTML pages under /api/, read in a browser: the console's middleware runs for them.
API_PAGES = frozenset({"/api/v1/docs"})


def is_agent_api_call(request) -> bool:
    """A call of the agent API: JSON under /api/ with a bearer token, which reads no cookie, session,
    signed-in user or message."""
    path = request.path_info
    return path.startswith("/api/") and path not in API_PAGES


class ConsoleOnly:
    """Mixed into a middleware the console needs and an agent API call does not: it is skipped for those
    calls (each is CPU on every agent read) and runs as before for every other request. For a middleware
    with only __call__'s hooks (process_request, process_response): one with process_view would need it too."""

    def __call__(self, request):
        if is_agent_api_call(request):
            return self.get_response(request)
        return super().__call__(request)


class AuthenticationMiddleware(ConsoleOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(ConsoleOnly, messages.MessageMiddleware):
    pass
